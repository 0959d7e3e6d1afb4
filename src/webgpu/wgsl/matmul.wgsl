// matmul.wgsl — C(M,N) [+]= op(A)(M,K) · op(B)(K,N) [+ bias(N)] [+ R(M,N)]
//   op(A) = A (row-major M x K, lda) or, TRANS_A, A stored K x M (lda);
//   op(B) = B (row-major K x N, ldb) or, TRANS_B, B stored N x K (ldb).
// Prefix constants: BM, BN (block tile), BK (k step), TM, TN (outputs per
// thread, 4 or 8), TRANS_A, TRANS_B, VEC (A and B offsets and leading
// dimensions are multiples of 4: global loads as vec4 through the A4/B4
// views of the same buffers), STAGES (1 or 2 shared-memory stages), SWZ
// (swizzled shared tiles). Workgroup (BN/TN, BM/TM). The planner
// (src/webgpu/matmul.c tt_gop_mm_kcfg) gives the 128 tile 8x8 outputs per
// thread and plain shared tiles, BK 16 in one stage or, B transposed, BK 8
// in two stages; the 64 and 32 tiles 4x4 outputs, two stages and swizzled
// tiles.
//
// Shared tiles hold op(A) as As[k][m/4] and op(B) as Bs[k][n/4] (vec4), so a
// thread reads its rows/columns as vec4 broadcasts. AK (neither operand
// transposed: the forward products) holds A as it lies in memory instead,
// As[m][k/4]: each loaded vec4 is stored whole (no scattering transpose, which
// cost these products ~20% on an H100), and a thread reads its 4 rows at a k
// quad as 4 vec4 every 4 k steps, taking the k-th components (the same values
// in the same fma order: bit-identical). A thread owns TM x TN
// outputs as (TM/4) x (TN/4) blocks of 4x4 spread over the tile (block r
// covers rows r*BM/(TM/4) + ty*4 ..; TM, TN are 4 or 8). The next k tile is
// loaded into registers while the current one is multiplied; the BK steps
// over one tile are unrolled on GPUs (//!unroll, expanded by gpu_ops.c).
// Out-of-range elements load as 0 and are not stored, so any M, N, K work.
//
// Every output is one fma chain over k in increasing order (within a split
// slice), starting from 0: STAGES, SWZ and TM change where values sit and
// when they are loaded, never that order, so the tile configurations give
// bit-identical results (k positions past the slice end load 0 in both
// operands and add an exact 0).
//   STAGES 2: the prefetched tile is stored into the other stage after the
//         multiply, one barrier per k tile instead of two.
//   SWZ:  conflict-free transposing stores: non-transposed A (forward X.W)
//         and transposed B (backward dY.W^T) are scattered into 4 k-rows
//         with scalar stores whose banks would collide 4-way (row stride BM
//         floats = 0 mod 32 banks); column i of k-row kk is stored at
//         i ^ sw(kk) instead (a permutation within each aligned 8 vec4, so
//         the vec4 reads stay conflict-free).
//
// Shared-memory reads in the k loop index with forms Dawn's robustness
// transform can bound (constants, local ids, + * / %): the stage offset is
// (st % STAGES) * SA and a swizzled column is taken % BM4 (BN4) — both no-ops
// on the value — so a browser compiles them without clamps (the XOR, or a
// plain var, would each get a clamp: 10-15% of these products on an H100).
//
// C (and R) are contiguous: row stride N.
//
// Batches: nprod products of one shape and plan in one dispatch (the q, k,
// v projections and their weight gradients): product p shares A, reads B
// at b_off + p*bstride and bias at bias_off + p*bstride, and writes its C
// at c_off + p*cstride, reading R at r_off + p*cstride (cstride >= M*N:
// M*N when the outputs follow each other, more when each weight gradient
// is followed by its bias's). Workgroup z = slice*nprod + p: product p,
// split-K slice z / nprod. Every output is computed exactly as by a
// dispatch of its product alone (nprod = 1: that dispatch).
//
// Split-K: slice s handles k in [s*kchunk, min(K, (s+1)*kchunk)) and, when
// the product is split (grid z > nprod), writes its partial product to C
// at c_off + z*M*N without the epilogue (scratch: slices of nprod products
// each, so the reduction sees slices of nprod*M*N contiguous outputs;
// matmul_colsum_final or matmul_splitk_reduce adds the slices into the
// products' C at their stride cstride).
// flags: 1 accumulate into C, 2 add bias, 4 add R.
//
// Ones row (bias gradients folded into a weight-gradient product): op(A)
// stores only am <= M rows; rows am .. M-1 of op(A) read as 1.0, so output
// row am is the column sum of op(B) (db = 1^T dout) — computed by the same
// tiles, in the same fixed order. am = M when unused.
//
// Interior tiles: a workgroup whose tile lies wholly in range (rows < am,
// columns < N, VEC, K and the split slice multiples of BK: a condition
// uniform over the workgroup) runs a second copy of the k loop whose loads
// have no bounds checks or selects, from vec4 indices computed once and
// advanced by a constant per k tile, and a tile wholly inside C stores
// without per-element checks. The same values reach the same fma chains
// and the epilogue adds bias, R and C in the same order: bit-identical to
// the checked path, which the edge tiles keep.

//!include matmul_common
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(6) var<storage, read> A4: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> B4: array<vec4<f32>>;

const TX: u32 = BN / TN;
const TY: u32 = BM / TM;
const NT: u32 = TX * TY;
const RM: u32 = TM / 4u;
const RN: u32 = TN / 4u;
const BM4: u32 = BM / 4u;
const BN4: u32 = BN / 4u;
const BK4: u32 = BK / 4u;
const LA: u32 = BK * BM4 / NT;  // vec4 slots of the A tile per thread
const LB: u32 = BK * BN4 / NT;

const SA: u32 = BK * BM4;       // vec4 of one stage of the A tile
const SB: u32 = BK * BN4;
const SWG: u32 = 32u / BK;
const AK: bool = !TRANS_A && !TRANS_B; // the forward products: A tile row-major (below)      // vec4 columns one warp's transposing store touches per k-row

// the workgroup's product: offsets of its B, bias, C and R (main sets them)
var<private> b_off: u32;
var<private> bias_off: u32;
var<private> c_off: u32;
var<private> r_off: u32;

var<workgroup> As: array<SV, STAGES * SA>;
var<workgroup> Bs: array<SV, STAGES * SB>;

// SWZ: vec4 column i of k-row kk is stored at column i ^ sw(kk) (< 8, so
// the permutation stays inside each aligned group of 8 columns; BM4, BN4 >= 8).
// A warp's transposing store covers SWG columns of 4 k-rows (BK 16): sw
// spreads them over all 32 banks.
fn sw(kk: u32) -> u32 {
    if (SWZ) { return ((kk >> 2u) & (BK4 - 1u)) * SWG; }
    return 0u;
}

fn sA(m: u32, k: u32) -> f32 {
    if (m >= a.M || k >= a.K) { return 0.0; }
    if (m >= a.am) { return 1.0; }
    if (TRANS_A) { return A[a.a_off + k * a.lda + m]; }
    return A[a.a_off + m * a.lda + k];
}

fn sB(k: u32, n: u32) -> f32 {
    if (k >= a.K || n >= a.N) { return 0.0; }
    if (TRANS_B) { return B[b_off + n * a.ldb + k]; }
    return B[b_off + k * a.ldb + n];
}

// Slot e of the A tile, as 4 values contiguous in memory:
//   TRANS_A: op(A)(m..m+3, k) with kk = e / BM4, m = 4 (e % BM4)
//   else:    op(A)(m, k..k+3) with m = e / BK4, k = 4 (e % BK4)
fn loadA(e: u32, m0: u32, k0: u32, kend: u32) -> vec4<f32> {
    if (TRANS_A) {
        let m = m0 + 4u * (e % BM4);
        let k = k0 + e / BM4;
        if (k >= kend) { return vec4<f32>(0.0); }
        if (VEC && m + 3u < a.am) { return A4[(a.a_off + k * a.lda + m) >> 2u]; }
        return vec4<f32>(sA(m, k), sA(m + 1u, k), sA(m + 2u, k), sA(m + 3u, k));
    }
    let m = m0 + e / BK4;
    let k = k0 + 4u * (e % BK4);
    if (VEC && m < a.am && k + 3u < kend) { return A4[(a.a_off + m * a.lda + k) >> 2u]; }
    return vec4<f32>(select(0.0, sA(m, k), k < kend), select(0.0, sA(m, k + 1u), k + 1u < kend),
                     select(0.0, sA(m, k + 2u), k + 2u < kend), select(0.0, sA(m, k + 3u), k + 3u < kend));
}

// so: first vec4 of the stage (0 or SA)
fn storeA(e: u32, v: vec4<f32>, so: u32) {
    if (TRANS_A) {
        let kk = e / BM4;
        As[so + kk * BM4 + ((e % BM4) ^ sw(kk))] = SV(v);
        return;
    }
    if (AK) {  // row m = e / BK4, k quad e % BK4: the slot's own place
        As[so + e] = SV(v);
        return;
    }
    let m = e / BK4;
    let kk = 4u * (e % BK4);
    let i = (m >> 2u) ^ sw(kk);  // sw(kk) = sw(kk + 1..3)
    let c = m & 3u;
    As[so + kk * BM4 + i][c] = SE(v.x);
    As[so + (kk + 1u) * BM4 + i][c] = SE(v.y);
    As[so + (kk + 2u) * BM4 + i][c] = SE(v.z);
    As[so + (kk + 3u) * BM4 + i][c] = SE(v.w);
}

//   !TRANS_B: op(B)(k, n..n+3) with kk = e / BN4, n = 4 (e % BN4)
//   TRANS_B:  op(B)(k..k+3, n) with n = e / BK4, k = 4 (e % BK4)
fn loadB(e: u32, n0: u32, k0: u32, kend: u32) -> vec4<f32> {
    if (!TRANS_B) {
        let n = n0 + 4u * (e % BN4);
        let k = k0 + e / BN4;
        if (k >= kend) { return vec4<f32>(0.0); }
        if (VEC && n + 3u < a.N) { return B4[(b_off + k * a.ldb + n) >> 2u]; }
        return vec4<f32>(sB(k, n), sB(k, n + 1u), sB(k, n + 2u), sB(k, n + 3u));
    }
    let n = n0 + e / BK4;
    let k = k0 + 4u * (e % BK4);
    if (VEC && n < a.N && k + 3u < kend) { return B4[(b_off + n * a.ldb + k) >> 2u]; }
    return vec4<f32>(select(0.0, sB(k, n), k < kend), select(0.0, sB(k + 1u, n), k + 1u < kend),
                     select(0.0, sB(k + 2u, n), k + 2u < kend), select(0.0, sB(k + 3u, n), k + 3u < kend));
}

fn storeB(e: u32, v: vec4<f32>, so: u32) {
    if (!TRANS_B) {
        let kk = e / BN4;
        Bs[so + kk * BN4 + ((e % BN4) ^ sw(kk))] = SV(v);
        return;
    }
    let n = e / BK4;
    let kk = 4u * (e % BK4);
    let i = (n >> 2u) ^ sw(kk);
    let c = n & 3u;
    Bs[so + kk * BN4 + i][c] = SE(v.x);
    Bs[so + (kk + 1u) * BN4 + i][c] = SE(v.y);
    Bs[so + (kk + 2u) * BN4 + i][c] = SE(v.z);
    Bs[so + (kk + 3u) * BN4 + i][c] = SE(v.w);
}

// One output row of 4 (m, nb..nb+3) of a thread: split-K slice store, or
// the epilogue (bias, R, accumulate).
fn store4(m: u32, nb: u32, v4: vec4<f32>, split: bool, cbase: u32) {
    if (m >= a.M) { return; }
    for (var j = 0u; j < 4u; j++) {
        let n = nb + j;
        if (n >= a.N) { break; }
        var v = v4[j];
        if (split) {
            Cm[cbase + m * a.N + n] = v;
            continue;
        }
        if ((a.flags & 2u) != 0u) { v += bias[bias_off + n]; }
        if ((a.flags & 4u) != 0u) { v += R[r_off + m * a.N + n]; }
        let ci = c_off + m * a.N + n;
        if ((a.flags & 1u) != 0u) { v += Cm[ci]; }
        Cm[ci] = v;
    }
}

// store4 of a row wholly in range (m < M, nb + 3 < N): no checks, the
// same additions in the same order.
fn store4f(m: u32, nb: u32, v4: vec4<f32>, split: bool, cbase: u32) {
    if (split) {
        let si = cbase + m * a.N + nb;
        Cm[si] = v4.x;
        Cm[si + 1u] = v4.y;
        Cm[si + 2u] = v4.z;
        Cm[si + 3u] = v4.w;
        return;
    }
    var v = v4;
    if ((a.flags & 2u) != 0u) {
        let bi = bias_off + nb;
        v += vec4<f32>(bias[bi], bias[bi + 1u], bias[bi + 2u], bias[bi + 3u]);
    }
    let ci = c_off + m * a.N + nb;
    if ((a.flags & 4u) != 0u) {
        let ri = r_off + m * a.N + nb;
        v += vec4<f32>(R[ri], R[ri + 1u], R[ri + 2u], R[ri + 3u]);
    }
    if ((a.flags & 1u) != 0u) { v += vec4<f32>(Cm[ci], Cm[ci + 1u], Cm[ci + 2u], Cm[ci + 3u]); }
    Cm[ci] = v.x;
    Cm[ci + 1u] = v.y;
    Cm[ci + 2u] = v.z;
    Cm[ci + 3u] = v.w;
}

// Store every output of the thread (fast: the workgroup's tile is wholly in
// range).
fn store_all(fast: bool, m: u32, nc: u32, v: vec4<f32>, split: bool, cbase: u32) {
    if (fast) { store4f(m, nc, v, split, cbase); } else { store4(m, nc, v, split, cbase); }
}

// The register tile is written out by hand (no arrays indexed by loop
// variables: the accumulators stay in registers whatever the driver's
// unroller does). cRC_i: block row r, block column c, row i of the 4x4 block.
// RM, RN are 1 or 2 (TM, TN 4 or 8). The k loop is written twice: the
// checked one (any tile) and the unchecked one (interior tiles).
@compute @workgroup_size(TX, TY, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tx = lid3.x;
    let ty = lid3.y;
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let prod = wid.z % a.nprod;
    b_off = a.b_off + prod * a.bstride;
    bias_off = a.bias_off + prod * a.bstride;
    c_off = a.c_off + prod * a.cstride;
    r_off = a.r_off + prod * a.cstride;
    let kbeg = (wid.z / a.nprod) * a.kchunk;
    let kend = min(a.K, kbeg + a.kchunk);
    // the tile wholly in range (uniform over the workgroup): every load a
    // plain vec4, every k tile full
    let full = VEC && m0 + BM <= a.am && n0 + BN <= a.N && a.K % BK == 0u && a.kchunk % BK == 0u;
    // vec4 index of the thread's first A and B slot at kbeg; slot i adds
    // i * da (db), each k tile adds ka (kb)
    let ia = select((a.a_off + (m0 + lid / BK4) * a.lda + kbeg + 4u * (lid % BK4)) >> 2u,
                    (a.a_off + (kbeg + lid / BM4) * a.lda + m0 + 4u * (lid % BM4)) >> 2u, TRANS_A);
    let da = select((NT / BK4) * (a.lda >> 2u), (NT / BM4) * (a.lda >> 2u), TRANS_A);
    let ka = select(BK4, BK * (a.lda >> 2u), TRANS_A);
    let ib = select((b_off + (kbeg + lid / BN4) * a.ldb + n0 + 4u * (lid % BN4)) >> 2u,
                    (b_off + (n0 + lid / BK4) * a.ldb + kbeg + 4u * (lid % BK4)) >> 2u, TRANS_B);
    let db = select((NT / BN4) * (a.ldb >> 2u), (NT / BK4) * (a.ldb >> 2u), TRANS_B);
    let kb = select(BK * (a.ldb >> 2u), BK4, TRANS_B);
    let z4 = vec4<f32>(0.0);
    var c000 = z4; var c001 = z4; var c002 = z4; var c003 = z4;
    var c010 = z4; var c011 = z4; var c012 = z4; var c013 = z4;
    var c100 = z4; var c101 = z4; var c102 = z4; var c103 = z4;
    var c110 = z4; var c111 = z4; var c112 = z4; var c113 = z4;
    // AK: the thread's A rows at the current k quad (x: block row 0, y: block row 1)
    var x0 = z4; var x1 = z4; var x2 = z4; var x3 = z4;
    var y0 = z4; var y1 = z4; var y2 = z4; var y3 = z4;
    var ra: array<vec4<f32>, LA>;
    var rb: array<vec4<f32>, LB>;
    if (full) {
        for (var i = 0u; i < LA; i++) { ra[i] = A4[ia + i * da]; }
        for (var i = 0u; i < LB; i++) { rb[i] = B4[ib + i * db]; }
    } else {
        for (var i = 0u; i < LA; i++) { ra[i] = loadA(lid + i * NT, m0, kbeg, kend); }
        for (var i = 0u; i < LB; i++) { rb[i] = loadB(lid + i * NT, n0, kbeg, kend); }
    }

    // STAGES 1: barrier, store the prefetched tile, barrier, multiply.
    // STAGES 2: the tile in stage st is multiplied while the next one is
    // stored into the other stage (last read one iteration earlier, before
    // the barrier that ends it): one barrier per k tile.
    var st = 0u;
    if (STAGES == 2u) {
        for (var i = 0u; i < LA; i++) { storeA(lid + i * NT, ra[i], 0u); }
        for (var i = 0u; i < LB; i++) { storeB(lid + i * NT, rb[i], 0u); }
        workgroupBarrier();
    }
    if (full) {
        var pa = ia;
        var pb = ib;
        for (var k0 = kbeg; k0 < kend; k0 += BK) {
            let more = k0 + BK < kend;
            if (STAGES == 1u) {
                workgroupBarrier();
                for (var i = 0u; i < LA; i++) { storeA(lid + i * NT, ra[i], 0u); }
                for (var i = 0u; i < LB; i++) { storeB(lid + i * NT, rb[i], 0u); }
                workgroupBarrier();
            }
            if (more) {
                pa += ka;
                pb += kb;
                for (var i = 0u; i < LA; i++) { ra[i] = A4[pa + i * da]; }
                for (var i = 0u; i < LB; i++) { rb[i] = B4[pb + i * db]; }
            }
            let sa = (st % STAGES) * SA;
            let sb = (st % STAGES) * SB;
        //!unroll kk BK
        {
            let s = sw(kk);
            if (AK && kk % 4u == 0u) {
                let r0 = sa + ty * 4u * BK4 + kk / 4u;
                x0 = vec4<f32>(As[r0]);
                x1 = vec4<f32>(As[r0 + BK4]);
                x2 = vec4<f32>(As[r0 + 2u * BK4]);
                x3 = vec4<f32>(As[r0 + 3u * BK4]);
                if (RM == 2u) {
                    let r1 = r0 + (BM / 2u) * BK4;
                    y0 = vec4<f32>(As[r1]);
                    y1 = vec4<f32>(As[r1 + BK4]);
                    y2 = vec4<f32>(As[r1 + 2u * BK4]);
                    y3 = vec4<f32>(As[r1 + 3u * BK4]);
                }
            }
            let j = kk % 4u;
            let a0 = select(vec4<f32>(As[sa + kk * BM4 + ((ty ^ s) % BM4)]), vec4<f32>(x0[j], x1[j], x2[j], x3[j]), AK);
            let b0 = vec4<f32>(Bs[sb + kk * BN4 + ((tx ^ s) % BN4)]);
            c000 = fma(vec4<f32>(a0.x), b0, c000);
            c001 = fma(vec4<f32>(a0.y), b0, c001);
            c002 = fma(vec4<f32>(a0.z), b0, c002);
            c003 = fma(vec4<f32>(a0.w), b0, c003);
            if (RN == 2u) {
                let b1 = vec4<f32>(Bs[sb + kk * BN4 + (((BN4 / 2u + tx) ^ s) % BN4)]);
                c010 = fma(vec4<f32>(a0.x), b1, c010);
                c011 = fma(vec4<f32>(a0.y), b1, c011);
                c012 = fma(vec4<f32>(a0.z), b1, c012);
                c013 = fma(vec4<f32>(a0.w), b1, c013);
            }
            if (RM == 2u) {
                let a1 = select(vec4<f32>(As[sa + kk * BM4 + (((BM4 / 2u + ty) ^ s) % BM4)]), vec4<f32>(y0[j], y1[j], y2[j], y3[j]), AK);
                c100 = fma(vec4<f32>(a1.x), b0, c100);
                c101 = fma(vec4<f32>(a1.y), b0, c101);
                c102 = fma(vec4<f32>(a1.z), b0, c102);
                c103 = fma(vec4<f32>(a1.w), b0, c103);
                if (RN == 2u) {
                    let b1 = vec4<f32>(Bs[sb + kk * BN4 + (((BN4 / 2u + tx) ^ s) % BN4)]);
                    c110 = fma(vec4<f32>(a1.x), b1, c110);
                    c111 = fma(vec4<f32>(a1.y), b1, c111);
                    c112 = fma(vec4<f32>(a1.z), b1, c112);
                    c113 = fma(vec4<f32>(a1.w), b1, c113);
                }
            }
        }
            if (STAGES == 2u) {
                if (more) {
                    for (var i = 0u; i < LA; i++) { storeA(lid + i * NT, ra[i], (1u - st) * SA); }
                    for (var i = 0u; i < LB; i++) { storeB(lid + i * NT, rb[i], (1u - st) * SB); }
                }
                workgroupBarrier();
                st = 1u - st;
            }
        }
    } else {
        for (var k0 = kbeg; k0 < kend; k0 += BK) {
            let more = k0 + BK < kend;
            if (STAGES == 1u) {
                workgroupBarrier();
                for (var i = 0u; i < LA; i++) { storeA(lid + i * NT, ra[i], 0u); }
                for (var i = 0u; i < LB; i++) { storeB(lid + i * NT, rb[i], 0u); }
                workgroupBarrier();
            }
            if (more) {
                for (var i = 0u; i < LA; i++) { ra[i] = loadA(lid + i * NT, m0, k0 + BK, kend); }
                for (var i = 0u; i < LB; i++) { rb[i] = loadB(lid + i * NT, n0, k0 + BK, kend); }
            }
            let sa = (st % STAGES) * SA;
            let sb = (st % STAGES) * SB;
        //!unroll kk BK
        {
            let s = sw(kk);
            if (AK && kk % 4u == 0u) {
                let r0 = sa + ty * 4u * BK4 + kk / 4u;
                x0 = vec4<f32>(As[r0]);
                x1 = vec4<f32>(As[r0 + BK4]);
                x2 = vec4<f32>(As[r0 + 2u * BK4]);
                x3 = vec4<f32>(As[r0 + 3u * BK4]);
                if (RM == 2u) {
                    let r1 = r0 + (BM / 2u) * BK4;
                    y0 = vec4<f32>(As[r1]);
                    y1 = vec4<f32>(As[r1 + BK4]);
                    y2 = vec4<f32>(As[r1 + 2u * BK4]);
                    y3 = vec4<f32>(As[r1 + 3u * BK4]);
                }
            }
            let j = kk % 4u;
            let a0 = select(vec4<f32>(As[sa + kk * BM4 + ((ty ^ s) % BM4)]), vec4<f32>(x0[j], x1[j], x2[j], x3[j]), AK);
            let b0 = vec4<f32>(Bs[sb + kk * BN4 + ((tx ^ s) % BN4)]);
            c000 = fma(vec4<f32>(a0.x), b0, c000);
            c001 = fma(vec4<f32>(a0.y), b0, c001);
            c002 = fma(vec4<f32>(a0.z), b0, c002);
            c003 = fma(vec4<f32>(a0.w), b0, c003);
            if (RN == 2u) {
                let b1 = vec4<f32>(Bs[sb + kk * BN4 + (((BN4 / 2u + tx) ^ s) % BN4)]);
                c010 = fma(vec4<f32>(a0.x), b1, c010);
                c011 = fma(vec4<f32>(a0.y), b1, c011);
                c012 = fma(vec4<f32>(a0.z), b1, c012);
                c013 = fma(vec4<f32>(a0.w), b1, c013);
            }
            if (RM == 2u) {
                let a1 = select(vec4<f32>(As[sa + kk * BM4 + (((BM4 / 2u + ty) ^ s) % BM4)]), vec4<f32>(y0[j], y1[j], y2[j], y3[j]), AK);
                c100 = fma(vec4<f32>(a1.x), b0, c100);
                c101 = fma(vec4<f32>(a1.y), b0, c101);
                c102 = fma(vec4<f32>(a1.z), b0, c102);
                c103 = fma(vec4<f32>(a1.w), b0, c103);
                if (RN == 2u) {
                    let b1 = vec4<f32>(Bs[sb + kk * BN4 + (((BN4 / 2u + tx) ^ s) % BN4)]);
                    c110 = fma(vec4<f32>(a1.x), b1, c110);
                    c111 = fma(vec4<f32>(a1.y), b1, c111);
                    c112 = fma(vec4<f32>(a1.z), b1, c112);
                    c113 = fma(vec4<f32>(a1.w), b1, c113);
                }
            }
        }
            if (STAGES == 2u) {
                if (more) {
                    for (var i = 0u; i < LA; i++) { storeA(lid + i * NT, ra[i], (1u - st) * SA); }
                    for (var i = 0u; i < LB; i++) { storeB(lid + i * NT, rb[i], (1u - st) * SB); }
                }
                workgroupBarrier();
                st = 1u - st;
            }
        }
    }

    let split = nwg.z > a.nprod;
    let cbase = a.c_off + wid.z * a.M * a.N;
    let mr = m0 + ty * 4u;
    let nc = n0 + tx * 4u;
    let fast = m0 + BM <= a.M && n0 + BN <= a.N;
    store_all(fast, mr, nc, c000, split, cbase);
    store_all(fast, mr + 1u, nc, c001, split, cbase);
    store_all(fast, mr + 2u, nc, c002, split, cbase);
    store_all(fast, mr + 3u, nc, c003, split, cbase);
    if (RN == 2u) {
        store_all(fast, mr, nc + BN / 2u, c010, split, cbase);
        store_all(fast, mr + 1u, nc + BN / 2u, c011, split, cbase);
        store_all(fast, mr + 2u, nc + BN / 2u, c012, split, cbase);
        store_all(fast, mr + 3u, nc + BN / 2u, c013, split, cbase);
    }
    if (RM == 2u) {
        let mr1 = mr + BM / 2u;
        store_all(fast, mr1, nc, c100, split, cbase);
        store_all(fast, mr1 + 1u, nc, c101, split, cbase);
        store_all(fast, mr1 + 2u, nc, c102, split, cbase);
        store_all(fast, mr1 + 3u, nc, c103, split, cbase);
        if (RN == 2u) {
            store_all(fast, mr1, nc + BN / 2u, c110, split, cbase);
            store_all(fast, mr1 + 1u, nc + BN / 2u, c111, split, cbase);
            store_all(fast, mr1 + 2u, nc + BN / 2u, c112, split, cbase);
            store_all(fast, mr1 + 3u, nc + BN / 2u, c113, split, cbase);
        }
    }
}
