// attention_backward_d.wgsl — causal attention backward, D = rowsum(dY o Y)
// for the dS-storing backward (planned by src/webgpu/attention.c: this,
// then attention_backward_dkdv storing dS, then attention_backward_dq_ds).
// One thread per row (b, h, i), i fastest; D_i = dy_i . y_i as one fma
// chain over d in order, padding lanes (d >= HS) included as zeros: the
// same chain as attention_backward_dq's prologue, so the same bits.
// Written to stats[BNT + (b*NH + h)*T + i] (stats = [lse | D]).
// Grid: tt_gops_grid1 workgroups of WG (2-D fold), rows >= B*NH*T return.
// Prefix: HS, VEC, WG. Bounds: every element index of y, dy clamped to the
// last element (what the clamp changes is selected away), stats index
// < 2 BNT.
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> y4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dy4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;

const HS4: u32 = (HS + 3u) / 4u;

fn last_el() -> u32 { return a.B * a.T * a.C - 1u; }
fn el4(i: u32) -> vec4<u32> { return min(vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(last_el())); }
fn pad_mask(d4: u32) -> vec4<bool> { return vec4<u32>(4u * d4) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(HS); }
// 4 elements of y (dy) at element index i = row start + 4 d4
fn ld_y(i: u32, d4: u32) -> vec4<f32> {
    if (VEC) { return y4[min(i, last_el()) >> 2u]; }
    let j = el4(i);
    let x = vec4<f32>(y4[j.x >> 2u][j.x & 3u], y4[j.y >> 2u][j.y & 3u], y4[j.z >> 2u][j.z & 3u],
                      y4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(d4));
}
fn ld_dy(i: u32, d4: u32) -> vec4<f32> {
    if (VEC) { return dy4[min(i, last_el()) >> 2u]; }
    let j = el4(i);
    let x = vec4<f32>(dy4[j.x >> 2u][j.x & 3u], dy4[j.y >> 2u][j.y & 3u], dy4[j.z >> 2u][j.z & 3u],
                      dy4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(d4));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let BNT = a.B * a.NH * a.T;
    let r = (wid.x + wid.y * nwg.x) * WG + lid;
    if (r >= BNT) { return; }
    let i = r % a.T;
    let bh = r / a.T;
    let h = bh % a.NH;
    let b = bh / a.NH;
    let base = (b * a.T + i) * a.C + h * HS;
    var Di = 0.0;
    for (var d4 = 0u; d4 < HS4; d4++) {
        let g = ld_dy(base + 4u * d4, d4);
        let yv = ld_y(base + 4u * d4, d4);
        Di = fma(g.x, yv.x, Di);
        Di = fma(g.y, yv.y, Di);
        Di = fma(g.z, yv.z, Di);
        Di = fma(g.w, yv.w, Di);
    }
    stats[BNT + r] = Di;
}
