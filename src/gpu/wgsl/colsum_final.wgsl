// colsum_final.wgsl — stage 2 of the column sums: out[out_off + j] +=
// sum_k part[k*W + j] for j < W, chunks summed in a fixed order.
struct Args {
    W: u32, n_chunks: u32, out_off: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    if (j >= a.W) { return; }
    var s = 0.0;
    for (var k = 0u; k < a.n_chunks; k++) { s += part[k * a.W + j]; }
    out[a.out_off + j] += s;
}
