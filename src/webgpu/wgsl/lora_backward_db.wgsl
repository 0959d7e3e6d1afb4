// lora_backward_db.wgsl — the adapter B's gradient of a LoRA projection (lora.c):
//   dB[r, n] += scale * prod[r, n]     (r < R, n < w)
// prod (R, w) = t^T dout (the matmul before it, contiguous), dB a column
// block of width w of the gradient (R, ldb) from db_off (c_attn: the q, k or
// v third). Grid: ceil(R*w / WG) workgroups folded into (x, y).
struct Args {
    n: u32, w: u32, ldb: u32, src_off: u32,
    db_off: u32, scale: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> prod: array<f32>;
@group(0) @binding(2) var<storage, read_write> dB: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let idx = (wid.y * nwg.x + wid.x) * WG + lid;
    if (idx >= a.n) { return; }
    let r = idx / a.w;
    let col = idx % a.w;
    dB[a.db_off + r * a.ldb + col] += bitcast<f32>(a.scale) * prod[a.src_off + idx];
}
