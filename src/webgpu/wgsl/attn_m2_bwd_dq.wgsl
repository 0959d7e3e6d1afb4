// attn_m2_bwd_dq.wgsl — causal attention backward, variant
// TT_WEBGPU_ATTN_BWD=ds (planned by src/gpu/gpu_attn_m.c, tt_gop_attn_m2_plan),
// site 2 of 2: dq_i = scale * sum_{j<=i} ds_ij k_j from the dS tiles that
// attn_m2_bwd_dkdv stored (scratch dsb, tile (qb, kb) of (b, h) at
// ((b*NH + h) * nb(nb+1)/2 + qb(qb+1)/2 + kb) * TB*TB/4 vec4, inside a tile
// [query][key/4] vec4 over 4 keys; exact zeros above the diagonal and for
// queries >= T). A plain batched product: no exp, no S or dP recomputed.
// One workgroup per (block of BQ = MQ*TB query rows, h, b); per key tile kb
// (0 .. the block's last query tile) the MQ dS tiles (zeros where kb > qb)
// and the TB K rows are staged in workgroup memory:
//   Ss[row][key/4] (odd stride PK4 = (TB/4) | 1), Ks[key][d/4] (odd KS4).
// Threads (TY = BQ/4) x TX, thread (ty, tx) owns query rows 4ty..4ty+3 x
// d-blocks tx + jb*TX (jb < OB). Per 4 keys: 4 vec4 dS loads (broadcast over
// tx) + 4*OB vec4 K loads feed 64*OB FMAs; named vec4 accumulators oJR
// (d-block J, row R). Per output the keys are added in increasing order
// (tile, key): fixed order, no atomics, deterministic.
// Grid (ceil(T/BQ), NH, B) (block nwg.x-1-wid.x: the longest rows first).
// Prefix: HS, TB, BQ, OB, TX, VEC, DYN (DYN: loop bounds HS4, TB/4 from
// the arguments, for lavapipe's compile time).
// Tiles, head size 64 at 48 KiB (H200): TB 32, BQ 64, OB 2, TX 8: 128
// threads, 17.5 KiB (two or more resident workgroups per SM by memory).
// Prediction, gpt2 on an H200: 1 causal product = 77 GFLOP/step plus 207 MB
// of dS read. Per shared load ~10.7 FMAs (vs ~8 for attn_m_bwd_dq's
// products), no exp, no masking, 3 barriers fewer per tile; if it runs at
// 12-20 TFLOP/s (between attention forward's 11.2 and the 128-tile
// matmul's 18-27): 4-6.5 ms/step, against 37.3 ms for attn_m_bwd_dq. Whole
// backward (with attn_m2_bwd_dkdv): ~44-48 ms vs 75.7 ms (gpt2 step ~273 ->
// ~245 ms). UNMEASURED (tests/bench_webgpu.c, TT_WEBGPU_ATTN_BWD=ds).
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, nd4: u32, nkg: u32, p7: u32, // nd4 = HS4, nkg = TB/4 (loop bounds when DYN)
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> k4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dsb: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> dq: array<f32>;

const HS4: u32 = (HS + 3u) / 4u;
const KS4: u32 = HS4 | 1u;
const TB4: u32 = TB / 4u;
const PK4: u32 = TB4 | 1u;
const TY: u32 = BQ / 4u;
const NT: u32 = TY * TX;

var<workgroup> Ss: array<vec4<f32>, BQ * PK4>;
var<workgroup> Ks: array<vec4<f32>, TB * KS4>;

fn base_of(b: u32, t: u32, hb: u32, d4: u32) -> u32 { return (b * a.T + t) * a.C + hb + 4u * d4; }
fn ld_k(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    // unconditional loads (select): every element index clamped to the
    // tensor's last element B*T*C-1, what that changes is selected away
    let n1 = a.B * a.T * a.C - 1u;
    if (VEC) { return select(vec4<f32>(0.0), k4[min(i, n1) >> 2u], t < a.T); }
    let j = min(vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(n1));
    let x = vec4<f32>(k4[j.x >> 2u][j.x & 3u], k4[j.y >> 2u][j.y & 3u], k4[j.z >> 2u][j.z & 3u],
                      k4[j.w >> 2u][j.w & 3u]);
    let m = (vec4<u32>(4u * d4) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(HS)) & vec4<bool>(t < a.T);
    return select(vec4<f32>(0.0), x, m);
}

fn st4(row: u32, db: u32, hb: u32, b: u32, x: vec4<f32>) {
    if (row >= a.T || db >= HS4) { return; }
    let base = (b * a.T + row) * a.C + hb + 4u * db;
    for (var c = 0u; c < 4u; c++) {
        if (4u * db + c < HS) { dq[base + c] = x[c]; }
    }
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    let nd4 = select(HS4, a.nd4, DYN);
    let nkg = select(TB4, a.nkg, DYN);
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let i0 = (nwg.x - 1u - wid.x) * BQ; // the longest rows (most key tiles) start first
    let tx = lid % TX;
    let ty = lid / TX;
    let nb = (T + TB - 1u) / TB;
    let bh_base = (b * a.NH + h) * (nb * (nb + 1u) / 2u);
    let qb0 = i0 / TB;
    let rs = (4u * ty) * PK4;
    let db0 = tx;
    let db1 = tx + TX;
    let db2 = tx + 2u * TX;
    let db3 = tx + 3u * TX;
    let c0 = min(db0, HS4 - 1u);
    let c1 = min(db1, HS4 - 1u);
    let c2 = min(db2, HS4 - 1u);
    let c3 = min(db3, HS4 - 1u);
    let z4 = vec4<f32>(0.0);
    var o00 = z4; var o01 = z4; var o02 = z4; var o03 = z4;
    var o10 = z4; var o11 = z4; var o12 = z4; var o13 = z4;
    var o20 = z4; var o21 = z4; var o22 = z4; var o23 = z4;
    var o30 = z4; var o31 = z4; var o32 = z4; var o33 = z4;
    let n_kt = (min(T, i0 + BQ) - 1u) / TB + 1u; // key tiles 0 .. the block's last query tile
    for (var kb = 0u; kb < n_kt; kb++) {
        workgroupBarrier(); // previous tile's readers of Ss, Ks done
        for (var e = lid; e < BQ * TB4; e += NT) {
            let r = e / TB4;
            let kg = e % TB4;
            let qb = qb0 + r / TB;
            var x = z4;
            if (kb <= qb && qb < nb) { x = dsb[(bh_base + qb * (qb + 1u) / 2u + kb) * (TB * TB4) + (r % TB) * TB4 + kg]; }
            Ss[r * PK4 + kg] = x;
        }
        for (var e = lid; e < TB * HS4; e += NT) {
            let r = e / HS4;
            let d4 = e % HS4;
            Ks[r * KS4 + d4] = ld_k(b, kb * TB + r, hb, d4);
        }
        workgroupBarrier();
        for (var kg = 0u; kg < nkg; kg++) {
            let s0 = Ss[rs + kg];           // row 4ty: keys 4kg..4kg+3
            let s1 = Ss[rs + PK4 + kg];
            let s2 = Ss[rs + 2u * PK4 + kg];
            let s3 = Ss[rs + 3u * PK4 + kg];
            for (var c = 0u; c < 4u; c++) { // key 4kg + c, in order
                let x0 = vec4<f32>(s0[c]);
                let x1 = vec4<f32>(s1[c]);
                let x2 = vec4<f32>(s2[c]);
                let x3 = vec4<f32>(s3[c]);
                let kr = (4u * kg + c) * KS4;
                let w0 = Ks[kr + c0];
                o00 = fma(x0, w0, o00); o01 = fma(x1, w0, o01); o02 = fma(x2, w0, o02); o03 = fma(x3, w0, o03);
                if (OB > 1u) {
                    let w1 = Ks[kr + c1];
                    o10 = fma(x0, w1, o10); o11 = fma(x1, w1, o11); o12 = fma(x2, w1, o12); o13 = fma(x3, w1, o13);
                }
                if (OB > 2u) {
                    let w2 = Ks[kr + c2];
                    o20 = fma(x0, w2, o20); o21 = fma(x1, w2, o21); o22 = fma(x2, w2, o22); o23 = fma(x3, w2, o23);
                }
                if (OB > 3u) {
                    let w3 = Ks[kr + c3];
                    o30 = fma(x0, w3, o30); o31 = fma(x1, w3, o31); o32 = fma(x2, w3, o32); o33 = fma(x3, w3, o33);
                }
            }
        }
    }
    let sc = a.scale;
    let ra = i0 + 4u * ty;
    st4(ra, db0, hb, b, o00 * sc); st4(ra + 1u, db0, hb, b, o01 * sc);
    st4(ra + 2u, db0, hb, b, o02 * sc); st4(ra + 3u, db0, hb, b, o03 * sc);
    if (OB > 1u) {
        st4(ra, db1, hb, b, o10 * sc); st4(ra + 1u, db1, hb, b, o11 * sc);
        st4(ra + 2u, db1, hb, b, o12 * sc); st4(ra + 3u, db1, hb, b, o13 * sc);
    }
    if (OB > 2u) {
        st4(ra, db2, hb, b, o20 * sc); st4(ra + 1u, db2, hb, b, o21 * sc);
        st4(ra + 2u, db2, hb, b, o22 * sc); st4(ra + 3u, db2, hb, b, o23 * sc);
    }
    if (OB > 3u) {
        st4(ra, db3, hb, b, o30 * sc); st4(ra + 1u, db3, hb, b, o31 * sc);
        st4(ra + 2u, db3, hb, b, o32 * sc); st4(ra + 3u, db3, hb, b, o33 * sc);
    }
}
