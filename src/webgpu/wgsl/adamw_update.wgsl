// adamw_update.wgsl — global grad norm (stage 2), clipping and AdamW over the n
// parameters of one chunk of the parameter storage (one dispatch per chunk;
// one chunk unless the storage is split, backend.c). Each workgroup
// re-sums ALL n_part partial sums of adamw_sumsq (every chunk's) in the same fixed
// order, so every workgroup of every chunk agrees on the norm, then updates
// its range [w*per_wg, (w+1)*per_wg) of the chunk (buffer position base + i):
//   norm = sqrt(sum g^2); scale = clip/(norm+1e-6) if clip > 0 && norm > clip else 1
//   g *= scale; if decay(i): p -= lr*wd*p
//   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m/bc1) / (sqrt(v/bc2) + eps)
// decay(i) = bit i of the chunk's mask (1 for 2-D tensors). stats[1] = norm
// (written by the site with write_norm = 1).
// Loss scaler (AMP_BIND, "//!amp " lines): the grads hold ls[0] times the
// gradient; norm = sqrt(sum g^2) / ls[0], and every g is multiplied by
// scale / ls[0]; a norm that is not finite (an overflow) changes nothing:
// the step is skipped (amp_update.wgsl then halves the scale and counts it
// in ls[2]). As in PyTorch, where a skipped step never reaches the
// optimizer, the bias corrections are those of the steps applied: after
// skipped steps, bc = 1 - b^(t - ls[2]) (f32 pow on the device; the host's
// bc1, bc2 for step t otherwise).
struct Args {
    n: u32, per_wg: u32, n_part: u32, base: u32,
    write_norm: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
struct Step {
    lr: f32, b1: f32, b2: f32, eps: f32,
    wd: f32, clip: f32, bc1: f32, bc2: f32,
    grad_scale: f32, loss_scale: f32, valid_rows: u32, t: u32,
    p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<uniform> stp: Step;
@group(0) @binding(2) var<storage, read> part: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<u32>;
@group(0) @binding(4) var<storage, read_write> params: array<f32>;
@group(0) @binding(5) var<storage, read> grads: array<f32>;
@group(0) @binding(6) var<storage, read_write> mom: array<f32>;
@group(0) @binding(7) var<storage, read_write> vel: array<f32>;
@group(0) @binding(8) var<storage, read_write> stats: array<f32>;
//!amp @group(0) @binding(AMP_BIND) var<storage, read> ls: array<f32>;

var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i < a.n_part; i += WG) { s += part[i]; }
    red[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (lid < k) { red[lid] += red[lid + k]; }
        workgroupBarrier();
    }
    var norm = sqrt(red[0]);
//!amp let inv = 1.0 / ls[0];
//!amp norm = norm * inv;
    var scale = 1.0;
    if (stp.clip > 0.0 && norm > stp.clip) { scale = stp.clip / (norm + 1e-6); }
    if (a.write_norm != 0u && wid.x == 0u && lid == 0u) { stats[1] = norm; }
//!amp if ((bitcast<u32>(norm) & 0x7f800000u) == 0x7f800000u) { return; }
//!amp scale = scale * inv;
    let lr = stp.lr;
    let b1 = stp.b1;
    let b2 = stp.b2;
    var bc1 = stp.bc1;
    var bc2 = stp.bc2;
//!amp if (ls[2] > 0.0) { let te = f32(stp.t) - ls[2]; bc1 = 1.0 - pow(b1, te); bc2 = 1.0 - pow(b2, te); }
    let i0 = wid.x * a.per_wg;
    let i1 = min(a.n, i0 + a.per_wg);
    for (var i = i0 + lid; i < i1; i += WG) {
        let j = a.base + i;
        let g = grads[j] * scale;
        var p = params[j];
        if (((mask[i >> 5u] >> (i & 31u)) & 1u) != 0u) { p -= lr * stp.wd * p; }
        let m = b1 * mom[j] + (1.0 - b1) * g;
        let v = b2 * vel[j] + (1.0 - b2) * g * g;
        mom[j] = m;
        vel[j] = v;
        p -= lr * (m / bc1) / (sqrt(v / bc2) + stp.eps);
        params[j] = p;
    }
}
