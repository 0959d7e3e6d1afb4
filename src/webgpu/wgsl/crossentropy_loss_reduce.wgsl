// crossentropy_loss_reduce.wgsl — one workgroup: stats[0] += loss_scale * sum of the
// first valid_rows row losses (fixed summation order: deterministic).
struct Args {
    p0: u32, p1: u32, p2: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
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
@group(0) @binding(2) var<storage, read> losses: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;

var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i < stp.valid_rows; i += WG) { s += losses[i]; }
    red[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (lid < k) { red[lid] += red[lid + k]; }
        workgroupBarrier();
    }
    if (lid == 0u) { stats[0] = stats[0] + red[0] * stp.loss_scale; }
}
