// attention_common.wgsl — what the tiled attention kernels
// (attention_forward, attention_backward_dq, attention_backward_dkdv) share,
// included by their "//!include attention_common" line (gpu_ops.c
// get_kernel): the Args block,
// bindings 0..3 (args, q, k, v), the tile constants and the q/k/v loaders.
// Prefix constants used: HS, BR, BC, VEC (PF: by the kernels that pipeline).
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, nd4: u32, nbc: u32, nk: u32, // loop bounds when DYN: nd4 = HS4, nbc = BC, nk = NK,
    nl: u32, p9: u32, o1_off: u32, o2_off: u32, // nl = NL (attention_backward_dkdv); element offsets of the
                                              // backward's outputs: dq (o1), or dk (o1) and dv (o2)
    q_off: u32, k_off: u32, v_off: u32, p15: u32, // element offsets of q, k, v (multiples of 4)
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
// PF (software pipelining) —
// a streamed tile's BC*HS4 vec4 slots e = lid + i*NT (i < NK, as the plain
// loop "e = lid; e < BC*HS4; e += NT") held in registers; NKW: the share is
// whole (NK*NT == BC*HS4), else slots e >= BC*HS4 are skipped
const NK: u32 = (BC * HS4 + NT - 1u) / NT;
const NKW: bool = NK * NT == BC * HS4;

// 4 elements (row t, d-block d4) of head hb of a (B,T,C) tensor; zeros
// outside (t >= T, d >= HS). The loads are unconditional (select evaluates
// both sides), so every element index is first clamped to the tensor's last
// element B*T*C-1 (in bounds by construction: the kernels also run with
// Dawn's robustness transform disabled); what the clamp changes (rows
// t >= T of the last batch, padding d >= HS past the end) is selected away,
// so the values are the same as unclamped reads. VEC: one vec4 (its index
// is a multiple of 4, clamped to the last vec4); else per element. The
// tensor starts at element q_off (k_off, v_off) of its buffer: the clamped
// index is offset (q, k, v may share one buffer).
fn base_of(b: u32, t: u32, hb: u32, d4: u32) -> u32 { return (b * a.T + t) * a.C + hb + 4u * d4; }
fn last_el() -> u32 { return a.B * a.T * a.C - 1u; }
// the 4 element indices i..i+3, each clamped to the last element
fn el4(i: u32) -> vec4<u32> { return min(vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(last_el())); }
fn pad_mask(t: u32, d4: u32) -> vec4<bool> {
    return (vec4<u32>(4u * d4) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(HS)) & vec4<bool>(t < a.T);
}
fn ld_q(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), q4[(a.q_off + min(i, last_el())) >> 2u], t < a.T); }
    let j = el4(i) + vec4<u32>(a.q_off);
    let x = vec4<f32>(q4[j.x >> 2u][j.x & 3u], q4[j.y >> 2u][j.y & 3u], q4[j.z >> 2u][j.z & 3u],
                      q4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
fn ld_k(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), k4[(a.k_off + min(i, last_el())) >> 2u], t < a.T); }
    let j = el4(i) + vec4<u32>(a.k_off);
    let x = vec4<f32>(k4[j.x >> 2u][j.x & 3u], k4[j.y >> 2u][j.y & 3u], k4[j.z >> 2u][j.z & 3u],
                      k4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
fn ld_v(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), v4[(a.v_off + min(i, last_el())) >> 2u], t < a.T); }
    let j = el4(i) + vec4<u32>(a.v_off);
    let x = vec4<f32>(v4[j.x >> 2u][j.x & 3u], v4[j.y >> 2u][j.y & 3u], v4[j.z >> 2u][j.z & 3u],
                      v4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
