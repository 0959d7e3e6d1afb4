// gelu_tanh_backward.wgsl — d = d * gelu_tanh'(inp) in place (GPT-2's "gelu_new";
// d holds dL/dgelu on entry, dL/dinp on exit), n elements:
//   gelu_tanh'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2),
//   t = tanh(sqrt(2/pi) (x + 0.044715 x^3)) as in gelu_tanh_forward.wgsl.
struct Args {
    n: u32, in_off: u32, d_off: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> inp: array<f32>;
@group(0) @binding(2) var<storage, read_write> d: array<f32>;

fn tt_tanh_stable(u: f32) -> f32 {
    let e = exp(-2.0 * abs(u));
    let t = (1.0 - e) / (1.0 + e);
    return select(t, -t, u < 0.0);
}

fn tt_gelu_tanh_grad(x: f32) -> f32 {
    let k = 0.79788456080286536;
    let x2 = x * x;
    let t = tt_tanh_stable(k * (x + 0.044715 * x2 * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 0.134145 * x2);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < a.n; i += stride) {
        d[a.d_off + i] = d[a.d_off + i] * tt_gelu_tanh_grad(inp[a.in_off + i]);
    }
}
