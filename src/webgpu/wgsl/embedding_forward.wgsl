// embedding_forward.wgsl — out[b,t,:] = wte[tok[b,t],:] + wpe[t,:]
// tokens: u32 (B, T+1) (inputs are [.., 0:T]); out (B, T, C).
struct Args {
    B: u32, T: u32, C: u32, wte_off: u32,
    wpe_off: u32, out_off: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = a.B * a.T * a.C;
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < n; i += stride) {
        let c = i % a.C;
        let row = i / a.C;
        let t = row % a.T;
        let b = row / a.T;
        let tok = tokens[b * (a.T + 1u) + t];
        out[a.out_off + i] = params[a.wte_off + tok * a.C + c] + params[a.wpe_off + t * a.C + c];
    }
}
