// embedding_backward_wte.wgsl — dwte[v,c] += sum over positions n with token v of
// dout[n,c]. The host buckets the positions by token once per batch
// (counting sort, stable): tok[bucket_off + v .. v+1] is the range of v in
// tok[pos_off ..]; so the work is O(B*T*C), not O(V*B*T*C). One thread per (v, c).
struct Args {
    V: u32, C: u32, wte_off: u32, bucket_off: u32,
    pos_off: u32, dout_off: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> tok: array<u32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> grads: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = a.V * a.C;
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < n; i += stride) {
        let v = i / a.C;
        let c = i % a.C;
        let p0 = tok[a.bucket_off + v];
        let p1 = tok[a.bucket_off + v + 1u];
        if (p1 == p0) { continue; }
        var s = 0.0;
        for (var p = p0; p < p1; p++) { s += dout[a.dout_off + tok[a.pos_off + p] * a.C + c]; }
        grads[a.wte_off + i] += s;
    }
}
