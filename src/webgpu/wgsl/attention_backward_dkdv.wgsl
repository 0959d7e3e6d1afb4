// attention_backward_dkdv.wgsl — causal attention backward, part 2
// (planned by src/webgpu/attention.c): dk and dv.
// One workgroup per (block of BR key rows, h, b); the K and V blocks stay in
// workgroup memory; tiles of BC query rows (Q scaled, dY, lse, D) stream
// through it from the block's diagonal to T. Two halves (hf = 0, 1)
// of NT = (TY = BR/4) x (TX = BC/4) threads; thread (ty, tx) of a half owns
// key rows 4ty..4ty+3 and does one product of each pair:
//   hf 0:  S = K (scale Q)^T (4x4 register tile against queries
//          tx + j*TX, vec4 over d, odd row stride KS4), P = exp(s - lse_i) (0 where
//          query < key or query >= T) -> Pt[query][key/4]; then
//          dv += P^T dY (key rows 4ty.. x d-blocks tx + jb*TX, jb < OB)
//   hf 1:  dP = V dY^T (the same tile), after a barrier dS = P (dP - D_i)
//          from Pt -> St; then dk += dS^T (scale Q)
// Each element gets one owner and one fixed order of operations, whatever
// the thread count; splitting the pairs halves a thread's accumulators
// (registers), so the workgroup runs 2 NT threads on the same workgroup
// memory.
//   dv_j = sum_{i>=j} p_ij dy_i,  dk_j = sum_{i>=j} ds_ij (scale q_i)
// S is the dq kernel's: fma(scale q_d, k_d, s) over d in the same order (fma
// is commutative), so P, dS and the stored dS below equal its bits for every
// head size.
// lse and D (= rowsum(dy*y)) from stats = [lse | D] (D written by
// attention_backward_dq, which runs first). No atomics, fixed orders:
// deterministic.
// Grid (ceil(T/BR), NH, B) (block wid.x: the longest, first), workgroup
// NT2 = 2 SPL NT. Prefix: HS, BR, BC, OB, VEC, DYN, PF, SPL, KV1 (dk and dv
// in one buffer: dv written through the dk binding at o2_off, the dv binding
// a placeholder; WebGPU refuses overlapping writable bindings).
// Tiles (attention.c), head size 64: 48 KiB: BR 32, BC 32, OB 2, 128
// threads, 43.3 KiB; 16 KiB: BR 8, BC 16, OB 4.
// SPL 2 (the split layout; attention.c: GPUs, an even OB, no dropout):
// two threads of a half per 4x4 tile on the same workgroup memory: PX =
// 2 TX threads per key-row group, thread u = l % PX; in the S / dP phase
// quarter u / TX takes queries tx + (2 (u/TX) + j) TX (j < 2) of the plain
// layout's tile tx = u % TX, in the accumulation thread u owns d-blocks
// u + jb*PX (OB halved). Head size 64 on 48 KiB: 256 threads, OB 1. Every
// element of P, dS, dk, dv is the same operations in the same order (no
// reduction crosses threads): bit-identical to SPL 1.
// PF (prefix): the next query tile's Q and dY slots (NK2 vec4 each per
// thread) and its lse, D rows (NL2 per thread, 0 for rows >= T as without
// PF) are loaded into registers right after the barrier that makes the
// current tile visible and stored to Qs, Gs, Lt, Dt at the top of the next
// iteration; bit-identical with PF off.
// Bounds (robustness off): as attention_forward with the roles of rows and
// keys swapped; Lt/Dt [e < BC]; stats reads guarded by row < T.
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// hf 1 recomputes the forward's mask factors E of its tile and writes
// dS = P (E dP - D) and Pt = P E, so dv takes P E.
// dS-storing variant ("//!ds " lines, prefix DS_BIND, DSG; attention.c):
// D comes from attention_backward_d (run first), and after the barrier
// that completes a tile's St all threads copy it into the scratch dsb for
// attention_backward_dq_ds: block (qb, kb) (DSG x DSG, kb <= qb) of slice
// z = b*NH + h at vec4 (z * nb(nb+1)/2 + qb(qb+1)/2 + kb) * DSG*DSG/4,
// nb = ceil(T/DSG), inside [key][query/4] (vec4 over 4 queries). Every
// entry key <= query < T of a slice is written (its key block starts the
// query tiles at or before it); entries outside that are left as they are
// (the reader masks them); all writes fall inside the causal blocks
// (DSG is a multiple of BR and BC).
//!include attention_common
@group(0) @binding(4) var<storage, read> dy4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> dk: array<f32>;
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;

var<workgroup> Ks: array<vec4<f32>, BR * KS4>;
var<workgroup> Vs: array<vec4<f32>, BR * KS4>;
var<workgroup> Qs: array<vec4<f32>, BC * KS4>;
var<workgroup> Gs: array<vec4<f32>, BC * KS4>;
var<workgroup> Pt: array<vec4<f32>, BC * PS4>;
var<workgroup> St: array<vec4<f32>, BC * PS4>;
var<workgroup> Lt: array<f32, BC>;
var<workgroup> Dt: array<f32, BC>;

// SPL (prefix, 1 or 2): threads of a half per 4x4 tile of the plain layout
const PX: u32 = TX * SPL;        // threads of a key-row group in a half
const NH2: u32 = NT * SPL;       // a half
const NT2: u32 = 2u * NH2;       // the workgroup: both halves
const KPT: u32 = 4u / SPL;       // queries per thread in the S / dP phase
// PF: a thread's slots of a streamed tile (NK2 vec4 per tensor, NL2 lse/D
// rows), the counts args nk, nl hold under DYN (attention.c bounds())
const NK2: u32 = (BC * HS4 + NT2 - 1u) / NT2;
const NKW2: bool = NK2 * NT2 == BC * HS4;
const NL2: u32 = (BC + NT2 - 1u) / NT2;
const NLW2: bool = NL2 * NT2 == BC;

fn ld_dy(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), dy4[min(i, last_el()) >> 2u], t < a.T); }
    let j = el4(i); // clamped (attention_common)
    let x = vec4<f32>(dy4[j.x >> 2u][j.x & 3u], dy4[j.y >> 2u][j.y & 3u], dy4[j.z >> 2u][j.z & 3u],
                      dy4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}

//!ds @group(0) @binding(DS_BIND) var<storage, read_write> dsb: array<vec4<f32>>;
//!ds fn ds_store(z: u32, i0: u32, j0: u32, lid: u32) {
//!ds     let nb = (a.T + DSG - 1u) / DSG;
//!ds     let zb = z * (nb * (nb + 1u) / 2u);
//!ds     for (var e = lid; e < BR * TX; e += NT2) {
//!ds         let kk = e / TX; // key j0 + kk, queries i0 + 4m .. i0 + 4m + 3
//!ds         let m = e % TX;
//!ds         let c = kk & 3u;
//!ds         let x = vec4<f32>(St[(4u * m) * PS4 + kk / 4u][c], St[(4u * m + 1u) * PS4 + kk / 4u][c],
//!ds                           St[(4u * m + 2u) * PS4 + kk / 4u][c], St[(4u * m + 3u) * PS4 + kk / 4u][c]);
//!ds         let j = j0 + kk;
//!ds         let i = i0 + 4u * m;
//!ds         let qb = i / DSG;
//!ds         dsb[(zb + qb * (qb + 1u) / 2u + j / DSG) * (DSG * DSG / 4u) + (j % DSG) * (DSG / 4u) + (i % DSG) / 4u] = x;
//!ds     }
//!ds }

fn st4(which: u32, row: u32, db: u32, hb: u32, b: u32, x: vec4<f32>) {
    if (row >= a.T || db >= HS4) { return; }
    let base = (b * a.T + row) * a.C + hb + 4u * db;
    for (var c = 0u; c < 4u; c++) {
        if (4u * db + c < HS) {
            if (which == 0u) {
                dk[a.o1_off + base + c] = x[c];
            } else if (KV1) {
                dk[a.o2_off + base + c] = x[c];
            } else {
                dv[a.o2_off + base + c] = x[c];
            }
        }
    }
}

@compute @workgroup_size(NT2)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    // DYN (CPU adapters): run-time loop bounds, so lavapipe's LLVM does not
    // fully unroll (compile time); GPUs get the constants. The arguments
    // equal the constants (attention.c bounds()), so the loops stay in bounds
    let nd4 = select(HS4, a.nd4, DYN);
    let nbc = select(BC, a.nbc, DYN);
    let nk = select(NK2, a.nk, DYN);
    let nl = select(NL2, a.nl, DYN);
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let j0 = wid.x * BR;
    let hf = lid / NH2;  // 0: S, P, dv; 1: dP, dS, dk
    let l = lid % NH2;
    let u = l % PX;      // the thread's place in its key-row group
    let ty = l / PX;
    let tx = u % TX;
    let kb = tx + (u / TX) * KPT * TX; // its first query in a tile (SPL 2: quarter u / TX)
    let BNT = a.B * a.NH * T;
    let sb = (b * a.NH + h) * T;
    for (var e = lid; e < BR * HS4; e += NT2) {
        let r = e / HS4;
        let d4 = e % HS4;
        Ks[r * KS4 + d4] = ld_k(b, j0 + r, hb, d4);
        Vs[r * KS4 + d4] = ld_v(b, j0 + r, hb, d4);
    }
    let keys = vec4<u32>(j0 + 4u * ty) + vec4<u32>(0u, 1u, 2u, 3u);
    //!drop let dkey = tt_drop_key(a.p15);
    let r0 = (4u * ty) * KS4;
    let db0 = u;
    let db1 = u + PX;
    let db2 = u + 2u * PX;
    let db3 = u + 3u * PX;
    let c0 = min(db0, HS4 - 1u);
    let c1 = min(db1, HS4 - 1u);
    let c2 = min(db2, HS4 - 1u);
    let c3 = min(db3, HS4 - 1u);
    let z4 = vec4<f32>(0.0);
    // this half's accumulators: dv (hf 0) or dk (hf 1), key row 4ty+i x d-block jb: wJI
    var w00 = z4; var w01 = z4; var w02 = z4; var w03 = z4;
    var w10 = z4; var w11 = z4; var w12 = z4; var w13 = z4;
    var w20 = z4; var w21 = z4; var w22 = z4; var w23 = z4;
    var w30 = z4; var w31 = z4; var w32 = z4; var w33 = z4;
    let i_first = j0 / BC * BC;
    let n_tiles = (T - i_first + BC - 1u) / BC;
    var pq: array<vec4<f32>, NK2>;
    var pg: array<vec4<f32>, NK2>;
    var pl: array<f32, NL2>;
    var pd: array<f32, NL2>;
    if (PF) {
        for (var i = 0u; i < nk; i++) {
            let e = lid + i * NT2;
            if (NKW2 || e < BC * HS4) {
                pq[i] = ld_q(b, i_first + e / HS4, hb, e % HS4);
                pg[i] = ld_dy(b, i_first + e / HS4, hb, e % HS4);
            }
        }
        for (var i = 0u; i < nl; i++) {
            let e = lid + i * NT2;
            var lv = 0.0;
            var dvv = 0.0;
            if ((NLW2 || e < BC) && i_first + e < T) {
                lv = stats[sb + i_first + e];
                dvv = stats[BNT + sb + i_first + e];
            }
            pl[i] = lv;
            pd[i] = dvv;
        }
    }
    for (var tile = 0u; tile < n_tiles; tile++) {
        let i0 = i_first + tile * BC;
        workgroupBarrier(); // K, V stored / previous tile's readers done
        if (PF) {
            for (var i = 0u; i < nk; i++) {
                let e = lid + i * NT2;
                if (NKW2 || e < BC * HS4) {
                    Qs[(e / HS4) * KS4 + e % HS4] = pq[i] * a.scale;
                    Gs[(e / HS4) * KS4 + e % HS4] = pg[i];
                }
            }
            for (var i = 0u; i < nl; i++) {
                let e = lid + i * NT2;
                if (NLW2 || e < BC) {
                    Lt[e] = pl[i];
                    Dt[e] = pd[i];
                }
            }
        } else {
            for (var e = lid; e < nbc * nd4; e += NT2) {
                let r = e / HS4;
                let d4 = e % HS4;
                Qs[r * KS4 + d4] = ld_q(b, i0 + r, hb, d4) * a.scale;
                Gs[r * KS4 + d4] = ld_dy(b, i0 + r, hb, d4);
            }
            for (var e = lid; e < nbc; e += NT2) {
                var lv = 0.0;
                var dvv = 0.0;
                if (i0 + e < T) {
                    lv = stats[sb + i0 + e];
                    dvv = stats[BNT + sb + i0 + e];
                }
                Lt[e] = lv;
                Dt[e] = dvv;
            }
        }
        workgroupBarrier();
        if (PF && tile + 1u < n_tiles) {
            let iN = i0 + BC;
            for (var i = 0u; i < nk; i++) {
                let e = lid + i * NT2;
                if (NKW2 || e < BC * HS4) {
                    pq[i] = ld_q(b, iN + e / HS4, hb, e % HS4);
                    pg[i] = ld_dy(b, iN + e / HS4, hb, e % HS4);
                }
            }
            for (var i = 0u; i < nl; i++) {
                let e = lid + i * NT2;
                var lv = 0.0;
                var dvv = 0.0;
                if ((NLW2 || e < BC) && iN + e < T) {
                    lv = stats[sb + iN + e];
                    dvv = stats[BNT + sb + iN + e];
                }
                pl[i] = lv;
                pd[i] = dvv;
            }
        }
        // sJ: scores (hf 0) or dP (hf 1) of query kb + J*TX for the 4 key rows (J < KPT)
        var s0 = z4; var s1 = z4; var s2 = z4; var s3 = z4;
        if (hf == 0u) {
            for (var d4 = 0u; d4 < nd4; d4++) {
                let a0 = Ks[r0 + d4];
                let a1 = Ks[r0 + KS4 + d4];
                let a2 = Ks[r0 + 2u * KS4 + d4];
                let a3 = Ks[r0 + 3u * KS4 + d4];
                let ax = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
                let ay = vec4<f32>(a0.y, a1.y, a2.y, a3.y);
                let az = vec4<f32>(a0.z, a1.z, a2.z, a3.z);
                let aw = vec4<f32>(a0.w, a1.w, a2.w, a3.w);
                let e0 = Qs[kb * KS4 + d4];
                let e1 = Qs[(kb + TX) * KS4 + d4];
                s0 = fma(ax, vec4<f32>(e0.x), s0); s0 = fma(ay, vec4<f32>(e0.y), s0);
                s0 = fma(az, vec4<f32>(e0.z), s0); s0 = fma(aw, vec4<f32>(e0.w), s0);
                s1 = fma(ax, vec4<f32>(e1.x), s1); s1 = fma(ay, vec4<f32>(e1.y), s1);
                s1 = fma(az, vec4<f32>(e1.z), s1); s1 = fma(aw, vec4<f32>(e1.w), s1);
                if (KPT > 2u) {
                    let e2 = Qs[(kb + 2u * TX) * KS4 + d4];
                    let e3 = Qs[(kb + 3u * TX) * KS4 + d4];
                    s2 = fma(ax, vec4<f32>(e2.x), s2); s2 = fma(ay, vec4<f32>(e2.y), s2);
                    s2 = fma(az, vec4<f32>(e2.z), s2); s2 = fma(aw, vec4<f32>(e2.w), s2);
                    s3 = fma(ax, vec4<f32>(e3.x), s3); s3 = fma(ay, vec4<f32>(e3.y), s3);
                    s3 = fma(az, vec4<f32>(e3.z), s3); s3 = fma(aw, vec4<f32>(e3.w), s3);
                }
            }
        } else {
            for (var d4 = 0u; d4 < nd4; d4++) {
                let a0 = Vs[r0 + d4];
                let a1 = Vs[r0 + KS4 + d4];
                let a2 = Vs[r0 + 2u * KS4 + d4];
                let a3 = Vs[r0 + 3u * KS4 + d4];
                let ax = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
                let ay = vec4<f32>(a0.y, a1.y, a2.y, a3.y);
                let az = vec4<f32>(a0.z, a1.z, a2.z, a3.z);
                let aw = vec4<f32>(a0.w, a1.w, a2.w, a3.w);
                let e0 = Gs[kb * KS4 + d4];
                let e1 = Gs[(kb + TX) * KS4 + d4];
                s0 = fma(ax, vec4<f32>(e0.x), s0); s0 = fma(ay, vec4<f32>(e0.y), s0);
                s0 = fma(az, vec4<f32>(e0.z), s0); s0 = fma(aw, vec4<f32>(e0.w), s0);
                s1 = fma(ax, vec4<f32>(e1.x), s1); s1 = fma(ay, vec4<f32>(e1.y), s1);
                s1 = fma(az, vec4<f32>(e1.z), s1); s1 = fma(aw, vec4<f32>(e1.w), s1);
                if (KPT > 2u) {
                    let e2 = Gs[(kb + 2u * TX) * KS4 + d4];
                    let e3 = Gs[(kb + 3u * TX) * KS4 + d4];
                    s2 = fma(ax, vec4<f32>(e2.x), s2); s2 = fma(ay, vec4<f32>(e2.y), s2);
                    s2 = fma(az, vec4<f32>(e2.z), s2); s2 = fma(aw, vec4<f32>(e2.w), s2);
                    s3 = fma(ax, vec4<f32>(e3.x), s3); s3 = fma(ay, vec4<f32>(e3.y), s3);
                    s3 = fma(az, vec4<f32>(e3.z), s3); s3 = fma(aw, vec4<f32>(e3.w), s3);
                }
            }
        }
        let z = vec4<f32>(0.0);
        let qa = i0 + kb;
        let qb = qa + TX;
        let qc = qa + 2u * TX;
        let qd = qa + 3u * TX;
        if (hf == 0u) {
            // p where key <= query < T, else 0
            let m0 = (keys <= vec4<u32>(qa)) & vec4<bool>(qa < T);
            let m1 = (keys <= vec4<u32>(qb)) & vec4<bool>(qb < T);
            Pt[kb * PS4 + ty] = select(z, exp(s0 - vec4<f32>(Lt[kb])), m0);
            Pt[(kb + TX) * PS4 + ty] = select(z, exp(s1 - vec4<f32>(Lt[kb + TX])), m1);
            if (KPT > 2u) {
                let m2 = (keys <= vec4<u32>(qc)) & vec4<bool>(qc < T);
                let m3 = (keys <= vec4<u32>(qd)) & vec4<bool>(qd < T);
                Pt[(kb + 2u * TX) * PS4 + ty] = select(z, exp(s2 - vec4<f32>(Lt[kb + 2u * TX])), m2);
                Pt[(kb + 3u * TX) * PS4 + ty] = select(z, exp(s3 - vec4<f32>(Lt[kb + 3u * TX])), m3);
            }
        }
        workgroupBarrier();
        if (hf == 1u) {
            // ds = p (dp - D) at this thread's own tile positions of Pt
            let p0 = Pt[kb * PS4 + ty];
            let p1 = Pt[(kb + TX) * PS4 + ty];
            St[kb * PS4 + ty] = p0 * (s0 - vec4<f32>(Dt[kb]));
            St[(kb + TX) * PS4 + ty] = p1 * (s1 - vec4<f32>(Dt[kb + TX]));
            //!drop let e0 = tt_drop_mul4(dkey, vec4<u32>((sb + qa) * T) + keys); // mask of (query, keys)
            //!drop let e1 = tt_drop_mul4(dkey, vec4<u32>((sb + qb) * T) + keys);
            //!drop Pt[kb * PS4 + ty] = p0 * e0;
            //!drop Pt[(kb + TX) * PS4 + ty] = p1 * e1;
            //!drop St[kb * PS4 + ty] = p0 * (s0 * e0 - vec4<f32>(Dt[kb]));
            //!drop St[(kb + TX) * PS4 + ty] = p1 * (s1 * e1 - vec4<f32>(Dt[kb + TX]));
            if (KPT > 2u) {
                let p2 = Pt[(kb + 2u * TX) * PS4 + ty];
                let p3 = Pt[(kb + 3u * TX) * PS4 + ty];
                St[(kb + 2u * TX) * PS4 + ty] = p2 * (s2 - vec4<f32>(Dt[kb + 2u * TX]));
                St[(kb + 3u * TX) * PS4 + ty] = p3 * (s3 - vec4<f32>(Dt[kb + 3u * TX]));
                //!drop let e2 = tt_drop_mul4(dkey, vec4<u32>((sb + qc) * T) + keys);
                //!drop let e3 = tt_drop_mul4(dkey, vec4<u32>((sb + qd) * T) + keys);
                //!drop Pt[(kb + 2u * TX) * PS4 + ty] = p2 * e2;
                //!drop Pt[(kb + 3u * TX) * PS4 + ty] = p3 * e3;
                //!drop St[(kb + 2u * TX) * PS4 + ty] = p2 * (s2 * e2 - vec4<f32>(Dt[kb + 2u * TX]));
                //!drop St[(kb + 3u * TX) * PS4 + ty] = p3 * (s3 * e3 - vec4<f32>(Dt[kb + 3u * TX]));
            }
        }
        workgroupBarrier();
        //!ds ds_store(b * a.NH + h, i0, j0, lid);
        // hf 0: dv += P^T dY; hf 1: dk += dS^T (scale Q) (masked entries add exact zeros)
        if (hf == 0u) {
            for (var c = 0u; c < nbc; c++) {
                let p = Pt[c * PS4 + ty];
                let px = vec4<f32>(p.x);
                let py = vec4<f32>(p.y);
                let pz = vec4<f32>(p.z);
                let pw = vec4<f32>(p.w);
                let cr = c * KS4;
                let u0 = Gs[cr + c0];
                w00 = fma(px, u0, w00); w01 = fma(py, u0, w01); w02 = fma(pz, u0, w02); w03 = fma(pw, u0, w03);
                if (OB > 1u) {
                    let u1 = Gs[cr + c1];
                    w10 = fma(px, u1, w10); w11 = fma(py, u1, w11); w12 = fma(pz, u1, w12); w13 = fma(pw, u1, w13);
                }
                if (OB > 2u) {
                    let u2 = Gs[cr + c2];
                    w20 = fma(px, u2, w20); w21 = fma(py, u2, w21); w22 = fma(pz, u2, w22); w23 = fma(pw, u2, w23);
                }
                if (OB > 3u) {
                    let u3 = Gs[cr + c3];
                    w30 = fma(px, u3, w30); w31 = fma(py, u3, w31); w32 = fma(pz, u3, w32); w33 = fma(pw, u3, w33);
                }
            }
        } else {
            for (var c = 0u; c < nbc; c++) {
                let p = St[c * PS4 + ty];
                let px = vec4<f32>(p.x);
                let py = vec4<f32>(p.y);
                let pz = vec4<f32>(p.z);
                let pw = vec4<f32>(p.w);
                let cr = c * KS4;
                let u0 = Qs[cr + c0];
                w00 = fma(px, u0, w00); w01 = fma(py, u0, w01); w02 = fma(pz, u0, w02); w03 = fma(pw, u0, w03);
                if (OB > 1u) {
                    let u1 = Qs[cr + c1];
                    w10 = fma(px, u1, w10); w11 = fma(py, u1, w11); w12 = fma(pz, u1, w12); w13 = fma(pw, u1, w13);
                }
                if (OB > 2u) {
                    let u2 = Qs[cr + c2];
                    w20 = fma(px, u2, w20); w21 = fma(py, u2, w21); w22 = fma(pz, u2, w22); w23 = fma(pw, u2, w23);
                }
                if (OB > 3u) {
                    let u3 = Qs[cr + c3];
                    w30 = fma(px, u3, w30); w31 = fma(py, u3, w31); w32 = fma(pz, u3, w32); w33 = fma(pw, u3, w33);
                }
            }
        }
    }
    // hf 0 writes dv (which 1), hf 1 writes dk (which 0)
    let which = 1u - hf;
    let ka = keys.x;
    st4(which, ka, db0, hb, b, w00); st4(which, ka + 1u, db0, hb, b, w01);
    st4(which, ka + 2u, db0, hb, b, w02); st4(which, ka + 3u, db0, hb, b, w03);
    if (OB > 1u) {
        st4(which, ka, db1, hb, b, w10); st4(which, ka + 1u, db1, hb, b, w11);
        st4(which, ka + 2u, db1, hb, b, w12); st4(which, ka + 3u, db1, hb, b, w13);
    }
    if (OB > 2u) {
        st4(which, ka, db2, hb, b, w20); st4(which, ka + 1u, db2, hb, b, w21);
        st4(which, ka + 2u, db2, hb, b, w22); st4(which, ka + 3u, db2, hb, b, w23);
    }
    if (OB > 3u) {
        st4(which, ka, db3, hb, b, w30); st4(which, ka + 1u, db3, hb, b, w31);
        st4(which, ka + 2u, db3, hb, b, w32); st4(which, ka + 3u, db3, hb, b, w33);
    }
}
