// ln_bwd_dx_sg.wgsl — ln_bwd_dx.wgsl with subgroup reductions (subgroups
// tier, TT_WEBGPU_SUBGROUPS=1; prefix: `enable subgroups;`, WG, SG_TREE).
// Same per-element math; the two row sums (g, g*xhat) are one vec2 reduced
// as in ln_fwd_sg.wgsl: subgroupAdd per subgroup, one partial per subgroup in
// workgroup memory (slot lid / sg), the slots added in order by every
// invocation. The block layout of subgroups is checked once per workgroup;
// if it does not hold (or SG_TREE), the fixed tree of ln_bwd_dx.wgsl runs.
// Reproducible on one adapter; bits depend on the subgroup size.
// Prediction, UNMEASURED: on an H200 (sg 32) 2 barriers per row (+2 for the
// layout check) instead of 6..9; ~0-1% of a small/medium step, ~0 at gpt2.
struct Args {
    rows: u32, C: u32, dy_off: u32, x_off: u32,
    w_off: u32, dx_off: u32, accum: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> params: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

var<workgroup> red: array<vec2<f32>, WG>;
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
    let C = a.C;
    let mean = stats[row];
    let rstd = stats[a.rows + row];
    let xb = a.x_off + row * C;
    let db = a.dy_off + row * C;
    var s = vec2<f32>(0.0);
    for (var c = lid; c < C; c += WG) {
        let g = dy[db + c] * params[a.w_off + c];
        let xh = (x[xb + c] - mean) * rstd;
        s += vec2<f32>(g, g * xh);
    }
    var tot: vec2<f32>;
    if (tree) {
        red[lid] = s;
        workgroupBarrier();
        for (var k = WG / 2u; k > 0u; k >>= 1u) {
            if (lid < k) { red[lid] += red[lid + k]; }
            workgroupBarrier();
        }
        tot = red[0];
    } else {
        let r = subgroupAdd(s);
        if (lid % sg == 0u) { red[lid / sg] = r; }
        workgroupBarrier();
        let n = (WG + sg - 1u) / sg;
        tot = red[0];
        for (var k = 1u; k < n; k++) { tot += red[k]; }
    }
    let m1 = tot.x / f32(C);
    let m2 = tot.y / f32(C);
    let ob = a.dx_off + row * C;
    for (var c = lid; c < C; c += WG) {
        let g = dy[db + c] * params[a.w_off + c];
        let xh = (x[xb + c] - mean) * rstd;
        var v = rstd * (g - m1 - xh * m2);
        if (a.accum != 0u) { v += dx[ob + c]; }
        dx[ob + c] = v;
    }
}
