// crossentropy.wgsl — fused softmax + cross-entropy, one workgroup per row of
// logits; logits row r is the model's row g = row0 + r = b*T + t (row0 > 0: a
// chunk of the rows, the head in chunks):
//   losses[g] = logsumexp(logits[r]) - logits[r, target]
//   logits[r] <- (softmax(logits[r]) - onehot(target)) * grad_scale
// target = tokens[b*(T+1) + t + 1]; grad_scale (per step) = 1/(B*T*n_micro),
// times the loss scale ls[0] under the loss scaler (AMP_BIND: "//!amp " lines).
// Rows are ld >= V floats apart; columns [V, ld) (the head's internal
// padding) are ignored and their gradient written as 0.
struct Args {
    rows: u32, V: u32, T: u32, row0: u32,
    ld: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
struct Step {
    lr: f32, b1: f32, b2: f32, eps: f32,
    wd: f32, clip: f32, bc1: f32, bc2: f32,
    grad_scale: f32, loss_scale: f32, valid_rows: u32, p11: u32,
    p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<uniform> stp: Step;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> losses: array<f32>;
//!amp @group(0) @binding(AMP_BIND) var<storage, read> ls: array<f32>;

var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= a.rows) { return; }
    let V = a.V;
    let base = row * a.ld;
    var mx = -3.0e38;
    for (var i = lid; i < V; i += WG) { mx = max(mx, logits[base + i]); }
    red[lid] = mx;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
        workgroupBarrier();
    }
    mx = red[0];
    workgroupBarrier();
    var se = 0.0;
    for (var i = lid; i < V; i += WG) { se += exp(logits[base + i] - mx); }
    red[lid] = se;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) { red[lid] += red[lid + s]; }
        workgroupBarrier();
    }
    let lse = mx + log(red[0]);
    let g = a.row0 + row;
    let b = g / a.T;
    let t = g % a.T;
    let tgt = tokens[b * (a.T + 1u) + t + 1u];
    if (lid == 0u) { losses[g] = lse - logits[base + tgt]; }
    workgroupBarrier();  // the loss read above happens before the overwrite below
    var gs = stp.grad_scale;
//!amp gs = gs * ls[0];
    for (var i = lid; i < V; i += WG) {
        let p = exp(logits[base + i] - lse);
        logits[base + i] = (p - select(0.0, 1.0, i == tgt)) * gs;
    }
    for (var i = V + lid; i < a.ld; i += WG) { logits[base + i] = 0.0; }
}
