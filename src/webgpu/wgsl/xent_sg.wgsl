// xent_sg.wgsl — xent.wgsl with subgroup reductions (subgroups tier,
// TT_WEBGPU_SUBGROUPS=1; prefix: `enable subgroups;`, WG, SG_TREE). Same
// per-element math; the row max (subgroupMax) and the row sum of exp
// (subgroupAdd) reduce per subgroup, then one partial per subgroup (slot
// lid / sg in workgroup memory) is combined in slot order by every
// invocation. The block layout of subgroups is checked once per workgroup;
// if it does not hold (or SG_TREE), the fixed trees of xent.wgsl run.
// The max is exact in any order; the sum's bits depend on the subgroup size
// (reproducible on one adapter).
// Prediction, UNMEASURED: on an H200 (sg 32, WG 64) 4 barriers per row (+2
// for the layout check) instead of 16; xent is a few % of a tiny/small step
// (V = 256), expect <= 1% per step.
struct Args {
    rows: u32, V: u32, T: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
struct Step {
    lr: f32, b1: f32, b2: f32, eps: f32,
    wd: f32, clip: f32, bc1: f32, bc2: f32,
    grad_scale: f32, loss_scale: f32, valid_rows: u32, p11: u32,
    p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<uniform> stp: Step;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> losses: array<f32>;

var<workgroup> red: array<f32, WG>;
// 1: some subgroup is not a block of lids. Cleared by lid 0 before use:
// workgroup memory is not zero-initialised under Dawn's disable_workgroup_init.
var<workgroup> sg_bad: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= a.rows) { return; }
    if (lid == 0u) { sg_bad = 0u; }
    workgroupBarrier();
    if (subgroupMin(lid) != lid - lid % sg) { sg_bad = 1u; }
    let tree = workgroupUniformLoad(&sg_bad) != 0u || SG_TREE;
    let V = a.V;
    let base = row * V;
    let n = (WG + sg - 1u) / sg;
    var mx = -3.0e38;
    for (var i = lid; i < V; i += WG) { mx = max(mx, logits[base + i]); }
    if (tree) {
        red[lid] = mx;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s >>= 1u) {
            if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
            workgroupBarrier();
        }
        mx = red[0];
    } else {
        let r = subgroupMax(mx);
        if (lid % sg == 0u) { red[lid / sg] = r; }
        workgroupBarrier();
        mx = red[0];
        for (var k = 1u; k < n; k++) { mx = max(mx, red[k]); }
    }
    workgroupBarrier();
    var se = 0.0;
    for (var i = lid; i < V; i += WG) { se += exp(logits[base + i] - mx); }
    var tot: f32;
    if (tree) {
        red[lid] = se;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s >>= 1u) {
            if (lid < s) { red[lid] += red[lid + s]; }
            workgroupBarrier();
        }
        tot = red[0];
    } else {
        let r = subgroupAdd(se);
        if (lid % sg == 0u) { red[lid / sg] = r; }
        workgroupBarrier();
        tot = red[0];
        for (var k = 1u; k < n; k++) { tot += red[k]; }
    }
    let lse = mx + log(tot);
    let b = row / a.T;
    let t = row % a.T;
    let tgt = tokens[b * (a.T + 1u) + t + 1u];
    if (lid == 0u) { losses[row] = lse - logits[base + tgt]; }
    workgroupBarrier();  // the loss read above happens before the overwrite below
    let gs = stp.grad_scale;
    for (var i = lid; i < V; i += WG) {
        let p = exp(logits[base + i] - lse);
        logits[base + i] = (p - select(0.0, 1.0, i == tgt)) * gs;
    }
}
