// embedding_backward_wpe.wgsl — dwpe[t,c] += sum_b dout[b,t,c]; one thread per (t, c).
struct Args {
    B: u32, T: u32, C: u32, wpe_off: u32,
    dout_off: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> dout: array<f32>;
@group(0) @binding(2) var<storage, read_write> grads: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = a.T * a.C;
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < n; i += stride) {
        var s = 0.0;
        for (var b = 0u; b < a.B; b++) { s += dout[a.dout_off + b * n + i]; }
        grads[a.wpe_off + i] += s;
    }
}
