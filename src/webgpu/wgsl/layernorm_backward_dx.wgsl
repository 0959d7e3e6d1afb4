// layernorm_backward_dx.wgsl — LayerNorm backward to the input, one workgroup per row:
//   g = dy * w, xhat = (x - mean) * rstd
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (dx += ... if accum)
// dy (rows, C) at dy_off; x at x_off; w in params at w_off; stats from layernorm_forward.
struct Args {
    rows: u32, C: u32, dy_off: u32, x_off: u32,
    w_off: u32, dx_off: u32, accum: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> params: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

var<workgroup> red: array<vec2<f32>, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= a.rows) { return; }
    let C = a.C;
    let mean = stats[row];
    let rstd = stats[a.rows + row];
    let xb = a.x_off + row * C;
    let db = a.dy_off + row * C;
    var s = vec2<f32>(0.0);
    for (var c = lid; c < C; c += WG) {
        let g = dy[db + c] * params[a.w_off + c];
        let xh = (x[xb + c] - mean) * rstd;
        s += vec2<f32>(g, g * xh);
    }
    red[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (lid < k) { red[lid] += red[lid + k]; }
        workgroupBarrier();
    }
    let m1 = red[0].x / f32(C);
    let m2 = red[0].y / f32(C);
    let ob = a.dx_off + row * C;
    for (var c = lid; c < C; c += WG) {
        let g = dy[db + c] * params[a.w_off + c];
        let xh = (x[xb + c] - mean) * rstd;
        var v = rstd * (g - m1 - xh * m2);
        if (a.accum != 0u) { v += dx[ob + c]; }
        dx[ob + c] = v;
    }
}
