// matmul_sgmat.wgsl — the matmul of matmul.wgsl (the same Args, bindings,
// grid, batches, split-K slices, ones rows and epilogue) on subgroup
// matrices: f16 operands, f32 accumulation, for devices that list an
// f16 x f16 -> f32 subgroup-matrix configuration of M16 N16 K16 and run
// subgroups of exactly 32 (the f16 tier, TT_PRECISION_F16; matmul.c picks
// it by capability). Prefix: "enable f16;", "enable
// chromium_experimental_subgroup_matrix;", TRANS_A, TRANS_B, KT (k tiles of
// 16 per stage).
//
// One subgroup (32 invocations) per workgroup owns a 64 x 64 tile of C as
// 4 x 4 result matrices of 16 x 16 (the subgroup-matrix builtins take
// offsets that are uniform over the subgroup: here they come from the
// workgroup id and loop counters alone). Per stage of BK = 16*KT k: the
// invocations load op(A) (64 x BK) and op(B) (BK x 64) from f32 storage,
// rounded to f16 into workgroup tiles As [m][k] and Bs [k][n] (out of range
// 0, ones rows 1.0), then multiply-accumulate from them. The result goes
// through workgroup memory Cs (64 x 64 f32) to the epilogue, which is
// matmul.wgsl's: a split slice writes its partial product, else bias, R
// and C are added in that order.
//
// Every output is the f32 sum of exact f16 x f16 products; the order of the
// additions inside a multiply-accumulate is the device's (not the plain
// kernels' fma chain).

struct Args {
    M: u32, N: u32, K: u32, lda: u32,
    ldb: u32, cstride: u32, a_off: u32, b_off: u32,
    c_off: u32, bias_off: u32, r_off: u32, flags: u32,
    kchunk: u32, am: u32, nprod: u32, bstride: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> Cm: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;
@group(0) @binding(6) var<storage, read> A4: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> B4: array<vec4<f32>>;

const T: u32 = 64u;        // tile
const BK: u32 = 16u * KT;  // k per stage
const SG: u32 = 32u;       // invocations: one subgroup

var<workgroup> As: array<f16, T * BK>;  // op(A) tile, [m][k], row stride BK
var<workgroup> Bs: array<f16, BK * T>;  // op(B) tile, [k][n], row stride T
var<workgroup> Cs: array<f32, T * T>;   // the result tile, [m][n]

fn opA(m: u32, k: u32, kend: u32) -> f32 {
    if (m >= a.M || k >= kend) { return 0.0; }
    if (m >= a.am) { return 1.0; }
    if (TRANS_A) { return A[a.a_off + k * a.lda + m]; }
    return A[a.a_off + m * a.lda + k];
}

fn opB(boff: u32, k: u32, n: u32, kend: u32) -> f32 {
    if (k >= kend || n >= a.N) { return 0.0; }
    if (TRANS_B) { return B[boff + n * a.ldb + k]; }
    return B[boff + k * a.ldb + n];
}

@compute @workgroup_size(32, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let m0 = wid.y * T;
    let n0 = wid.x * T;
    let prod = wid.z % a.nprod;
    let boff = a.b_off + prod * a.bstride;
    let kbeg = (wid.z / a.nprod) * a.kchunk;
    let kend = min(a.K, kbeg + a.kchunk);
    var c00 = subgroup_matrix_result<f32, 16, 16>(); var c01 = subgroup_matrix_result<f32, 16, 16>();
    var c02 = subgroup_matrix_result<f32, 16, 16>(); var c03 = subgroup_matrix_result<f32, 16, 16>();
    var c10 = subgroup_matrix_result<f32, 16, 16>(); var c11 = subgroup_matrix_result<f32, 16, 16>();
    var c12 = subgroup_matrix_result<f32, 16, 16>(); var c13 = subgroup_matrix_result<f32, 16, 16>();
    var c20 = subgroup_matrix_result<f32, 16, 16>(); var c21 = subgroup_matrix_result<f32, 16, 16>();
    var c22 = subgroup_matrix_result<f32, 16, 16>(); var c23 = subgroup_matrix_result<f32, 16, 16>();
    var c30 = subgroup_matrix_result<f32, 16, 16>(); var c31 = subgroup_matrix_result<f32, 16, 16>();
    var c32 = subgroup_matrix_result<f32, 16, 16>(); var c33 = subgroup_matrix_result<f32, 16, 16>();
    for (var k0 = kbeg; k0 < kend; k0 += BK) {
        // the stage: element e of a tile, consecutive e along the operand's
        // contiguous dimension in memory
        for (var e = lid; e < T * BK; e += SG) {
            if (TRANS_A) {
                let m = e % T;
                let k = e / T;
                As[m * BK + k] = f16(opA(m0 + m, k0 + k, kend));
            } else {
                let m = e / BK;
                let k = e % BK;
                As[m * BK + k] = f16(opA(m0 + m, k0 + k, kend));
            }
            if (TRANS_B) {
                let n = e / BK;
                let k = e % BK;
                Bs[k * T + n] = f16(opB(boff, k0 + k, n0 + n, kend));
            } else {
                let n = e % T;
                let k = e / T;
                Bs[k * T + n] = f16(opB(boff, k0 + k, n0 + n, kend));
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, 0u * BK + kk, false, BK);
            let a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, 16u * BK + kk, false, BK);
            let a2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, 32u * BK + kk, false, BK);
            let a3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, 48u * BK + kk, false, BK);
            let b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, kk * T, false, T);
            let b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, kk * T + 16u, false, T);
            let b2 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, kk * T + 32u, false, T);
            let b3 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, kk * T + 48u, false, T);
            c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00); c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
            c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02); c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
            c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10); c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
            c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12); c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
            c20 = subgroupMatrixMultiplyAccumulate(a2, b0, c20); c21 = subgroupMatrixMultiplyAccumulate(a2, b1, c21);
            c22 = subgroupMatrixMultiplyAccumulate(a2, b2, c22); c23 = subgroupMatrixMultiplyAccumulate(a2, b3, c23);
            c30 = subgroupMatrixMultiplyAccumulate(a3, b0, c30); c31 = subgroupMatrixMultiplyAccumulate(a3, b1, c31);
            c32 = subgroupMatrixMultiplyAccumulate(a3, b2, c32); c33 = subgroupMatrixMultiplyAccumulate(a3, b3, c33);
        }
        workgroupBarrier();
    }
    subgroupMatrixStore(&Cs, 0u * T + 0u, c00, false, T); subgroupMatrixStore(&Cs, 0u * T + 16u, c01, false, T);
    subgroupMatrixStore(&Cs, 0u * T + 32u, c02, false, T); subgroupMatrixStore(&Cs, 0u * T + 48u, c03, false, T);
    subgroupMatrixStore(&Cs, 16u * T + 0u, c10, false, T); subgroupMatrixStore(&Cs, 16u * T + 16u, c11, false, T);
    subgroupMatrixStore(&Cs, 16u * T + 32u, c12, false, T); subgroupMatrixStore(&Cs, 16u * T + 48u, c13, false, T);
    subgroupMatrixStore(&Cs, 32u * T + 0u, c20, false, T); subgroupMatrixStore(&Cs, 32u * T + 16u, c21, false, T);
    subgroupMatrixStore(&Cs, 32u * T + 32u, c22, false, T); subgroupMatrixStore(&Cs, 32u * T + 48u, c23, false, T);
    subgroupMatrixStore(&Cs, 48u * T + 0u, c30, false, T); subgroupMatrixStore(&Cs, 48u * T + 16u, c31, false, T);
    subgroupMatrixStore(&Cs, 48u * T + 32u, c32, false, T); subgroupMatrixStore(&Cs, 48u * T + 48u, c33, false, T);
    workgroupBarrier();
    // the epilogue (matmul.wgsl store4): row by row, consecutive columns per invocation
    let split = nwg.z > a.nprod;
    let cbase = a.c_off + wid.z * a.M * a.N;
    let c_off = a.c_off + prod * a.cstride;
    let r_off = a.r_off + prod * a.cstride;
    let bias_off = a.bias_off + prod * a.bstride;
    for (var e = lid; e < T * T; e += SG) {
        let m = m0 + e / T;
        let n = n0 + e % T;
        if (m >= a.M || n >= a.N) { continue; }
        var v = Cs[e];
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
