// gelu_backward.wgsl — d = d * gelu'(inp) in place (d holds dL/dgelu on entry,
// dL/dinp on exit), n elements.
struct Args {
    n: u32, in_off: u32, d_off: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> inp: array<f32>;
@group(0) @binding(2) var<storage, read_write> d: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < a.n; i += stride) {
        d[a.d_off + i] = d[a.d_off + i] * tt_gelu_grad(inp[a.in_off + i]);
    }
}
