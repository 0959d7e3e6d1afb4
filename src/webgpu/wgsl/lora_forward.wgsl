// lora_forward.wgsl — the low-rank update of a LoRA projection (lora.c):
//   out[i, n] += scale * sum_r t[i, r] * B[r, n]     (i < rows, n < w)
// t (rows, R) = x A (the matmul before it), B read as a column block of
// width w of the adapter (R, ldb) from b_off (c_attn: the q, k or v third),
// out (rows, w) contiguous. One thread per output, r in increasing order
// (fma from 0), then one scaled add. Grid: ceil(rows*w / WG) workgroups
// folded into (x, y).
struct Args {
    n: u32, w: u32, R: u32, ldb: u32,
    t_off: u32, b_off: u32, out_off: u32, scale: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> t: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let idx = (wid.y * nwg.x + wid.x) * WG + lid;
    if (idx >= a.n) { return; }
    let i = idx / a.w;
    let col = idx % a.w;
    var acc = 0.0;
    for (var r = 0u; r < a.R; r++) { acc = fma(t[a.t_off + i * a.R + r], B[a.b_off + r * a.ldb + col], acc); }
    out[a.out_off + idx] += bitcast<f32>(a.scale) * acc;
}
