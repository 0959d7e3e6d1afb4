// attention_backward_dq.wgsl — causal attention backward, part 1 (planned
// by src/webgpu/attention.c): D and dq.
// One workgroup per (block of BR query rows, h, b); the scaled Q block and
// the dY block stay in workgroup memory, K and V tiles of BC rows stream
// through it (tiles above the diagonal skipped). Threads (TY = BR/4) x
// (TX = BC/4), thread (ty, tx) owns query rows 4ty..4ty+3 and
//   S, dP:  4x4 register tiles against keys tx + j*TX (j < 4), vec4 over d
//           in workgroup memory (odd row stride KS4: conflict-free); per d4
//           8 vec4 loads feed 64 FMAs (two passes: S from Q, K; dP from dY, V)
//   dS:     p = exp(s - lse_i) (masked: 0), ds = p (dp - D_i), computed once
//           per element by its owner, stored as St[key][row/4] (vec4 over rows)
//   dq:     rows 4ty.. x d-blocks tx + jb*TX (jb < OB): per key one vec4 dS
//           load + OB vec4 K loads feed 16*OB FMAs; named vec4 accumulators
// Prologue: D_i = dy_i . y_i (one thread per row, d in order) is stored in
// stats[BNT + row] for attention_backward_dkdv (which runs next).
// dq_i = scale * sum_{j<=i} ds_ij k_j. stats = [lse (B*NH*T) | D (B*NH*T)].
// No atomics, fixed orders: deterministic.
// Grid (ceil(T/BR), NH, B) (block nwg.x-1-wid.x: the longest rows first),
// workgroup TX*TY. Prefix: HS, BR, BC, OB, VEC, DYN, PF.
// Tiles (attention.c), head size 64: 48 KiB: BR 64, BC 16, OB 4, 64
// threads, 47.3 KiB; 16 KiB: BR 8, BC 16, OB 4. ~8 FMAs per shared load,
// exp once per element.
// PF (prefix): the next K, V tile's NK slots per thread are loaded into
// pk/pv right after the barrier that makes the current tile visible and
// stored at the top of the next iteration (as attention_forward);
// bit-identical with PF off.
// Bounds (robustness off): as attention_forward; Ls/Ds [r < BR] all
// written before the barrier that precedes their reads; stats read at
// sb + i (i < T) and written at BNT + sb + i (< 2 BNT, the binding's size).
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// dS = P (M dP scale - D) with the forward's mask factors, recomputed.
//!include attention_common
@group(0) @binding(4) var<storage, read> y4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> dy4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

var<workgroup> Qs: array<vec4<f32>, BR * KS4>;
var<workgroup> Gs: array<vec4<f32>, BR * KS4>;
var<workgroup> Ks: array<vec4<f32>, BC * KS4>;
var<workgroup> Vs: array<vec4<f32>, BC * KS4>;
var<workgroup> St: array<vec4<f32>, BC * PS4>;
var<workgroup> Ls: array<f32, BR>;
var<workgroup> Ds: array<f32, BR>;

fn ld_y(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), y4[min(i, last_el()) >> 2u], t < a.T); }
    let j = el4(i); // clamped (attention_common)
    let x = vec4<f32>(y4[j.x >> 2u][j.x & 3u], y4[j.y >> 2u][j.y & 3u], y4[j.z >> 2u][j.z & 3u],
                      y4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
}
fn ld_dy(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    if (VEC) { return select(vec4<f32>(0.0), dy4[min(i, last_el()) >> 2u], t < a.T); }
    let j = el4(i); // clamped (attention_common)
    let x = vec4<f32>(dy4[j.x >> 2u][j.x & 3u], dy4[j.y >> 2u][j.y & 3u], dy4[j.z >> 2u][j.z & 3u],
                      dy4[j.w >> 2u][j.w & 3u]);
    return select(vec4<f32>(0.0), x, pad_mask(t, d4));
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
    let BNT = a.B * a.NH * T;
    let sb = (b * a.NH + h) * T;
    for (var e = lid; e < BR * HS4; e += NT) {
        let r = e / HS4;
        let d4 = e % HS4;
        Qs[r * KS4 + d4] = ld_q(b, i0 + r, hb, d4) * a.scale;
        Gs[r * KS4 + d4] = ld_dy(b, i0 + r, hb, d4);
    }
    workgroupBarrier();
    for (var r = lid; r < BR; r += NT) {
        let i = i0 + r;
        var Di = 0.0;
        var L = 0.0;
        if (i < T) {
            // one fma chain over d in order, as dP's below (for T = 1: ds = 0 exactly)
            for (var d4 = 0u; d4 < nd4; d4++) {
                let g = Gs[r * KS4 + d4];
                let yv = ld_y(b, i, hb, d4);
                Di = fma(g.x, yv.x, Di);
                Di = fma(g.y, yv.y, Di);
                Di = fma(g.z, yv.z, Di);
                Di = fma(g.w, yv.w, Di);
            }
            L = stats[sb + i];
        }
        if (i < T) { stats[BNT + sb + i] = Di; }
        Ls[r] = L;
        Ds[r] = Di;
    }
    workgroupBarrier();
    let lr = vec4<f32>(Ls[4u * ty], Ls[4u * ty + 1u], Ls[4u * ty + 2u], Ls[4u * ty + 3u]);
    let dr = vec4<f32>(Ds[4u * ty], Ds[4u * ty + 1u], Ds[4u * ty + 2u], Ds[4u * ty + 3u]);
    let rows = vec4<u32>(i0 + 4u * ty) + vec4<u32>(0u, 1u, 2u, 3u);
    let rvalid = rows < vec4<u32>(T);
    //!drop let dkey = tt_drop_key(a.p15);
    //!drop let drow = (vec4<u32>(sb) + rows) * T; // mask index of (row, key 0)
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
    var o00 = z4; var o01 = z4; var o02 = z4; var o03 = z4;
    var o10 = z4; var o11 = z4; var o12 = z4; var o13 = z4;
    var o20 = z4; var o21 = z4; var o22 = z4; var o23 = z4;
    var o30 = z4; var o31 = z4; var o32 = z4; var o33 = z4;
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
        workgroupBarrier(); // previous tile's readers of Ks, Vs, St done
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
        var g0 = z4; var g1 = z4; var g2 = z4; var g3 = z4;
        for (var d4 = 0u; d4 < nd4; d4++) {
            let q0 = Gs[r0 + d4];
            let q1 = Gs[r0 + KS4 + d4];
            let q2 = Gs[r0 + 2u * KS4 + d4];
            let q3 = Gs[r0 + 3u * KS4 + d4];
            let qx = vec4<f32>(q0.x, q1.x, q2.x, q3.x);
            let qy = vec4<f32>(q0.y, q1.y, q2.y, q3.y);
            let qz = vec4<f32>(q0.z, q1.z, q2.z, q3.z);
            let qw = vec4<f32>(q0.w, q1.w, q2.w, q3.w);
            let k0 = Vs[tx * KS4 + d4];
            let k1 = Vs[(tx + TX) * KS4 + d4];
            let k2 = Vs[(tx + 2u * TX) * KS4 + d4];
            let k3 = Vs[(tx + 3u * TX) * KS4 + d4];
            g0 = fma(qx, vec4<f32>(k0.x), g0); g0 = fma(qy, vec4<f32>(k0.y), g0);
            g0 = fma(qz, vec4<f32>(k0.z), g0); g0 = fma(qw, vec4<f32>(k0.w), g0);
            g1 = fma(qx, vec4<f32>(k1.x), g1); g1 = fma(qy, vec4<f32>(k1.y), g1);
            g1 = fma(qz, vec4<f32>(k1.z), g1); g1 = fma(qw, vec4<f32>(k1.w), g1);
            g2 = fma(qx, vec4<f32>(k2.x), g2); g2 = fma(qy, vec4<f32>(k2.y), g2);
            g2 = fma(qz, vec4<f32>(k2.z), g2); g2 = fma(qw, vec4<f32>(k2.w), g2);
            g3 = fma(qx, vec4<f32>(k3.x), g3); g3 = fma(qy, vec4<f32>(k3.y), g3);
            g3 = fma(qz, vec4<f32>(k3.z), g3); g3 = fma(qw, vec4<f32>(k3.w), g3);
        }
        // ds = p (dp - D) where key <= row < T, else 0
        let kj = j0 + tx;
        let z = vec4<f32>(0.0);
        St[tx * PS4 + ty] = select(z, exp(s0 - lr) * (g0 - dr), rvalid & (vec4<u32>(kj) <= rows));
        St[(tx + TX) * PS4 + ty] = select(z, exp(s1 - lr) * (g1 - dr), rvalid & (vec4<u32>(kj + TX) <= rows));
        St[(tx + 2u * TX) * PS4 + ty] = select(z, exp(s2 - lr) * (g2 - dr),
                                               rvalid & (vec4<u32>(kj + 2u * TX) <= rows));
        St[(tx + 3u * TX) * PS4 + ty] = select(z, exp(s3 - lr) * (g3 - dr),
                                               rvalid & (vec4<u32>(kj + 3u * TX) <= rows));
        //!drop St[tx * PS4 + ty] = select(z, exp(s0 - lr) * (g0 * tt_drop_mul4(dkey, drow + vec4<u32>(kj)) - dr),
        //!drop                             rvalid & (vec4<u32>(kj) <= rows));
        //!drop St[(tx + TX) * PS4 + ty] = select(z, exp(s1 - lr) * (g1 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + TX)) - dr),
        //!drop                                    rvalid & (vec4<u32>(kj + TX) <= rows));
        //!drop St[(tx + 2u * TX) * PS4 + ty] = select(z, exp(s2 - lr) * (g2 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + 2u * TX)) - dr),
        //!drop                                         rvalid & (vec4<u32>(kj + 2u * TX) <= rows));
        //!drop St[(tx + 3u * TX) * PS4 + ty] = select(z, exp(s3 - lr) * (g3 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + 3u * TX)) - dr),
        //!drop                                         rvalid & (vec4<u32>(kj + 3u * TX) <= rows));
        workgroupBarrier();
        // dq += dS K (masked entries add exact zeros)
        for (var c = 0u; c < nbc; c++) {
            let p = St[c * PS4 + ty];
            let px = vec4<f32>(p.x);
            let py = vec4<f32>(p.y);
            let pz = vec4<f32>(p.z);
            let pw = vec4<f32>(p.w);
            let kr = c * KS4;
            let w0 = Ks[kr + c0];
            o00 = fma(px, w0, o00); o01 = fma(py, w0, o01); o02 = fma(pz, w0, o02); o03 = fma(pw, w0, o03);
            if (OB > 1u) {
                let w1 = Ks[kr + c1];
                o10 = fma(px, w1, o10); o11 = fma(py, w1, o11); o12 = fma(pz, w1, o12); o13 = fma(pw, w1, o13);
            }
            if (OB > 2u) {
                let w2 = Ks[kr + c2];
                o20 = fma(px, w2, o20); o21 = fma(py, w2, o21); o22 = fma(pz, w2, o22); o23 = fma(pw, w2, o23);
            }
            if (OB > 3u) {
                let w3 = Ks[kr + c3];
                o30 = fma(px, w3, o30); o31 = fma(py, w3, o31); o32 = fma(pz, w3, o32); o33 = fma(pw, w3, o33);
            }
        }
    }
    let sc = a.scale;
    let ra = rows.x;
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
