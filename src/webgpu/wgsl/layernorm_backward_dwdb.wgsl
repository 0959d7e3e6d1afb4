// layernorm_backward_dwdb.wgsl — LayerNorm weight/bias gradient, stage 1 of 2: column
// partial sums over a chunk of rows. Grid (ceil(C/WG), n_chunks):
//   part[chunk*2C + c]     = sum_{rows in chunk} dy * xhat
//   part[chunk*2C + C + c] = sum_{rows in chunk} dy
// Stage 2 is matmul_colsum_final (adds the chunk sums into the w and b grads, which
// are adjacent in the parameter layout).
struct Args {
    rows: u32, C: u32, dy_off: u32, x_off: u32,
    chunk: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c = wid.x * WG + lid;
    let C = a.C;
    if (c >= C) { return; }
    let r0 = wid.y * a.chunk;
    let r1 = min(a.rows, r0 + a.chunk);
    var sw = 0.0;
    var sb = 0.0;
    for (var r = r0; r < r1; r++) {
        let d = dy[a.dy_off + r * C + c];
        let xh = (x[a.x_off + r * C + c] - stats[r]) * stats[a.rows + r];
        sw += d * xh;
        sb += d;
    }
    part[wid.y * 2u * C + c] = sw;
    part[wid.y * 2u * C + C + c] = sb;
}
