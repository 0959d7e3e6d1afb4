// dropout_common.wgsl — the dropout masks of src/rng.h in WGSL, appended by
// gpu_ops.c to the dropout variant of a kernel (its prefix declares
// DROP_BIND, the binding of the keys buffer; its "//!drop " lines become
// code). keys: u32 [threshold, scale (f32 bits), 0, 0, then k0, k1 of each
// slot] (tt_gops_set_drop). Element i of a slot is kept iff
// (bits(key, i) >> 8) >= threshold, and kept values are multiplied by
// scale: the same arithmetic as tt_dropout_bits / tt_dropout_keep (u32
// multiplication wraps in WGSL as in C), so every backend drops the same
// elements.
@group(0) @binding(DROP_BIND) var<storage, read> tt_drop_keys: array<u32>;

fn tt_dropout_mix(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u; x *= 0x7feb352du; x ^= x >> 15u; x *= 0x846ca68bu; x ^= x >> 16u;
    return x;
}
fn tt_dropout_bits(k: vec2<u32>, i: u32) -> u32 { return tt_dropout_mix(tt_dropout_mix(i ^ k.x) ^ k.y); }
// the key of a slot
fn tt_drop_key(slot: u32) -> vec2<u32> { return vec2<u32>(tt_drop_keys[4u + 2u * slot], tt_drop_keys[5u + 2u * slot]); }
// the factor of element i: scale where kept, 0 where dropped
fn tt_drop_mul(k: vec2<u32>, i: u32) -> f32 {
    return select(0.0, bitcast<f32>(tt_drop_keys[1]), (tt_dropout_bits(k, i) >> 8u) >= tt_drop_keys[0]);
}
fn tt_drop_mul4(k: vec2<u32>, i: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(tt_drop_mul(k, i.x), tt_drop_mul(k, i.y), tt_drop_mul(k, i.z), tt_drop_mul(k, i.w));
}
