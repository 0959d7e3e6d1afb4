// lora_backward_dt.wgsl — the gradient at t = x A of a LoRA projection (lora.c):
//   dt[i, r] = scale * sum_j sum_n dout_j[i, n] * B[r, j*w + n]
// over the n_out (1 or 3: c_attn's q, k, v) output gradients dout_j (rows, w)
// and the adapter B (R, ldb) from b_off. One thread per (i, r): j, then n in
// increasing order (fma from 0), then one scaled store (dt is overwritten).
// Unused dout bindings repeat d0 (read-only). Grid: ceil(rows*R / WG)
// workgroups folded into (x, y).
struct Args {
    n: u32, w: u32, R: u32, ldb: u32,
    n_out: u32, b_off: u32, dt_off: u32, scale: u32,
    o0: u32, o1: u32, o2: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> d0: array<f32>;
@group(0) @binding(2) var<storage, read> d1: array<f32>;
@group(0) @binding(3) var<storage, read> d2: array<f32>;
@group(0) @binding(4) var<storage, read> B: array<f32>;
@group(0) @binding(5) var<storage, read_write> dt: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let idx = (wid.y * nwg.x + wid.x) * WG + lid;
    if (idx >= a.n) { return; }
    let i = idx / a.R;
    let r = idx % a.R;
    let brow = a.b_off + r * a.ldb;
    var acc = 0.0;
    for (var c = 0u; c < a.w; c++) { acc = fma(d0[a.o0 + i * a.w + c], B[brow + c], acc); }
    if (a.n_out > 1u) {
        for (var c = 0u; c < a.w; c++) { acc = fma(d1[a.o1 + i * a.w + c], B[brow + a.w + c], acc); }
        for (var c = 0u; c < a.w; c++) { acc = fma(d2[a.o2 + i * a.w + c], B[brow + 2u * a.w + c], acc); }
    }
    dt[a.dt_off + idx] = bitcast<f32>(a.scale) * acc;
}
