// ln_fwd_sg.wgsl — ln_fwd.wgsl with subgroup reductions (the subgroups tier:
// env TT_WEBGPU_SUBGROUPS=1 on an adapter with the `subgroups` feature; the
// C prefix starts with `enable subgroups;` and sets WG and SG_TREE). Same
// math per element as ln_fwd.wgsl; only the two row sums differ:
//   1. each subgroup adds its lanes' partials with subgroupAdd;
//   2. one partial per subgroup goes to workgroup memory, slot lid / sg;
//   3. every invocation adds the slots 0, 1, ... in order (the same bits in
//      every invocation): 2 barriers per sum instead of 2 + log2(WG).
// Any subgroup size works (@builtin(subgroup_size), read at run time). The
// slot rule assumes subgroup k holds invocations [k*sg, (k+1)*sg) (the last
// one possibly partial); every invocation checks it once (subgroupMin of
// local_invocation_index) and if any fails, the workgroup takes the fixed
// tree of ln_fwd.wgsl instead (SG_TREE = true forces that path: a test hook).
// Reproducible run to run on one adapter; the bits depend on the subgroup
// size, so they differ between adapters (the fp32 tree is the reference).
// Prediction, UNMEASURED: on an H200 (sg 32, WG 32..256) a row costs 6
// barriers (2 for the layout check, 2 per sum) instead of 14..20, and the
// slot sum reads 1..8 partials; LayerNorm is a few % of a small/medium step
// (profile: 3-4% on lavapipe for tiny), so expect 0-1% per step there and ~0
// at gpt2, where the matmuls dominate.
struct Args {
    rows: u32, C: u32, x_off: u32, w_off: u32,
    b_off: u32, out_off: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;

var<workgroup> red: array<f32, WG>;
// 1: some subgroup is not a block of lids. Cleared by lid 0 before use:
// workgroup memory is not zero-initialised under Dawn's disable_workgroup_init.
var<workgroup> sg_bad: u32;

fn wg_sum(v: f32, lid: u32, sg: u32, tree: bool) -> f32 {
    if (tree) {
        red[lid] = v;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s >>= 1u) {
            if (lid < s) { red[lid] += red[lid + s]; }
            workgroupBarrier();
        }
        let r = red[0];
        workgroupBarrier();
        return r;
    }
    let r = subgroupAdd(v);
    if (lid % sg == 0u) { red[lid / sg] = r; }
    workgroupBarrier();
    let n = (WG + sg - 1u) / sg;
    var t = red[0];
    for (var k = 1u; k < n; k++) { t += red[k]; }
    workgroupBarrier();
    return t;
}

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
    let xb = a.x_off + row * C;
    var s = 0.0;
    for (var c = lid; c < C; c += WG) { s += x[xb + c]; }
    let mean = wg_sum(s, lid, sg, tree) / f32(C);
    var s2 = 0.0;
    for (var c = lid; c < C; c += WG) { let d = x[xb + c] - mean; s2 += d * d; }
    let rstd = 1.0 / sqrt(wg_sum(s2, lid, sg, tree) / f32(C) + 1e-5);
    let ob = a.out_off + row * C;
    for (var c = lid; c < C; c += WG) {
        out[ob + c] = (x[xb + c] - mean) * rstd * params[a.w_off + c] + params[a.b_off + c];
    }
    if (lid == 0u) {
        stats[row] = mean;
        stats[a.rows + row] = rstd;
    }
}
