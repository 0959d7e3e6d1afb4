// attention_backward_dkdv.wgsl — causal attention backward, part 2
// (planned by src/webgpu/attention.c): dk and dv.
// One workgroup per (block of BR key rows, h, b); the scaled K block and the
// V block stay in workgroup memory; tiles of BC query rows (Q, dY, lse, D)
// stream through it from the block's diagonal to T. Threads (TY = BR/4) x
// (TX = BC/4), thread (ty, tx) owns key rows 4ty..4ty+3 and
//   S, dP:  4x4 register tiles against queries tx + j*TX (j < 4), vec4 over d
//           (odd row stride KS4); per d4 8 vec4 loads feed 64 FMAs
//   P, dS:  p = exp(s - lse_i) (0 where query < key or query >= T),
//           ds = p (dp - D_i), once per element, stored as Pt/St[query][key/4]
//   dk, dv: key rows 4ty.. x d-blocks tx + jb*TX (jb < OB): per query one
//           vec4 P (dS) load + OB vec4 dY (Q) loads feed 16*OB FMAs each;
//           named vec4 accumulators
//   dv_j = sum_{i>=j} p_ij dy_i,  dk_j = scale * sum_{i>=j} ds_ij q_i
// lse and D (= rowsum(dy*y)) from stats = [lse | D] (D written by
// attention_backward_dq, which runs first). No atomics, fixed orders: deterministic.
// Grid (ceil(T/BR), NH, B) (block wid.x: the longest, first),
// workgroup TX*TY. Prefix: HS, BR, BC, OB, VEC, DYN, PF.
// Tiles (attention.c), head size 64: 48 KiB: BR 32, BC 32, OB 2, 64
// threads, 43.3 KiB; 16 KiB: BR 8, BC 16, OB 4. ~8 FMAs per shared load,
// exp once per element.
// PF (prefix): the next query tile's Q and dY
// slots (NK vec4 each per thread) and its lse, D rows (NL per thread, 0 for
// rows >= T as without PF) are loaded into registers right after the
// barrier that makes the current tile visible and stored to Qs, Gs, Lt, Dt
// at the top of the next iteration; bit-identical with PF off.
// Bounds (robustness off): as attention_forward with the roles of
// rows and keys swapped; Lt/Dt [e < BC]; stats reads guarded by row < T.
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// with the forward's mask factors E (recomputed), dv takes P E and
// dS = P (E dP - D).
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

// PF: the lse, D rows of a streamed tile per thread (NL slots, whole: NLW)
const NL: u32 = (BC + NT - 1u) / NT;
const NLW: bool = NL * NT == BC;

fn ld_dy(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), dy4[min(i, last_el()) >> 2u], t < a.T); }
    let j = el4(i); // clamped (attention_common)
    let x = vec4<f32>(dy4[j.x >> 2u][j.x & 3u], dy4[j.y >> 2u][j.y & 3u], dy4[j.z >> 2u][j.z & 3u],
                      dy4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}

fn st4(which: u32, row: u32, db: u32, hb: u32, b: u32, x: vec4<f32>) {
    if (row >= a.T || db >= HS4) { return; }
    let base = (b * a.T + row) * a.C + hb + 4u * db;
    for (var c = 0u; c < 4u; c++) {
        if (4u * db + c < HS) {
            if (which == 0u) { dk[base + c] = x[c]; } else { dv[base + c] = x[c]; }
        }
    }
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    // DYN (CPU adapters): run-time loop bounds, so lavapipe's LLVM does not
    // fully unroll (compile time); GPUs get the constants. The arguments
    // equal the constants (attention.c bounds()), so the loops stay in bounds
    let nd4 = select(HS4, a.nd4, DYN);
    let nbc = select(BC, a.nbc, DYN);
    let nk = select(NK, a.nk, DYN);
    let nl = select(NL, a.nl, DYN);
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let j0 = wid.x * BR;
    let tx = lid % TX;
    let ty = lid / TX;
    let BNT = a.B * a.NH * T;
    let sb = (b * a.NH + h) * T;
    for (var e = lid; e < BR * HS4; e += NT) {
        let r = e / HS4;
        let d4 = e % HS4;
        Ks[r * KS4 + d4] = ld_k(b, j0 + r, hb, d4) * a.scale;
        Vs[r * KS4 + d4] = ld_v(b, j0 + r, hb, d4);
    }
    let keys = vec4<u32>(j0 + 4u * ty) + vec4<u32>(0u, 1u, 2u, 3u);
    //!drop let dkey = tt_drop_key(a.p15);
    let r0 = (4u * ty) * KS4;
    let db0 = tx;
    let db1 = tx + TX;
    let db2 = tx + 2u * TX;
    let db3 = tx + 3u * TX;
    let c0 = min(db0, HS4 - 1u);
    let c1 = min(db1, HS4 - 1u);
    let c2 = min(db2, HS4 - 1u);
    let c3 = min(db3, HS4 - 1u);
    let z4 = vec4<f32>(0.0);
    var k00 = z4; var k01 = z4; var k02 = z4; var k03 = z4;
    var k10 = z4; var k11 = z4; var k12 = z4; var k13 = z4;
    var k20 = z4; var k21 = z4; var k22 = z4; var k23 = z4;
    var k30 = z4; var k31 = z4; var k32 = z4; var k33 = z4;
    var v00 = z4; var v01 = z4; var v02 = z4; var v03 = z4;
    var v10 = z4; var v11 = z4; var v12 = z4; var v13 = z4;
    var v20 = z4; var v21 = z4; var v22 = z4; var v23 = z4;
    var v30 = z4; var v31 = z4; var v32 = z4; var v33 = z4;
    let i_first = j0 / BC * BC;
    let n_tiles = (T - i_first + BC - 1u) / BC;
    // PF: the next tile's Q, dY slots lid + i*NT and lse, D rows lid + i*NT
    // (i < NL), loaded into registers while the current tile is computed
    // (constant indices once unrolled); rows >= T: lse = D = 0 as below
    var pq: array<vec4<f32>, NK>;
    var pg: array<vec4<f32>, NK>;
    var pl: array<f32, NL>;
    var pd: array<f32, NL>;
    if (PF) {
        for (var i = 0u; i < nk; i++) {
            let e = lid + i * NT;
            if (NKW || e < BC * HS4) {
                pq[i] = ld_q(b, i_first + e / HS4, hb, e % HS4);
                pg[i] = ld_dy(b, i_first + e / HS4, hb, e % HS4);
            }
        }
        for (var i = 0u; i < nl; i++) {
            let e = lid + i * NT;
            var lv = 0.0;
            var dvv = 0.0;
            if ((NLW || e < BC) && i_first + e < T) {
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
                let e = lid + i * NT;
                if (NKW || e < BC * HS4) {
                    Qs[(e / HS4) * KS4 + e % HS4] = pq[i];
                    Gs[(e / HS4) * KS4 + e % HS4] = pg[i];
                }
            }
            for (var i = 0u; i < nl; i++) {
                let e = lid + i * NT;
                if (NLW || e < BC) {
                    Lt[e] = pl[i];
                    Dt[e] = pd[i];
                }
            }
        } else {
            for (var e = lid; e < BC * HS4; e += NT) {
                let r = e / HS4;
                let d4 = e % HS4;
                Qs[r * KS4 + d4] = ld_q(b, i0 + r, hb, d4);
                Gs[r * KS4 + d4] = ld_dy(b, i0 + r, hb, d4);
            }
            for (var e = lid; e < BC; e += NT) {
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
                let e = lid + i * NT;
                if (NKW || e < BC * HS4) {
                    pq[i] = ld_q(b, iN + e / HS4, hb, e % HS4);
                    pg[i] = ld_dy(b, iN + e / HS4, hb, e % HS4);
                }
            }
            for (var i = 0u; i < nl; i++) {
                let e = lid + i * NT;
                var lv = 0.0;
                var dvv = 0.0;
                if ((NLW || e < BC) && iN + e < T) {
                    lv = stats[sb + iN + e];
                    dvv = stats[BNT + sb + iN + e];
                }
                pl[i] = lv;
                pd[i] = dvv;
            }
        }
        // sJ, gJ: scores / dP of query tx + J*TX for the 4 key rows
        var s0 = z4; var s1 = z4; var s2 = z4; var s3 = z4;
        for (var d4 = 0u; d4 < nd4; d4++) {
            let a0 = Ks[r0 + d4];
            let a1 = Ks[r0 + KS4 + d4];
            let a2 = Ks[r0 + 2u * KS4 + d4];
            let a3 = Ks[r0 + 3u * KS4 + d4];
            let ax = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
            let ay = vec4<f32>(a0.y, a1.y, a2.y, a3.y);
            let az = vec4<f32>(a0.z, a1.z, a2.z, a3.z);
            let aw = vec4<f32>(a0.w, a1.w, a2.w, a3.w);
            let e0 = Qs[tx * KS4 + d4];
            let e1 = Qs[(tx + TX) * KS4 + d4];
            let e2 = Qs[(tx + 2u * TX) * KS4 + d4];
            let e3 = Qs[(tx + 3u * TX) * KS4 + d4];
            s0 = fma(ax, vec4<f32>(e0.x), s0); s0 = fma(ay, vec4<f32>(e0.y), s0);
            s0 = fma(az, vec4<f32>(e0.z), s0); s0 = fma(aw, vec4<f32>(e0.w), s0);
            s1 = fma(ax, vec4<f32>(e1.x), s1); s1 = fma(ay, vec4<f32>(e1.y), s1);
            s1 = fma(az, vec4<f32>(e1.z), s1); s1 = fma(aw, vec4<f32>(e1.w), s1);
            s2 = fma(ax, vec4<f32>(e2.x), s2); s2 = fma(ay, vec4<f32>(e2.y), s2);
            s2 = fma(az, vec4<f32>(e2.z), s2); s2 = fma(aw, vec4<f32>(e2.w), s2);
            s3 = fma(ax, vec4<f32>(e3.x), s3); s3 = fma(ay, vec4<f32>(e3.y), s3);
            s3 = fma(az, vec4<f32>(e3.z), s3); s3 = fma(aw, vec4<f32>(e3.w), s3);
        }
        var g0 = z4; var g1 = z4; var g2 = z4; var g3 = z4;
        for (var d4 = 0u; d4 < nd4; d4++) {
            let a0 = Vs[r0 + d4];
            let a1 = Vs[r0 + KS4 + d4];
            let a2 = Vs[r0 + 2u * KS4 + d4];
            let a3 = Vs[r0 + 3u * KS4 + d4];
            let ax = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
            let ay = vec4<f32>(a0.y, a1.y, a2.y, a3.y);
            let az = vec4<f32>(a0.z, a1.z, a2.z, a3.z);
            let aw = vec4<f32>(a0.w, a1.w, a2.w, a3.w);
            let e0 = Gs[tx * KS4 + d4];
            let e1 = Gs[(tx + TX) * KS4 + d4];
            let e2 = Gs[(tx + 2u * TX) * KS4 + d4];
            let e3 = Gs[(tx + 3u * TX) * KS4 + d4];
            g0 = fma(ax, vec4<f32>(e0.x), g0); g0 = fma(ay, vec4<f32>(e0.y), g0);
            g0 = fma(az, vec4<f32>(e0.z), g0); g0 = fma(aw, vec4<f32>(e0.w), g0);
            g1 = fma(ax, vec4<f32>(e1.x), g1); g1 = fma(ay, vec4<f32>(e1.y), g1);
            g1 = fma(az, vec4<f32>(e1.z), g1); g1 = fma(aw, vec4<f32>(e1.w), g1);
            g2 = fma(ax, vec4<f32>(e2.x), g2); g2 = fma(ay, vec4<f32>(e2.y), g2);
            g2 = fma(az, vec4<f32>(e2.z), g2); g2 = fma(aw, vec4<f32>(e2.w), g2);
            g3 = fma(ax, vec4<f32>(e3.x), g3); g3 = fma(ay, vec4<f32>(e3.y), g3);
            g3 = fma(az, vec4<f32>(e3.z), g3); g3 = fma(aw, vec4<f32>(e3.w), g3);
        }
        // p, ds where key <= query < T, else 0
        let z = vec4<f32>(0.0);
        let qa = i0 + tx;
        let qb = qa + TX;
        let qc = qa + 2u * TX;
        let qd = qa + 3u * TX;
        let m0 = (keys <= vec4<u32>(qa)) & vec4<bool>(qa < T);
        let m1 = (keys <= vec4<u32>(qb)) & vec4<bool>(qb < T);
        let m2 = (keys <= vec4<u32>(qc)) & vec4<bool>(qc < T);
        let m3 = (keys <= vec4<u32>(qd)) & vec4<bool>(qd < T);
        let p0 = select(z, exp(s0 - vec4<f32>(Lt[tx])), m0);
        let p1 = select(z, exp(s1 - vec4<f32>(Lt[tx + TX])), m1);
        let p2 = select(z, exp(s2 - vec4<f32>(Lt[tx + 2u * TX])), m2);
        let p3 = select(z, exp(s3 - vec4<f32>(Lt[tx + 3u * TX])), m3);
        Pt[tx * PS4 + ty] = p0;
        Pt[(tx + TX) * PS4 + ty] = p1;
        Pt[(tx + 2u * TX) * PS4 + ty] = p2;
        Pt[(tx + 3u * TX) * PS4 + ty] = p3;
        St[tx * PS4 + ty] = p0 * (g0 - vec4<f32>(Dt[tx]));
        St[(tx + TX) * PS4 + ty] = p1 * (g1 - vec4<f32>(Dt[tx + TX]));
        St[(tx + 2u * TX) * PS4 + ty] = p2 * (g2 - vec4<f32>(Dt[tx + 2u * TX]));
        St[(tx + 3u * TX) * PS4 + ty] = p3 * (g3 - vec4<f32>(Dt[tx + 3u * TX]));
        //!drop let e0 = tt_drop_mul4(dkey, vec4<u32>((sb + qa) * T) + keys); // mask of (query, keys)
        //!drop let e1 = tt_drop_mul4(dkey, vec4<u32>((sb + qb) * T) + keys);
        //!drop let e2 = tt_drop_mul4(dkey, vec4<u32>((sb + qc) * T) + keys);
        //!drop let e3 = tt_drop_mul4(dkey, vec4<u32>((sb + qd) * T) + keys);
        //!drop Pt[tx * PS4 + ty] = p0 * e0;
        //!drop Pt[(tx + TX) * PS4 + ty] = p1 * e1;
        //!drop Pt[(tx + 2u * TX) * PS4 + ty] = p2 * e2;
        //!drop Pt[(tx + 3u * TX) * PS4 + ty] = p3 * e3;
        //!drop St[tx * PS4 + ty] = p0 * (g0 * e0 - vec4<f32>(Dt[tx]));
        //!drop St[(tx + TX) * PS4 + ty] = p1 * (g1 * e1 - vec4<f32>(Dt[tx + TX]));
        //!drop St[(tx + 2u * TX) * PS4 + ty] = p2 * (g2 * e2 - vec4<f32>(Dt[tx + 2u * TX]));
        //!drop St[(tx + 3u * TX) * PS4 + ty] = p3 * (g3 * e3 - vec4<f32>(Dt[tx + 3u * TX]));
        workgroupBarrier();
        // dv += P^T dY, dk += dS^T Q (masked entries add exact zeros)
        for (var c = 0u; c < nbc; c++) {
            let p = Pt[c * PS4 + ty];
            let d = St[c * PS4 + ty];
            let px = vec4<f32>(p.x);
            let py = vec4<f32>(p.y);
            let pz = vec4<f32>(p.z);
            let pw = vec4<f32>(p.w);
            let dx = vec4<f32>(d.x);
            let dyy = vec4<f32>(d.y);
            let dz = vec4<f32>(d.z);
            let dw = vec4<f32>(d.w);
            let cr = c * KS4;
            let w0 = Gs[cr + c0];
            let u0 = Qs[cr + c0];
            v00 = fma(px, w0, v00); v01 = fma(py, w0, v01); v02 = fma(pz, w0, v02); v03 = fma(pw, w0, v03);
            k00 = fma(dx, u0, k00); k01 = fma(dyy, u0, k01); k02 = fma(dz, u0, k02); k03 = fma(dw, u0, k03);
            if (OB > 1u) {
                let w1 = Gs[cr + c1];
                let u1 = Qs[cr + c1];
                v10 = fma(px, w1, v10); v11 = fma(py, w1, v11); v12 = fma(pz, w1, v12); v13 = fma(pw, w1, v13);
                k10 = fma(dx, u1, k10); k11 = fma(dyy, u1, k11); k12 = fma(dz, u1, k12); k13 = fma(dw, u1, k13);
            }
            if (OB > 2u) {
                let w2 = Gs[cr + c2];
                let u2 = Qs[cr + c2];
                v20 = fma(px, w2, v20); v21 = fma(py, w2, v21); v22 = fma(pz, w2, v22); v23 = fma(pw, w2, v23);
                k20 = fma(dx, u2, k20); k21 = fma(dyy, u2, k21); k22 = fma(dz, u2, k22); k23 = fma(dw, u2, k23);
            }
            if (OB > 3u) {
                let w3 = Gs[cr + c3];
                let u3 = Qs[cr + c3];
                v30 = fma(px, w3, v30); v31 = fma(py, w3, v31); v32 = fma(pz, w3, v32); v33 = fma(pw, w3, v33);
                k30 = fma(dx, u3, k30); k31 = fma(dyy, u3, k31); k32 = fma(dz, u3, k32); k33 = fma(dw, u3, k33);
            }
        }
    }
    let sc = a.scale;
    let ka = keys.x;
    st4(0u, ka, db0, hb, b, k00 * sc); st4(0u, ka + 1u, db0, hb, b, k01 * sc);
    st4(0u, ka + 2u, db0, hb, b, k02 * sc); st4(0u, ka + 3u, db0, hb, b, k03 * sc);
    st4(1u, ka, db0, hb, b, v00); st4(1u, ka + 1u, db0, hb, b, v01);
    st4(1u, ka + 2u, db0, hb, b, v02); st4(1u, ka + 3u, db0, hb, b, v03);
    if (OB > 1u) {
        st4(0u, ka, db1, hb, b, k10 * sc); st4(0u, ka + 1u, db1, hb, b, k11 * sc);
        st4(0u, ka + 2u, db1, hb, b, k12 * sc); st4(0u, ka + 3u, db1, hb, b, k13 * sc);
        st4(1u, ka, db1, hb, b, v10); st4(1u, ka + 1u, db1, hb, b, v11);
        st4(1u, ka + 2u, db1, hb, b, v12); st4(1u, ka + 3u, db1, hb, b, v13);
    }
    if (OB > 2u) {
        st4(0u, ka, db2, hb, b, k20 * sc); st4(0u, ka + 1u, db2, hb, b, k21 * sc);
        st4(0u, ka + 2u, db2, hb, b, k22 * sc); st4(0u, ka + 3u, db2, hb, b, k23 * sc);
        st4(1u, ka, db2, hb, b, v20); st4(1u, ka + 1u, db2, hb, b, v21);
        st4(1u, ka + 2u, db2, hb, b, v22); st4(1u, ka + 3u, db2, hb, b, v23);
    }
    if (OB > 3u) {
        st4(0u, ka, db3, hb, b, k30 * sc); st4(0u, ka + 1u, db3, hb, b, k31 * sc);
        st4(0u, ka + 2u, db3, hb, b, k32 * sc); st4(0u, ka + 3u, db3, hb, b, k33 * sc);
        st4(1u, ka, db3, hb, b, v30); st4(1u, ka + 1u, db3, hb, b, v31);
        st4(1u, ka + 2u, db3, hb, b, v32); st4(1u, ka + 3u, db3, hb, b, v33);
    }
}
