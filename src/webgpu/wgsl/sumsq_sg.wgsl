// sumsq_sg.wgsl — sumsq.wgsl with a subgroup reduction (subgroups tier,
// TT_WEBGPU_SUBGROUPS=1; prefix: `enable subgroups;`, WG, SG_TREE). Lane l
// still adds elements l, l+WG, ... of its part with fma in order; the 256
// lane sums then reduce by subgroupAdd per subgroup and the per-subgroup
// partials (slot lid / sg) are added in slot order. Parts never cross a
// chunk, so the norm still does not depend on the chunking; its bits depend
// on the subgroup size (reproducible on one adapter). Subgroup layout check
// and fallback tree as in ln_fwd_sg.wgsl.
// Prediction, UNMEASURED: on an H200 (sg 32) 2 barriers per part (+2 for the
// layout check) instead of 9, one dispatch per step: ~0 of a step (a few µs
// at most).
struct Args {
    part0: u32, p1: u32, p2: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> desc: array<u32>;
@group(0) @binding(2) var<storage, read> grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;

var<workgroup> red: array<f32, WG>;
// 1: some subgroup is not a block of lids. Cleared by lid 0 before use:
// workgroup memory is not zero-initialised under Dawn's disable_workgroup_init.
var<workgroup> sg_bad: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_size) sg: u32) {
    if (lid == 0u) { sg_bad = 0u; }
    workgroupBarrier();
    if (subgroupMin(lid) != lid - lid % sg) { sg_bad = 1u; }
    let tree = workgroupUniformLoad(&sg_bad) != 0u || SG_TREE;
    let p = a.part0 + wid.x;
    let i0 = desc[2u * p];
    let i1 = desc[2u * p + 1u];
    var s = 0.0;
    for (var i = i0 + lid; i < i1; i += WG) { let g = grads[i]; s = fma(g, g, s); }
    var tot: f32;
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
    if (lid == 0u) { part[p] = tot; }
}
