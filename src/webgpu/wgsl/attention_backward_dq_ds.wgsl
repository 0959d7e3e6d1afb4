// attention_backward_dq_ds.wgsl — causal attention backward, dq from the
// dS tiles that attention_backward_dkdv stored (its dS-storing variant;
// planned by src/webgpu/attention.c: attention_backward_d, then dkdv, then
// this): dq_i = scale * sum_{j<=i} ds_ij k_j, one product, no exp, no S or
// dP recomputed.
// attention_backward_dq's layout and order exactly: one workgroup per
// (block of BR query rows, h, b), tiles of BC key rows (K and the BC x BR
// dS tile) staged in workgroup memory, two halves of NT threads, thread
// (ty, tx) of half hf owns query rows 4ty..4ty+3 x d-blocks
// tx + (hf + 2m)*TX (m < OB2), per key one vec4 dS load + vec4 K loads into
// named vec4 accumulators. So every dq element is the same fma chain over
// the same keys (0 .. the block's last key tile) as attention_backward_dq
// computes, on the same dS values wherever dS is nonzero: bit-identical
// where the two kernels' dS agree (attention.c says when).
// dS: scratch dsb, block (qb, kb) (DSG x DSG) of slice z = b*NH + h at vec4
// (z * nb(nb+1)/2 + qb(qb+1)/2 + kb) * DSG*DSG/4, nb = ceil(T/DSG), inside
// [key][query/4]; entries with key > row or row >= T are read as exact
// zeros (select: whatever the scratch holds there), as
// attention_backward_dq's mask writes them.
// Grid (ceil(T/BR), NH, B) (block nwg.x-1-wid.x: the longest rows first),
// workgroup 2 NT. Prefix: HS, BR, BC, OB, VEC, DYN, PF, DSG.
// PF (prefix): the next K tile's NK2 slots and dS tile's NS2 slots per
// thread are loaded into registers right after the barrier that makes the
// current tile visible and stored at the top of the next iteration;
// bit-identical with PF off.
// Bounds (robustness off): K loads as attention_backward_dq; dS reads at
// rows < ceil(T/BR)*BR <= nb*DSG and keys below the row block's diagonal
// block's end (DSG is a multiple of BR and BC), so kb <= qb < nb.
//!include attention_common
@group(0) @binding(4) var<storage, read> dsb: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> dq: array<f32>;

var<workgroup> Ks: array<vec4<f32>, BC * KS4>;
var<workgroup> St: array<vec4<f32>, BC * PS4>;

const NT2: u32 = 2u * NT;  // the workgroup: both halves
const OB2: u32 = (OB + 1u) / 2u;
// PF: a thread's vec4 slots of a streamed K tile (NK2, args nk under DYN)
// and of a dS tile (NS2: BC keys x BR4 row groups, args p9 under DYN)
const NK2: u32 = (BC * HS4 + NT2 - 1u) / NT2;
const NKW2: bool = NK2 * NT2 == BC * HS4;
const NS2: u32 = (BC * BR4 + NT2 - 1u) / NT2;
const NSW2: bool = NS2 * NT2 == BC * BR4;

fn st4(row: u32, db: u32, hb: u32, b: u32, x: vec4<f32>) {
    if (row >= a.T || db >= HS4) { return; }
    let base = (b * a.T + row) * a.C + hb + 4u * db;
    for (var c = 0u; c < 4u; c++) {
        if (4u * db + c < HS) { dq[a.o1_off + base + c] = x[c]; }
    }
}

// dS of rows i0 + 4 t4 .. +3 against key j from slice base zb (blocks);
// exact zeros where key > row or row >= T
fn ld_ds(zb: u32, i0: u32, t4: u32, j: u32) -> vec4<f32> {
    let i = i0 + 4u * t4;
    let qb = i / DSG;
    let x = dsb[(zb + qb * (qb + 1u) / 2u + j / DSG) * (DSG * DSG / 4u) + (j % DSG) * (DSG / 4u) + (i % DSG) / 4u];
    let rows = vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u);
    return select(vec4<f32>(0.0), x, (rows < vec4<u32>(a.T)) & (vec4<u32>(j) <= rows));
}

@compute @workgroup_size(NT2)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    // DYN (CPU adapters): run-time loop bounds (attention.c bounds()), equal
    // to the constants, so the loops stay in bounds
    let nd4 = select(HS4, a.nd4, DYN);
    let nbc = select(BC, a.nbc, DYN);
    let nk = select(NK2, a.nk, DYN);
    let ns = select(NS2, a.p9, DYN);
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let i0 = (nwg.x - 1u - wid.x) * BR; // the longest rows (most key tiles) start first
    let hf = lid / NT;
    let l = lid % NT;
    let tx = l % TX;
    let ty = l / TX;
    let nb = (T + DSG - 1u) / DSG;
    let zb = (b * a.NH + h) * (nb * (nb + 1u) / 2u);
    let ra = i0 + 4u * ty;
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
    var ps: array<vec4<f32>, NS2>;
    if (PF) {
        for (var i = 0u; i < nk; i++) {
            let e = lid + i * NT2;
            if (NKW2 || e < BC * HS4) { pk[i] = ld_k(b, e / HS4, hb, e % HS4); }
        }
        for (var i = 0u; i < ns; i++) {
            let e = lid + i * NT2;
            if (NSW2 || e < BC * BR4) { ps[i] = ld_ds(zb, i0, e % BR4, e / BR4); }
        }
    }
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        workgroupBarrier(); // previous tile's readers of Ks, St done
        if (PF) {
            for (var i = 0u; i < nk; i++) {
                let e = lid + i * NT2;
                if (NKW2 || e < BC * HS4) { Ks[(e / HS4) * KS4 + e % HS4] = pk[i]; }
            }
            for (var i = 0u; i < ns; i++) {
                let e = lid + i * NT2;
                if (NSW2 || e < BC * BR4) { St[(e / BR4) * PS4 + e % BR4] = ps[i]; }
            }
        } else {
            for (var e = lid; e < nbc * nd4; e += NT2) {
                let r = e / HS4;
                let d4 = e % HS4;
                Ks[r * KS4 + d4] = ld_k(b, j0 + r, hb, d4);
            }
            for (var e = lid; e < nbc * BR4; e += NT2) {
                St[(e / BR4) * PS4 + e % BR4] = ld_ds(zb, i0, e % BR4, j0 + e / BR4);
            }
        }
        workgroupBarrier();
        if (PF && tile + 1u < n_tiles) {
            let jn = j0 + BC;
            for (var i = 0u; i < nk; i++) {
                let e = lid + i * NT2;
                if (NKW2 || e < BC * HS4) { pk[i] = ld_k(b, jn + e / HS4, hb, e % HS4); }
            }
            for (var i = 0u; i < ns; i++) {
                let e = lid + i * NT2;
                if (NSW2 || e < BC * BR4) { ps[i] = ld_ds(zb, i0, e % BR4, jn + e / BR4); }
            }
        }
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
    if (hf < OB) {
        st4(ra, db0, hb, b, o00 * sc); st4(ra + 1u, db0, hb, b, o01 * sc);
        st4(ra + 2u, db0, hb, b, o02 * sc); st4(ra + 3u, db0, hb, b, o03 * sc);
    }
    if (OB2 > 1u && hf + 2u < OB) {
        st4(ra, db1, hb, b, o10 * sc); st4(ra + 1u, db1, hb, b, o11 * sc);
        st4(ra + 2u, db1, hb, b, o12 * sc); st4(ra + 3u, db1, hb, b, o13 * sc);
    }
}
