// matmul_common.wgsl — what the matmul products (matmul.wgsl and its
// subgroup-matrix variant matmul_sgmat.wgsl) share, included by their
// "//!include matmul_common" line (gpu_ops.c get_kernel): the Args block
// (src/webgpu/matmul.c fills it) and bindings 0, 3, 4, 5 (args, C, bias,
// R); each kernel binds its operands A and B (1, 2) in its element type.
struct Args {
    M: u32, N: u32, K: u32, lda: u32,
    ldb: u32, cstride: u32, a_off: u32, b_off: u32,
    c_off: u32, bias_off: u32, r_off: u32, flags: u32,
    kchunk: u32, am: u32, nprod: u32, bstride: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(3) var<storage, read_write> Cm: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;
