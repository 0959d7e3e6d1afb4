// matmul_colsum_final.wgsl — stage 2 of the column sums (bias / LayerNorm grads) and
// the split-K reduction of matmul: out[out_off + j] += sum_k part[k*W + j]
// for j < W; for a batch of products (matmul.wgsl's nprod) output j of
// product p = j / PW goes to out_off + p*ostride + j % PW (PW = W: one
// product). A workgroup covers CW = WG / LANES columns; lane l of a column
// sums chunks l, l + LANES, l + 2 LANES, ... (two independent accumulators,
// so loads overlap), then lane 0 adds the LANES lane sums in lane order. The
// order is a fixed function of (W, n_chunks, LANES): deterministic.
// Prefix: WG, LANES (power of 2 dividing WG), E (the element type: f32, or
// vec4<f32> when W, PW, ostride and the offset are multiples of 4, so a
// thread sums 4 neighbouring columns per load with the same adds in the
// same order: the same bits). W, PW, ostride and out_off count E elements. Grid: ceil(W / CW)
// workgroups, folded into (x, y).
struct Args {
    W: u32, n_chunks: u32, out_off: u32, PW: u32,
    ostride: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> part: array<E>;
@group(0) @binding(2) var<storage, read_write> out: array<E>;

const CW: u32 = WG / LANES;
var<workgroup> red: array<E, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let col = lid % CW;
    let lane = lid / CW;
    let j = (wid.y * nwg.x + wid.x) * CW + col;
    var s0 = E(0.0);
    var s1 = E(0.0);
    if (j < a.W) {
        var k = lane;
        for (; k + LANES < a.n_chunks; k += 2u * LANES) {
            s0 += part[k * a.W + j];
            s1 += part[(k + LANES) * a.W + j];
        }
        if (k < a.n_chunks) { s0 += part[k * a.W + j]; }
    }
    let oi = a.out_off + (j / a.PW) * a.ostride + j % a.PW;
    if (LANES == 1u) {
        if (j < a.W) { out[oi] += s0 + s1; }
        return;
    }
    red[lid] = s0 + s1;
    workgroupBarrier();
    if (lane == 0u && j < a.W) {
        var s = red[col];
        for (var l = 1u; l < LANES; l++) { s += red[l * CW + col]; }
        out[oi] += s;
    }
}
