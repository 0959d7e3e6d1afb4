// dropout.wgsl — the dropout op on a (B,T,C) tensor (planned by
// src/webgpu/dropout.c), element i of key slot a.slot (dropout_common):
//   ADD:   out[i] = src[i] + m_i * out[i]   (a residual branch, in place)
//   else:  out[i] = m_i * src[i]            (embeddings; every backward)
// m_i = scale where kept, 0 where dropped. Grid-stride, one thread per element.
// Prefix: WG, ADD, DROP_BIND.
struct Args {
    n: u32, out_off: u32, src_off: u32, slot: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let key = tt_drop_key(a.slot);
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < a.n; i += stride) {
        let m = tt_drop_mul(key, i);
        if (ADD) {
            out[a.out_off + i] = src[a.src_off + i] + m * out[a.out_off + i];
        } else {
            out[a.out_off + i] = m * src[a.src_off + i];
        }
    }
}
