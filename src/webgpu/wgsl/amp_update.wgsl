// amp_update.wgsl — the loss scaler's update after a step (TT_PRECISION_F16;
// backend.h tt_loss_scaler), one invocation, after adamw_update wrote the
// step's unscaled grad norm to stats[1]:
//   norm not finite (an overflow; adamw_update skipped the step):
//       scale = scale / 2, clean = 0, skipped = skipped + 1
//   else clean = clean + 1; clean == INTERVAL: scale = scale * 2, clean = 0
// state ls = [scale, clean steps, skipped steps, 0] (skipped: the steps
// AdamW never took, for its bias corrections); stats[2..4] = the new state,
// read back with the step's loss and norm.
struct Args {
    interval: u32, p1: u32, p2: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read_write> ls: array<f32>;
@group(0) @binding(2) var<storage, read_write> stats: array<f32>;

@compute @workgroup_size(1)
fn main() {
    var scale = ls[0];
    var clean = ls[1];
    if ((bitcast<u32>(stats[1]) & 0x7f800000u) == 0x7f800000u) {
        scale = scale * 0.5;
        clean = 0.0;
        ls[2] = ls[2] + 1.0;
    } else {
        clean = clean + 1.0;
        if (clean >= f32(a.interval)) {
            scale = scale * 2.0;
            clean = 0.0;
        }
    }
    ls[0] = scale;
    ls[1] = clean;
    stats[2] = scale;
    stats[3] = clean;
    stats[4] = ls[2];
}
