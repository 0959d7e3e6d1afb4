// matmul.wgsl — C(M,N) [+]= op(A)(M,K) · op(B)(K,N) [+ bias(N)] [+ R(M,N)]
//   op(A) = A (row-major M x K, lda) or, TRANS_A, A stored K x M (lda);
//   op(B) = B (row-major K x N, ldb) or, TRANS_B, B stored N x K (ldb).
// Prefix constants: BM, BN (block tile), BK (k step, 16), TM, TN (outputs per
// thread, multiples of 4), TRANS_A, TRANS_B, VEC (A and B offsets and leading
// dimensions are multiples of 4: global loads as vec4 through the A4/B4
// views of the same buffers). Workgroup (BN/TN, BM/TM).
//
// Shared tiles hold op(A) as As[k][m/4] and op(B) as Bs[k][n/4] (vec4), so a
// thread reads its rows/columns as vec4 broadcasts. A thread owns TM x TN
// outputs as (TM/4) x (TN/4) blocks of 4x4 spread over the tile (block r
// covers rows r*BM/(TM/4) + ty*4 ..). The next k tile is loaded into
// registers while the current one is multiplied. Out-of-range elements load
// as 0 and are not stored, so any M, N, K work.
//
// Split-K: workgroup z handles k in [z*kchunk, min(K, (z+1)*kchunk)) and,
// when the grid has z > 1, writes its partial product to C at
// c_off + z*M*N without the epilogue (a colsum_final pass adds the slices).
// flags: 1 accumulate into C, 2 add bias, 4 add R.
struct Args {
    M: u32, N: u32, K: u32, lda: u32,
    ldb: u32, ldc: u32, a_off: u32, b_off: u32,
    c_off: u32, bias_off: u32, r_off: u32, flags: u32,
    kchunk: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> Cm: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;
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

var<workgroup> As: array<vec4<f32>, BK * BM4>;
var<workgroup> Bs: array<vec4<f32>, BK * BN4>;

fn sA(m: u32, k: u32) -> f32 {
    if (m >= a.M || k >= a.K) { return 0.0; }
    if (TRANS_A) { return A[a.a_off + k * a.lda + m]; }
    return A[a.a_off + m * a.lda + k];
}

fn sB(k: u32, n: u32) -> f32 {
    if (k >= a.K || n >= a.N) { return 0.0; }
    if (TRANS_B) { return B[a.b_off + n * a.ldb + k]; }
    return B[a.b_off + k * a.ldb + n];
}

// Slot e of the A tile, as 4 values contiguous in memory:
//   TRANS_A: op(A)(m..m+3, k) with kk = e / BM4, m = 4 (e % BM4)
//   else:    op(A)(m, k..k+3) with m = e / BK4, k = 4 (e % BK4)
fn loadA(e: u32, m0: u32, k0: u32, kend: u32) -> vec4<f32> {
    if (TRANS_A) {
        let m = m0 + 4u * (e % BM4);
        let k = k0 + e / BM4;
        if (k >= kend) { return vec4<f32>(0.0); }
        if (VEC && m + 3u < a.M) { return A4[(a.a_off + k * a.lda + m) >> 2u]; }
        return vec4<f32>(sA(m, k), sA(m + 1u, k), sA(m + 2u, k), sA(m + 3u, k));
    }
    let m = m0 + e / BK4;
    let k = k0 + 4u * (e % BK4);
    if (VEC && m < a.M && k + 3u < kend) { return A4[(a.a_off + m * a.lda + k) >> 2u]; }
    return vec4<f32>(select(0.0, sA(m, k), k < kend), select(0.0, sA(m, k + 1u), k + 1u < kend),
                     select(0.0, sA(m, k + 2u), k + 2u < kend), select(0.0, sA(m, k + 3u), k + 3u < kend));
}

fn storeA(e: u32, v: vec4<f32>) {
    if (TRANS_A) {
        As[(e / BM4) * BM4 + e % BM4] = v;
        return;
    }
    let m = e / BK4;
    let kk = 4u * (e % BK4);
    let i = (m >> 2u);
    let c = m & 3u;
    As[kk * BM4 + i][c] = v.x;
    As[(kk + 1u) * BM4 + i][c] = v.y;
    As[(kk + 2u) * BM4 + i][c] = v.z;
    As[(kk + 3u) * BM4 + i][c] = v.w;
}

//   !TRANS_B: op(B)(k, n..n+3) with kk = e / BN4, n = 4 (e % BN4)
//   TRANS_B:  op(B)(k..k+3, n) with n = e / BK4, k = 4 (e % BK4)
fn loadB(e: u32, n0: u32, k0: u32, kend: u32) -> vec4<f32> {
    if (!TRANS_B) {
        let n = n0 + 4u * (e % BN4);
        let k = k0 + e / BN4;
        if (k >= kend) { return vec4<f32>(0.0); }
        if (VEC && n + 3u < a.N) { return B4[(a.b_off + k * a.ldb + n) >> 2u]; }
        return vec4<f32>(sB(k, n), sB(k, n + 1u), sB(k, n + 2u), sB(k, n + 3u));
    }
    let n = n0 + e / BK4;
    let k = k0 + 4u * (e % BK4);
    if (VEC && n < a.N && k + 3u < kend) { return B4[(a.b_off + n * a.ldb + k) >> 2u]; }
    return vec4<f32>(select(0.0, sB(k, n), k < kend), select(0.0, sB(k + 1u, n), k + 1u < kend),
                     select(0.0, sB(k + 2u, n), k + 2u < kend), select(0.0, sB(k + 3u, n), k + 3u < kend));
}

fn storeB(e: u32, v: vec4<f32>) {
    if (!TRANS_B) {
        Bs[(e / BN4) * BN4 + e % BN4] = v;
        return;
    }
    let n = e / BK4;
    let kk = 4u * (e % BK4);
    let i = (n >> 2u);
    let c = n & 3u;
    Bs[kk * BN4 + i][c] = v.x;
    Bs[(kk + 1u) * BN4 + i][c] = v.y;
    Bs[(kk + 2u) * BN4 + i][c] = v.z;
    Bs[(kk + 3u) * BN4 + i][c] = v.w;
}

@compute @workgroup_size(TX, TY, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tx = lid3.x;
    let ty = lid3.y;
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let kbeg = wid.z * a.kchunk;
    let kend = min(a.K, kbeg + a.kchunk);
    var acc: array<vec4<f32>, TM * RN>;
    for (var i = 0u; i < TM * RN; i++) { acc[i] = vec4<f32>(0.0); }
    var ra: array<vec4<f32>, LA>;
    var rb: array<vec4<f32>, LB>;
    for (var i = 0u; i < LA; i++) { ra[i] = loadA(lid + i * NT, m0, kbeg, kend); }
    for (var i = 0u; i < LB; i++) { rb[i] = loadB(lid + i * NT, n0, kbeg, kend); }

    for (var k0 = kbeg; k0 < kend; k0 += BK) {
        workgroupBarrier();
        for (var i = 0u; i < LA; i++) { storeA(lid + i * NT, ra[i]); }
        for (var i = 0u; i < LB; i++) { storeB(lid + i * NT, rb[i]); }
        workgroupBarrier();
        if (k0 + BK < kend) {
            for (var i = 0u; i < LA; i++) { ra[i] = loadA(lid + i * NT, m0, k0 + BK, kend); }
            for (var i = 0u; i < LB; i++) { rb[i] = loadB(lid + i * NT, n0, k0 + BK, kend); }
        }
        for (var kk = 0u; kk < BK; kk++) {
            var av: array<vec4<f32>, RM>;
            var bv: array<vec4<f32>, RN>;
            for (var r = 0u; r < RM; r++) { av[r] = As[kk * BM4 + r * (BM4 / RM) + ty]; }
            for (var c = 0u; c < RN; c++) { bv[c] = Bs[kk * BN4 + c * (BN4 / RN) + tx]; }
            for (var r = 0u; r < RM; r++) {
                for (var i = 0u; i < 4u; i++) {
                    let av_i = vec4<f32>(av[r][i]);
                    for (var c = 0u; c < RN; c++) {
                        acc[(r * 4u + i) * RN + c] = fma(av_i, bv[c], acc[(r * 4u + i) * RN + c]);
                    }
                }
            }
        }
    }

    let split = nwg.z > 1u;
    let cbase = a.c_off + wid.z * a.M * a.N;
    for (var r = 0u; r < RM; r++) {
        for (var i = 0u; i < 4u; i++) {
            let m = m0 + r * (BM / RM) + ty * 4u + i;
            if (m >= a.M) { continue; }
            for (var c = 0u; c < RN; c++) {
                let nb = n0 + c * (BN / RN) + tx * 4u;
                let v4 = acc[(r * 4u + i) * RN + c];
                for (var j = 0u; j < 4u; j++) {
                    let n = nb + j;
                    if (n >= a.N) { break; }
                    var v = v4[j];
                    if (split) {
                        Cm[cbase + m * a.N + n] = v;
                        continue;
                    }
                    if ((a.flags & 2u) != 0u) { v += bias[a.bias_off + n]; }
                    if ((a.flags & 4u) != 0u) { v += R[a.r_off + m * a.ldc + n]; }
                    let ci = a.c_off + m * a.ldc + n;
                    if ((a.flags & 1u) != 0u) { v += Cm[ci]; }
                    Cm[ci] = v;
                }
            }
        }
    }
}
