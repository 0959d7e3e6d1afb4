// matmul_colsum.wgsl — column sums of src (rows, N), stage 1 of 2 (bias gradients):
// grid (ceil(N/WG), n_chunks); part[chunk*N + n] = sum over the chunk's rows.
struct Args {
    rows: u32, N: u32, src_off: u32, chunk: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> part: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = wid.x * WG + lid;
    if (n >= a.N) { return; }
    let r0 = wid.y * a.chunk;
    let r1 = min(a.rows, r0 + a.chunk);
    var s = 0.0;
    for (var r = r0; r < r1; r++) { s += src[a.src_off + r * a.N + n]; }
    part[wid.y * a.N + n] = s;
}
