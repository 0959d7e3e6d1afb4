// attn_m_common.wgsl — what the attn_m* kernels (attn_m_fwd, attn_m_bwd_dq,
// attn_m_bwd_dkdv, attn_m2_bwd_dkdv) share, included by their
// "//!include attn_m_common" line (gpu_ops.c get_kernel): the Args block,
// bindings 0..3 (args, q, k, v), the tile constants and the q/k/v loaders.
// Prefix constants used: HS, BR, BC, VEC.
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, nd4: u32, nbc: u32, p7: u32, // nd4 = HS4, nbc = BC (loop bounds when DYN)
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v4: array<vec4<f32>>;

const HS4: u32 = (HS + 3u) / 4u;
const KS4: u32 = HS4 | 1u;          // row stride (vec4), odd
const BR4: u32 = BR / 4u;
const TX: u32 = BC / 4u;
const TY: u32 = BR4;
const NT: u32 = TX * TY;
const PS4: u32 = BR4 | 1u;          // Pt row stride (vec4), odd

// 4 elements (row t, d-block d4) of head hb of a (B,T,C) tensor; zeros
// outside (t >= T, d >= HS). Per element (VEC false): unconditional loads
// (robust access keeps the rare read past the buffer's end in bounds), the
// padding selected away.
fn base_of(b: u32, t: u32, hb: u32, d4: u32) -> u32 { return (b * a.T + t) * a.C + hb + 4u * d4; }
fn pad_mask(t: u32, d4: u32) -> vec4<bool> {
    return (vec4<u32>(4u * d4) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(HS)) & vec4<bool>(t < a.T);
}
fn ld_q(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), q4[i >> 2u], t < a.T); }
    let x = vec4<f32>(q4[i >> 2u][i & 3u], q4[(i + 1u) >> 2u][(i + 1u) & 3u], q4[(i + 2u) >> 2u][(i + 2u) & 3u],
                      q4[(i + 3u) >> 2u][(i + 3u) & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
fn ld_k(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), k4[i >> 2u], t < a.T); }
    let x = vec4<f32>(k4[i >> 2u][i & 3u], k4[(i + 1u) >> 2u][(i + 1u) & 3u], k4[(i + 2u) >> 2u][(i + 2u) & 3u],
                      k4[(i + 3u) >> 2u][(i + 3u) & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
fn ld_v(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), v4[i >> 2u], t < a.T); }
    let x = vec4<f32>(v4[i >> 2u][i & 3u], v4[(i + 1u) >> 2u][(i + 1u) & 3u], v4[(i + 2u) >> 2u][(i + 2u) & 3u],
                      v4[(i + 3u) >> 2u][(i + 3u) & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
