// attention_backward_dq.wgsl — causal attention backward, part 1 (planned
// by src/webgpu/attention.c): D and dq.
// One workgroup per (block of BR query rows, h, b); tiles of BC key rows
// (K, V) stream through it (tiles above the diagonal skipped). Two halves
// (hf = 0, 1) of NT = (TY = BR/4) x (TX = BC/4) threads; thread (ty, tx) of
// a half owns query rows 4ty..4ty+3 and
//   hf 0:  S = Q K^T (4x4 register tile against keys tx + j*TX, vec4 over
//          d in workgroup memory, odd row stride KS4), stores
//          p = exp(s - lse_i) in St[key][row/4] at its tile positions
//   hf 1:  dP = dY V^T (the same tile); after a barrier reads back its
//          positions of St and writes ds = p (dp - D_i) (masked: 0)
//   both:  dq += dS K over d-blocks tx + (hf + 2m)*TX (m < OB2 = ceil(OB/2)):
//          per key one vec4 dS load + vec4 K loads; named vec4 accumulators
// Each element gets one owner and one fixed order of operations, whatever
// the thread count; splitting the pairs halves a thread's accumulators, so
// the workgroup runs 2 NT threads on the same workgroup memory.
// Prologue: D_i = dy_i . y_i (one thread per row, d in order) is stored in
// stats[BNT + row] for attention_backward_dkdv (which runs next).
// dq_i = scale * sum_{j<=i} ds_ij k_j. stats = [lse (B*NH*T) | D (B*NH*T)].
// No atomics, fixed orders: deterministic.
// Grid (ceil(T/BR), NH, B) (block nwg.x-1-wid.x: the longest rows first),
// workgroup 2 NT. Prefix: HS, BR, BC, OB, VEC, DYN, PF.
// Tiles (attention.c), head size 64: 48 KiB: BR 64, BC 16, OB 4, 128
// threads, 47.3 KiB; 16 KiB: BR 8, BC 16, OB 4.
// PF (prefix): the next K, V tile's NK2 slots per thread are loaded into
// pk/pv right after the barrier that makes the current tile visible and
// stored at the top of the next iteration (as attention_forward);
// bit-identical with PF off.
// Bounds (robustness off): as attention_forward; Ls/Ds [r < BR] all
// written before the barrier that precedes their reads; stats read at
// sb + i (i < T) and written at BNT + sb + i (< 2 BNT, the binding's size).
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// hf 1 recomputes the forward's mask factors M of its tile:
// dS = P (M dP scale - D).
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

const NT2: u32 = 2u * NT;  // the workgroup: both halves
const OB2: u32 = (OB + 1u) / 2u;
// PF: a thread's vec4 slots of a streamed K or V tile (args nk under DYN,
// attention.c bounds())
const NK2: u32 = (BC * HS4 + NT2 - 1u) / NT2;
const NKW2: bool = NK2 * NT2 == BC * HS4;

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
        if (4u * db + c < HS) { dq[a.o1_off + base + c] = x[c]; }
    }
}

@compute @workgroup_size(NT2)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    // DYN (CPU adapters): run-time loop bounds, so lavapipe's LLVM does not
    // fully unroll (compile time); GPUs get the constants. The arguments
    // equal the constants (attention.c bounds()), so the loops stay in bounds
    let nd4 = select(HS4, a.nd4, DYN);
    let nbc = select(BC, a.nbc, DYN);
    let nk = select(NK2, a.nk, DYN);
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let i0 = (nwg.x - 1u - wid.x) * BR; // the longest rows (most key tiles) start first
    let hf = lid / NT;   // 0: S, P; 1: dP, dS
    let l = lid % NT;
    let tx = l % TX;
    let ty = l / TX;
    let BNT = a.B * a.NH * T;
    let sb = (b * a.NH + h) * T;
    for (var e = lid; e < BR * HS4; e += NT2) {
        let r = e / HS4;
        let d4 = e % HS4;
        Qs[r * KS4 + d4] = ld_q(b, i0 + r, hb, d4) * a.scale;
        Gs[r * KS4 + d4] = ld_dy(b, i0 + r, hb, d4);
    }
    workgroupBarrier();
    for (var r = lid; r < BR; r += NT2) {
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
    // this thread's d-blocks of dq: tx + (hf + 2m)*TX, m < OB2
    let db0 = tx + hf * TX;
    let db1 = tx + (hf + 2u) * TX;
    let c0 = min(db0, HS4 - 1u);
    let c1 = min(db1, HS4 - 1u);
    let z4 = vec4<f32>(0.0);
    var o00 = z4; var o01 = z4; var o02 = z4; var o03 = z4;
    var o10 = z4; var o11 = z4; var o12 = z4; var o13 = z4;
    let n_tiles = (min(T, i0 + BR) - 1u) / BC + 1u;
    var pk: array<vec4<f32>, NK2>;
    var pv: array<vec4<f32>, NK2>;
    if (PF) {
        for (var i = 0u; i < nk; i++) {
            let e = lid + i * NT2;
            if (NKW2 || e < BC * HS4) {
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
                let e = lid + i * NT2;
                if (NKW2 || e < BC * HS4) {
                    Ks[(e / HS4) * KS4 + e % HS4] = pk[i];
                    Vs[(e / HS4) * KS4 + e % HS4] = pv[i];
                }
            }
        } else {
            for (var e = lid; e < nbc * nd4; e += NT2) {
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
                let e = lid + i * NT2;
                if (NKW2 || e < BC * HS4) {
                    pk[i] = ld_k(b, jn + e / HS4, hb, e % HS4);
                    pv[i] = ld_v(b, jn + e / HS4, hb, e % HS4);
                }
            }
        }
        // sJ: scores (hf 0) or dP (hf 1) of the 4 rows against key tx + J*TX
        var s0 = z4; var s1 = z4; var s2 = z4; var s3 = z4;
        if (hf == 0u) {
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
            // p = exp(s - lse), masked by hf 1 below
            St[tx * PS4 + ty] = exp(s0 - lr);
            St[(tx + TX) * PS4 + ty] = exp(s1 - lr);
            St[(tx + 2u * TX) * PS4 + ty] = exp(s2 - lr);
            St[(tx + 3u * TX) * PS4 + ty] = exp(s3 - lr);
        } else {
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
                s0 = fma(qx, vec4<f32>(k0.x), s0); s0 = fma(qy, vec4<f32>(k0.y), s0);
                s0 = fma(qz, vec4<f32>(k0.z), s0); s0 = fma(qw, vec4<f32>(k0.w), s0);
                s1 = fma(qx, vec4<f32>(k1.x), s1); s1 = fma(qy, vec4<f32>(k1.y), s1);
                s1 = fma(qz, vec4<f32>(k1.z), s1); s1 = fma(qw, vec4<f32>(k1.w), s1);
                s2 = fma(qx, vec4<f32>(k2.x), s2); s2 = fma(qy, vec4<f32>(k2.y), s2);
                s2 = fma(qz, vec4<f32>(k2.z), s2); s2 = fma(qw, vec4<f32>(k2.w), s2);
                s3 = fma(qx, vec4<f32>(k3.x), s3); s3 = fma(qy, vec4<f32>(k3.y), s3);
                s3 = fma(qz, vec4<f32>(k3.z), s3); s3 = fma(qw, vec4<f32>(k3.w), s3);
            }
        }
        workgroupBarrier();
        if (hf == 1u) {
            // ds = p (dp - D) where key <= row < T, else 0 (p from St, this thread's positions)
            let kj = j0 + tx;
            let z = vec4<f32>(0.0);
            let p0 = St[tx * PS4 + ty];
            let p1 = St[(tx + TX) * PS4 + ty];
            let p2 = St[(tx + 2u * TX) * PS4 + ty];
            let p3 = St[(tx + 3u * TX) * PS4 + ty];
            St[tx * PS4 + ty] = select(z, p0 * (s0 - dr), rvalid & (vec4<u32>(kj) <= rows));
            St[(tx + TX) * PS4 + ty] = select(z, p1 * (s1 - dr), rvalid & (vec4<u32>(kj + TX) <= rows));
            St[(tx + 2u * TX) * PS4 + ty] = select(z, p2 * (s2 - dr), rvalid & (vec4<u32>(kj + 2u * TX) <= rows));
            St[(tx + 3u * TX) * PS4 + ty] = select(z, p3 * (s3 - dr), rvalid & (vec4<u32>(kj + 3u * TX) <= rows));
            //!drop St[tx * PS4 + ty] = select(z, p0 * (s0 * tt_drop_mul4(dkey, drow + vec4<u32>(kj)) - dr),
            //!drop                             rvalid & (vec4<u32>(kj) <= rows));
            //!drop St[(tx + TX) * PS4 + ty] = select(z, p1 * (s1 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + TX)) - dr),
            //!drop                                    rvalid & (vec4<u32>(kj + TX) <= rows));
            //!drop St[(tx + 2u * TX) * PS4 + ty] = select(z, p2 * (s2 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + 2u * TX)) - dr),
            //!drop                                         rvalid & (vec4<u32>(kj + 2u * TX) <= rows));
            //!drop St[(tx + 3u * TX) * PS4 + ty] = select(z, p3 * (s3 * tt_drop_mul4(dkey, drow + vec4<u32>(kj + 3u * TX)) - dr),
            //!drop                                         rvalid & (vec4<u32>(kj + 3u * TX) <= rows));
        }
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
            if (OB2 > 1u) {
                let w1 = Ks[kr + c1];
                o10 = fma(px, w1, o10); o11 = fma(py, w1, o11); o12 = fma(pz, w1, o12); o13 = fma(pw, w1, o13);
            }
        }
    }
    let sc = a.scale;
    let ra = rows.x;
    if (hf < OB) {
        st4(ra, db0, hb, b, o00 * sc); st4(ra + 1u, db0, hb, b, o01 * sc);
        st4(ra + 2u, db0, hb, b, o02 * sc); st4(ra + 3u, db0, hb, b, o03 * sc);
    }
    if (OB2 > 1u && hf + 2u < OB) {
        st4(ra, db1, hb, b, o10 * sc); st4(ra + 1u, db1, hb, b, o11 * sc);
        st4(ra + 2u, db1, hb, b, o12 * sc); st4(ra + 3u, db1, hb, b, o13 * sc);
    }
}
