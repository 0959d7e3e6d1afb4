// matmul_splitk_reduce.wgsl — the second site of a split-K matmul whose result has
// an epilogue (bias, residual R, overwrite): for i < M*N (C contiguous),
//   v = sum_z part[z*M*N + i] (z = 0, 1, ... in order)
//   v += bias[n] (flags 2); v += R[r_off + i] (flags 4); v += C (flags 1)
//   C[c_off + i] = v
// the epilogue of matmul.wgsl in the same order. A batch of products
// (matmul.wgsl's nprod): W = nprod*M*N outputs, contiguous per product in
// the scratch; output i of product p = i / PW (PW = M*N) adds the bias at
// bias_off + p*bstride and R at r_off + p*cstride + i % PW, and goes to C at
// c_off + p*cstride + i % PW (PW = W, bstride = 0 for one product).
// Prefix: WG, E (the element type: f32, or vec4<f32> when N, the product
// stride and every offset are multiples of 4, so a thread moves 4
// neighbouring outputs per load; a vec4 add is 4 f32 adds, so both give the
// same bits). Sizes, strides and offsets in Args count E elements.
// Grid: ceil(W / WG) workgroups folded into (x, y).
struct Args {
    W: u32, n_chunks: u32, c_off: u32, N: u32,
    bias_off: u32, r_off: u32, flags: u32, PW: u32,
    bstride: u32, cstride: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> part: array<E>;
@group(0) @binding(2) var<storage, read> bias: array<E>;
@group(0) @binding(3) var<storage, read> R: array<E>;
@group(0) @binding(4) var<storage, read_write> Cm: array<E>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i >= a.W) { return; }
    var v = E(0.0);
    for (var z = 0u; z < a.n_chunks; z++) { v += part[z * a.W + i]; }
    let p = i / a.PW;
    let o = p * a.cstride + i % a.PW; // i for one product or contiguous outputs
    if ((a.flags & 2u) != 0u) { v += bias[a.bias_off + p * a.bstride + i % a.N]; }
    if ((a.flags & 4u) != 0u) { v += R[a.r_off + o]; }
    let ci = a.c_off + o;
    if ((a.flags & 1u) != 0u) { v += Cm[ci]; }
    Cm[ci] = v;
}
