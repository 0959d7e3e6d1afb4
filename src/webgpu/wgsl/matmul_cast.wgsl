// matmul_cast.wgsl — an f32 operand of the subgroup-matrix matmul
// (matmul_sgmat.wgsl) copied to f16 as it lies in memory, zero-padded to
// whole tiles so the product's loads need no bounds checks:
//   D[p][r][c] (drows x dld, dld a multiple of 4) =
//     f16(S[src_off + p*sstride + r*ld + c])  r < rows, c < cols
//     1.0                                    otherwise, r < one_rows and c < one_cols
//                                            (the ones rows of a folded bias gradient)
//     0.0                                    otherwise (padding)
// for products p < nprod (a batch's B operands, dstride apart in D).
// Rounding to nearest even (the conversion of the device); values beyond
// f16's range become infinite, which the loss scaler reads as an overflow.
// Grid-stride over vec4 of D.
struct Args {
    rows: u32, cols: u32, ld: u32, src_off: u32,
    one_rows: u32, one_cols: u32, dld: u32, drows: u32,
    dst_off: u32, nprod: u32, sstride: u32, dstride: u32,
    p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> S: array<f32>;
@group(0) @binding(2) var<storage, read_write> D: array<vec4<f16>>;

fn elem(p: u32, r: u32, c: u32) -> f32 {
    if (r < a.rows && c < a.cols) { return S[a.src_off + p * a.sstride + r * a.ld + c]; }
    if (r < a.one_rows && c < a.one_cols) { return 1.0; }
    return 0.0;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let q = a.dld / 4u;           // vec4 per row of D
    let per = a.drows * q;        // vec4 per product
    let n = a.nprod * per;
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.x + wid.y * nwg.x) * WG + lid; i < n; i += stride) {
        let p = i / per;
        let e = i % per;
        let r = e / q;
        let c = (e % q) * 4u;
        let v = vec4<f32>(elem(p, r, c), elem(p, r, c + 1u), elem(p, r, c + 2u), elem(p, r, c + 3u));
        D[(a.dst_off + p * a.dstride) / 4u + e] = vec4<f16>(v);
    }
}
