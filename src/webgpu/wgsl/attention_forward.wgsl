// attention_forward.wgsl — causal attention forward, matmul-style
// FlashAttention-2 in fp32 (planned by src/webgpu/attention.c).
// One workgroup per (block of BR query rows, head h, batch b); key/value
// tiles of BC rows streamed through workgroup memory, tiles wholly above the
// diagonal skipped. Threads (TY = BR/4) x (TX = BC/4), thread (ty, tx) owns
//   S phase:  a 4x4 register tile: query rows 4ty..4ty+3 x keys tx + j*TX
//             (j < 4). Q and K rows sit in workgroup memory as vec4 over d
//             (row stride KS4 vec4, odd: the TX threads of a quarter-warp
//             read TX different K rows without bank conflicts, the Q rows
//             are broadcasts); per d4: 8 vec4 loads feed 64 FMAs.
//   softmax:  the tile's row maxima of the TX threads of a row group meet in
//             Red (one vec4 per thread), each thread reduces them in tx order;
//             p = exp(s - m) is computed ONCE per score by its owner and
//             stored as Pt[key][row/4] (vec4 over rows); l is kept per thread
//             (its own keys) and reduced over tx in order at the end.
//   PV phase: the 4 x 4*OB outputs rows 4ty.. x d-blocks tx + jb*TX
//             (jb < OB): per key one vec4 P load (broadcast) + OB vec4 V
//             loads feed 16*OB FMAs. Accumulators are NAMED vec4 variables
//             (oJR: d-block J, row R), no private arrays.
// Out-of-range rows/keys load as zeros (so any T and head size work: the
// head dimension is padded with zeros to HS4 vec4), masked scores are
// -3e38 (p = 0 exactly; the first tile always holds key 0, so m is finite
// after it). No atomics, fixed orders: deterministic. Stores y (B,T,C) and
// lse[(b*NH + h)*T + t] = m + log(l), like attention_rows_forward.
// Inputs are bound as array<vec4<f32>> (buffers are whole multiples of 16
// bytes); VEC (HS % 4 == 0) reads a row's vec4 directly, else per element.
// Grid (ceil(T/BR), NH, B) (block nwg.x-1-wid.x: the longest rows first),
// workgroup TX*TY. Prefix: HS, BR, BC, OB, VEC, DYN, PF.
// Tiles (attention.c), head size 64: 48 KiB: BR 64, BC 32, OB 2, 128
// threads, 44.5 KiB; 16 KiB: BR 16, BC 16, OB 4, 16 threads. ~8 FMAs per
// shared load in both products, each exp once, K/V read once per BR rows;
// the diagonal tiles waste ~1/32 of the work.
// PF (prefix; attention.c: on for GPUs with small per-thread shares): software
// pipelining as matmul.wgsl's ra/rb. Right after the barrier that makes
// tile t visible, each thread loads its NK slots of tile t+1's K and V
// (slot i: vec4 lid + i*NT of the BC x HS4 tile, the plain loop's order;
// partial shares guarded) into pk/pv and stores them to Ks/Vs after the
// next iteration's first barrier; the global latency overlaps tile t's
// compute instead of sitting between two barriers. Same values in the same
// places, same fma order: bit-identical with PF off (tests/webgpu/test_webgpu_attention.c).
// Every array index is in bounds by construction (robustness off): rows past
// T and padding are loaded through the clamped loaders (attention_common); Ks,
// Vs, Qs slots r < BC (BR), d4 < HS4 <= KS4; S/PV reads d4 < nd4 = HS4 and
// d-blocks clamped to HS4-1; Pt [key < BC][ty < TY <= PS4]; Red [tx*TY+ty <
// NT]; stores guarded by row < T, d < HS; lse by row < T. Every workgroup
// array element that is read was written first (no zero-init needed).
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// the probabilities stored to Pt for the PV product are multiplied by their
// mask factor (element ((b*NH + h)*T + row)*T + key), l sums them whole.
//!include attention_common
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const NEG: f32 = -3.0e38;

var<workgroup> Qs: array<vec4<f32>, BR * KS4>;
var<workgroup> Ks: array<vec4<f32>, BC * KS4>;
var<workgroup> Vs: array<vec4<f32>, BC * KS4>;
var<workgroup> Pt: array<vec4<f32>, BC * PS4>;
var<workgroup> Red: array<vec4<f32>, NT>;

fn st4(row: u32, db: u32, hb: u32, b: u32, x: vec4<f32>) {
    if (row >= a.T || db >= HS4) { return; }
    let base = (b * a.T + row) * a.C + hb + 4u * db;
    for (var c = 0u; c < 4u; c++) {
        if (4u * db + c < HS) { y[base + c] = x[c]; }
    }
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    // DYN (CPU adapters): run-time loop bounds, so lavapipe's LLVM does not
    // fully unroll (compile time); GPUs get the constants. The arguments
    // equal the constants (attention.c bounds()), so the loops stay in bounds
    let nd4 = select(HS4, a.nd4, DYN);
    let nbc = select(BC, a.nbc, DYN);
    let nk = select(NK, a.nk, DYN);
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let i0 = (nwg.x - 1u - wid.x) * BR; // the longest rows (most key tiles) start first
    let tx = lid % TX;
    let ty = lid / TX;
    for (var e = lid; e < BR * HS4; e += NT) {
        let r = e / HS4;
        let d4 = e % HS4;
        Qs[r * KS4 + d4] = ld_q(b, i0 + r, hb, d4) * a.scale;
    }
    let rows = vec4<u32>(i0 + 4u * ty) + vec4<u32>(0u, 1u, 2u, 3u);
    //!drop let dkey = tt_drop_key(a.p15);
    //!drop let drow = (vec4<u32>((b * a.NH + h) * T) + rows) * T; // mask index of (row, key 0)
    let r0 = (4u * ty) * KS4;
    // d-blocks of the output columns (clamped for loads; stores skip >= HS4)
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
    var m = vec4<f32>(NEG);
    var l = z4;
    let n_tiles = (min(T, i0 + BR) - 1u) / BC + 1u;
    // PF: the next K, V tile's slots lid + i*NT, loaded into registers
    // while the current tile is computed (constant indices once unrolled)
    var pk: array<vec4<f32>, NK>;
    var pv: array<vec4<f32>, NK>;
    if (PF) {
        for (var i = 0u; i < nk; i++) {
            let e = lid + i * NT;
            if (NKW || e < BC * HS4) {
                pk[i] = ld_k(b, e / HS4, hb, e % HS4);
                pv[i] = ld_v(b, e / HS4, hb, e % HS4);
            }
        }
    }
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        workgroupBarrier(); // Q stored / previous tile's readers of Ks, Vs, Pt done
        if (PF) {
            for (var i = 0u; i < nk; i++) {
                let e = lid + i * NT;
                if (NKW || e < BC * HS4) {
                    Ks[(e / HS4) * KS4 + e % HS4] = pk[i];
                    Vs[(e / HS4) * KS4 + e % HS4] = pv[i];
                }
            }
        } else {
            for (var e = lid; e < BC * HS4; e += NT) {
                let r = e / HS4;
                let d4 = e % HS4;
                Ks[r * KS4 + d4] = ld_k(b, j0 + r, hb, d4);
                Vs[r * KS4 + d4] = ld_v(b, j0 + r, hb, d4);
            }
        }
        workgroupBarrier();
        if (PF && tile + 1u < n_tiles) {
            let jn = j0 + BC;
            for (var i = 0u; i < nk; i++) {
                let e = lid + i * NT;
                if (NKW || e < BC * HS4) {
                    pk[i] = ld_k(b, jn + e / HS4, hb, e % HS4);
                    pv[i] = ld_v(b, jn + e / HS4, hb, e % HS4);
                }
            }
        }
        // S: sJ = scores of key tx + J*TX for the 4 rows (vec4 over rows)
        var s0 = z4; var s1 = z4; var s2 = z4; var s3 = z4;
        for (var d4 = 0u; d4 < nd4; d4++) {
            let q0 = Qs[r0 + d4];
            let q1 = Qs[r0 + KS4 + d4];
            let q2 = Qs[r0 + 2u * KS4 + d4];
            let q3 = Qs[r0 + 3u * KS4 + d4];
            let qx = vec4<f32>(q0.x, q1.x, q2.x, q3.x);
            let qy = vec4<f32>(q0.y, q1.y, q2.y, q3.y);
            let qz = vec4<f32>(q0.z, q1.z, q2.z, q3.z);
            let qw = vec4<f32>(q0.w, q1.w, q2.w, q3.w);
            let k0 = Ks[tx * KS4 + d4];
            let k1 = Ks[(tx + TX) * KS4 + d4];
            let k2 = Ks[(tx + 2u * TX) * KS4 + d4];
            let k3 = Ks[(tx + 3u * TX) * KS4 + d4];
            s0 = fma(qx, vec4<f32>(k0.x), s0); s0 = fma(qy, vec4<f32>(k0.y), s0);
            s0 = fma(qz, vec4<f32>(k0.z), s0); s0 = fma(qw, vec4<f32>(k0.w), s0);
            s1 = fma(qx, vec4<f32>(k1.x), s1); s1 = fma(qy, vec4<f32>(k1.y), s1);
            s1 = fma(qz, vec4<f32>(k1.z), s1); s1 = fma(qw, vec4<f32>(k1.w), s1);
            s2 = fma(qx, vec4<f32>(k2.x), s2); s2 = fma(qy, vec4<f32>(k2.y), s2);
            s2 = fma(qz, vec4<f32>(k2.z), s2); s2 = fma(qw, vec4<f32>(k2.w), s2);
            s3 = fma(qx, vec4<f32>(k3.x), s3); s3 = fma(qy, vec4<f32>(k3.y), s3);
            s3 = fma(qz, vec4<f32>(k3.z), s3); s3 = fma(qw, vec4<f32>(k3.w), s3);
        }
        // causal mask: key > row
        let kj = j0 + tx;
        s0 = select(s0, vec4<f32>(NEG), vec4<u32>(kj) > rows);
        s1 = select(s1, vec4<f32>(NEG), vec4<u32>(kj + TX) > rows);
        s2 = select(s2, vec4<f32>(NEG), vec4<u32>(kj + 2u * TX) > rows);
        s3 = select(s3, vec4<f32>(NEG), vec4<u32>(kj + 3u * TX) > rows);
        Red[tx * TY + ty] = max(max(s0, s1), max(s2, s3));
        workgroupBarrier();
        var mt = Red[ty];
        for (var t = 1u; t < TX; t++) { mt = max(mt, Red[t * TY + ty]); }
        let mn = max(m, mt);
        let corr = exp(m - mn);
        m = mn;
        let p0 = exp(s0 - mn);
        let p1 = exp(s1 - mn);
        let p2 = exp(s2 - mn);
        let p3 = exp(s3 - mn);
        l = fma(l, corr, (p0 + p1) + (p2 + p3));
        Pt[tx * PS4 + ty] = p0;
        Pt[(tx + TX) * PS4 + ty] = p1;
        Pt[(tx + 2u * TX) * PS4 + ty] = p2;
        Pt[(tx + 3u * TX) * PS4 + ty] = p3;
        //!drop Pt[tx * PS4 + ty] = p0 * tt_drop_mul4(dkey, drow + vec4<u32>(kj));
        //!drop Pt[(tx + TX) * PS4 + ty] = p1 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + TX));
        //!drop Pt[(tx + 2u * TX) * PS4 + ty] = p2 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + 2u * TX));
        //!drop Pt[(tx + 3u * TX) * PS4 + ty] = p3 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + 3u * TX));
        o00 *= corr.x; o01 *= corr.y; o02 *= corr.z; o03 *= corr.w;
        if (OB > 1u) { o10 *= corr.x; o11 *= corr.y; o12 *= corr.z; o13 *= corr.w; }
        if (OB > 2u) { o20 *= corr.x; o21 *= corr.y; o22 *= corr.z; o23 *= corr.w; }
        if (OB > 3u) { o30 *= corr.x; o31 *= corr.y; o32 *= corr.z; o33 *= corr.w; }
        workgroupBarrier();
        // O += P V (masked keys have p = 0: exact zeros added)
        for (var c = 0u; c < nbc; c++) {
            let p = Pt[c * PS4 + ty];
            let px = vec4<f32>(p.x);
            let py = vec4<f32>(p.y);
            let pz = vec4<f32>(p.z);
            let pw = vec4<f32>(p.w);
            let vr = c * KS4;
            let w0 = Vs[vr + c0];
            o00 = fma(px, w0, o00); o01 = fma(py, w0, o01); o02 = fma(pz, w0, o02); o03 = fma(pw, w0, o03);
            if (OB > 1u) {
                let w1 = Vs[vr + c1];
                o10 = fma(px, w1, o10); o11 = fma(py, w1, o11); o12 = fma(pz, w1, o12); o13 = fma(pw, w1, o13);
            }
            if (OB > 2u) {
                let w2 = Vs[vr + c2];
                o20 = fma(px, w2, o20); o21 = fma(py, w2, o21); o22 = fma(pz, w2, o22); o23 = fma(pw, w2, o23);
            }
            if (OB > 3u) {
                let w3 = Vs[vr + c3];
                o30 = fma(px, w3, o30); o31 = fma(py, w3, o31); o32 = fma(pz, w3, o32); o33 = fma(pw, w3, o33);
            }
        }
    }
    // l over the row group's TX threads, in tx order (Red's last readers
    // finished before the last tile's Pt barrier)
    Red[tx * TY + ty] = l;
    workgroupBarrier();
    var lt = Red[ty];
    for (var t = 1u; t < TX; t++) { lt += Red[t * TY + ty]; }
    let inv = 1.0 / lt;
    let ra = rows.x;
    st4(ra, db0, hb, b, o00 * inv.x); st4(ra + 1u, db0, hb, b, o01 * inv.y);
    st4(ra + 2u, db0, hb, b, o02 * inv.z); st4(ra + 3u, db0, hb, b, o03 * inv.w);
    if (OB > 1u) {
        st4(ra, db1, hb, b, o10 * inv.x); st4(ra + 1u, db1, hb, b, o11 * inv.y);
        st4(ra + 2u, db1, hb, b, o12 * inv.z); st4(ra + 3u, db1, hb, b, o13 * inv.w);
    }
    if (OB > 2u) {
        st4(ra, db2, hb, b, o20 * inv.x); st4(ra + 1u, db2, hb, b, o21 * inv.y);
        st4(ra + 2u, db2, hb, b, o22 * inv.z); st4(ra + 3u, db2, hb, b, o23 * inv.w);
    }
    if (OB > 3u) {
        st4(ra, db3, hb, b, o30 * inv.x); st4(ra + 1u, db3, hb, b, o31 * inv.y);
        st4(ra + 2u, db3, hb, b, o32 * inv.z); st4(ra + 3u, db3, hb, b, o33 * inv.w);
    }
    if (tx == 0u) {
        let lv = m + log(lt);
        let sb = (b * a.NH + h) * T;
        for (var r = 0u; r < 4u; r++) {
            if (rows[r] < T) { lse[sb + rows[r]] = lv[r]; }
        }
    }
}
