// matmul_sgmat.wgsl — the matmul of matmul.wgsl (the same Args, grid,
// batches, split-K slices and epilogue) on subgroup matrices (tensor cores
// where the device has them): f16 operands, f32 accumulation. The f16 tier
// (TT_PRECISION_F16) picks it where the adapter lists an f16 x f16 -> f32
// configuration SM x SN x SK and runs subgroups of one size SG
// (src/webgpu/matmul.c).
//
// Operands: f16 copies made by matmul_cast.wgsl just before (A at a_off,
// product p's B at b_off + p*am: here `am` is that stride, the copy having
// folded in any ones rows), zero-padded to whole BM x BN tiles and to k
// multiples of 16, laid out as the f32 operands were (lda, ldb: the copies'
// row strides): op(A) and op(B) are loaded straight from storage, a
// transposed operand as a column-major matrix. No bounds checks: the
// padding reads as 0.
//
// One subgroup per workgroup owns a BM x BN = (TM*SM) x (TN*SN) block of C
// as TM x TN result matrices (the builtins' offsets are uniform over the
// subgroup: they come from the workgroup id and the loop counter alone).
// Prefix: "enable f16;", "enable chromium_experimental_subgroup_matrix;",
// SM, SN, SK, TM, TN, TMN (= TM*TN), SG, TRANS_A, TRANS_B.
//
// Output: a block wholly inside C whose product is split (a partial
// product into the split-K scratch) or has no epilogue is stored straight
// from the result matrices; any other goes through workgroup memory
// (SM x SN at a time) to matmul.wgsl's epilogue: a split slice writes its
// partial product, else bias, R and C are added in that order.
//
// Every output is the f32 sum of exact f16 x f16 products; the order of the
// additions inside a multiply-accumulate is the device's.
//!include matmul_common
@group(0) @binding(1) var<storage, read> A: array<f16>;
@group(0) @binding(2) var<storage, read> B: array<f16>;

const BM: u32 = TM * SM;
const BN: u32 = TN * SN;
var<workgroup> Ct: array<f32, SM * SN>;  // one result matrix on its way to the epilogue

alias LeftT = subgroup_matrix_left<f16, SK, SM>;
alias RightT = subgroup_matrix_right<f16, SN, SK>;
alias ResultT = subgroup_matrix_result<f32, SN, SM>;

@compute @workgroup_size(SG, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let prod = wid.z % a.nprod;
    let boff = a.b_off + prod * a.am;
    let kbeg = (wid.z / a.nprod) * a.kchunk;
    let kend = min(a.K, kbeg + a.kchunk);
    var acc: array<ResultT, TMN>;
    var la: array<LeftT, TM>;
    var lb: array<RightT, TN>;
    for (var k = kbeg; k < kend; k += SK) {
        //!unroll i TM
        {
            let m = m0 + i * SM;
            la[i] = subgroupMatrixLoad<LeftT>(&A, a.a_off + select(m * a.lda + k, k * a.lda + m, TRANS_A), TRANS_A,
                                              a.lda);
        }
        //!unroll j TN
        {
            let n = n0 + j * SN;
            lb[j] = subgroupMatrixLoad<RightT>(&B, boff + select(k * a.ldb + n, n * a.ldb + k, TRANS_B), TRANS_B,
                                               a.ldb);
        }
        //!unroll t TMN
        {
            acc[t] = subgroupMatrixMultiplyAccumulate(la[t / TN], lb[t % TN], acc[t]);
        }
    }
    let split = nwg.z > a.nprod;
    let cbase = a.c_off + wid.z * a.M * a.N;  // a split slice's partial product
    let c_off = a.c_off + prod * a.cstride;
    if ((split || a.flags == 0u) && m0 + BM <= a.M && n0 + BN <= a.N) {
        let base = select(c_off, cbase, split);
        //!unroll t TMN
        {
            subgroupMatrixStore(&Cm, base + (m0 + (t / TN) * SM) * a.N + n0 + (t % TN) * SN, acc[t], false, a.N);
        }
        return;
    }
    let r_off = a.r_off + prod * a.cstride;
    let bias_off = a.bias_off + prod * a.bstride;
    //!unroll t TMN
    {
        subgroupMatrixStore(&Ct, 0u, acc[t], false, SN);
        workgroupBarrier();
        for (var e = lid; e < SM * SN; e += SG) {
            let m = m0 + (t / TN) * SM + e / SN;
            let n = n0 + (t % TN) * SN + e % SN;
            if (m < a.M && n < a.N) {
                var v = Ct[e];
                if (split) {
                    Cm[cbase + m * a.N + n] = v;
                } else {
                    if ((a.flags & 2u) != 0u) { v += bias[bias_off + n]; }
                    if ((a.flags & 4u) != 0u) { v += R[r_off + m * a.N + n]; }
                    let ci = c_off + m * a.N + n;
                    if ((a.flags & 1u) != 0u) { v += Cm[ci]; }
                    Cm[ci] = v;
                }
            }
        }
        workgroupBarrier();
    }
}
