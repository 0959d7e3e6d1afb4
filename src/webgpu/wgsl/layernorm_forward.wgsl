// layernorm_forward.wgsl — LayerNorm forward, one workgroup (WG threads) per row:
//   out = (x - mean) * rstd * w + b,  rstd = 1/sqrt(var + LN_EPS) (biased var;
//   LN_EPS: a constant of the C prefix, the model's epsilon)
//   stats[row] = mean, stats[rows + row] = rstd (kept for the backward).
// x (rows, C) at x_off; w, b in params at w_off, b_off; out (rows, C) at out_off.
struct Args {
    rows: u32, C: u32, x_off: u32, w_off: u32,
    b_off: u32, out_off: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;

var<workgroup> red: array<f32, WG>;

fn wg_sum(v: f32, lid: u32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) { red[lid] += red[lid + s]; }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= a.rows) { return; }
    let C = a.C;
    let xb = a.x_off + row * C;
    var s = 0.0;
    for (var c = lid; c < C; c += WG) { s += x[xb + c]; }
    let mean = wg_sum(s, lid) / f32(C);
    var s2 = 0.0;
    for (var c = lid; c < C; c += WG) { let d = x[xb + c] - mean; s2 += d * d; }
    let rstd = 1.0 / sqrt(wg_sum(s2, lid) / f32(C) + LN_EPS);
    let ob = a.out_off + row * C;
    for (var c = lid; c < C; c += WG) {
        out[ob + c] = (x[xb + c] - mean) * rstd * params[a.w_off + c] + params[a.b_off + c];
    }
    if (lid == 0u) {
        stats[row] = mean;
        stats[a.rows + row] = rstd;
    }
}
