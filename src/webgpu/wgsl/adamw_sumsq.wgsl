// adamw_sumsq.wgsl — global grad norm, stage 1: workgroup w writes the sum of
// squares of one "part" of the gradients to part[p], p = part0 + w. A part is
// a range [desc[2p], desc[2p+1]) of element positions in the bound grads
// buffer (one chunk of the parameter storage, backend.c); parts never
// cross a chunk, so each chunk's parts are one dispatch. The sum of a part is
// the same whichever buffer holds it: lane l adds elements l, l+WG, ... of
// the part with fma in order, then a fixed tree.
struct Args {
    part0: u32, p1: u32, p2: u32, p3: u32,
    p4: u32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> desc: array<u32>;
@group(0) @binding(2) var<storage, read> grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;

var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = a.part0 + wid.x;
    let i0 = desc[2u * p];
    let i1 = desc[2u * p + 1u];
    var s = 0.0;
    for (var i = i0 + lid; i < i1; i += WG) { let g = grads[i]; s = fma(g, g, s); }
    red[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (lid < k) { red[lid] += red[lid + k]; }
        workgroupBarrier();
    }
    if (lid == 0u) { part[p] = red[0]; }
}
