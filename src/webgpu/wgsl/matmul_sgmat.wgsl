// matmul_sgmat.wgsl — the matmul of matmul.wgsl (the same Args, grid,
// batches, split-K slices and epilogue) on subgroup matrices (tensor cores
// where the device has them): f16 operands, f32 accumulation. The f16 tier
// (TT_PRECISION_F16) picks it where the adapter lists an f16 x f16 -> f32
// configuration SM x SN x SK, runs subgroups of one size SG and has the
// subgroup_id builtin (src/webgpu/matmul.c).
//
// Operands: f16 copies made by matmul_cast.wgsl just before (A at a_off,
// product p's B at b_off + p*am: here `am` is that stride, the copy having
// folded in any ones rows), zero-padded to whole BM x BN blocks and to k
// multiples of 16, laid out as the f32 operands were (lda, ldb: the copies'
// row strides, multiples of 8), read 8 f16 at a time (vec4<u32>).
//
// WM x WN subgroups per workgroup share each k step's BM x BK tile of op(A)
// and BK x BN tile of op(B) in workgroup memory; every subgroup owns TM x TN
// result matrices of the workgroup's BM x BN = (WM*TM*SM) x (WN*TN*SN)
// block. Each tile lies in workgroup memory in parts, one per row (A) or
// column (B) of subgroups: the PM x BK rows of op(A) (BK x PN columns of
// op(B)) those subgroups multiply, as in storage (a transposed operand as
// its rows, loaded as a column-major matrix), rows padded by 8 f16. A
// subgroup loads its matrices from its own part at offsets of constants
// (the unrolled indices are WGSL constants): robustness then knows each
// load in bounds when the shader is made, where a load at an offset known
// only when it runs is wrapped in a bounds test (1.4-1.6x slower,
// docs/BENCHMARKS.md). The next k step's tiles are read into registers
// while the current ones are multiplied; a k step past the slice's end
// reads as zeros. The parts are arrays of 8-f16 chunks (vec4<u32>), read
// by the builtins' template form (majorness a template argument, offsets and
// strides counted in chunks; the worker passes a configuration only where
// WGSL takes it): each chunk goes into its part as one 16-byte store
// written out in main (1.03-1.19x faster than 8 f16 stores), its index made
// of the invocation index and constants only: Tint proves it in bounds and
// adds no clamp (through a helper taking the index, 1.3-1.6x slower).
// Prefix: "diagnostic(off, chromium.subgroup_matrix_uniformity);" (the
// builtins' offsets depend on subgroup_id: uniform over a subgroup, not
// over the workgroup), "enable f16;", "enable subgroups;",
// "enable chromium_experimental_subgroup_matrix;", SM, SN, SK, TM, TN, TMN
// (= TM*TN), SG, WM, WN, BK, AQ, BQ (8-f16 chunks of a tile per
// invocation), KQ (= BK / SK), TRANS_A, TRANS_B.
//
// Output: a block wholly inside C whose product is split (a partial
// product into the split-K scratch) or has no epilogue is stored straight
// from the result matrices; any other goes through workgroup memory
// (SM x SN per subgroup at a time) to matmul.wgsl's epilogue: a split slice
// writes its partial product, else bias, R and C are added in that order.
//
// Every output is the f32 sum of exact f16 x f16 products; the order of the
// additions inside a multiply-accumulate is the device's.
//!include matmul_common
@group(0) @binding(1) var<storage, read> A: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<u32>>;

const NSG: u32 = WM * WN;
const NT: u32 = NSG * SG;
const PM: u32 = TM * SM; // the rows of op(A) one row of subgroups multiplies
const PN: u32 = TN * SN; // the columns of op(B) one column of subgroups multiplies
const BM: u32 = WM * PM;
const BN: u32 = WN * PN;
const APR: u32 = select(PM, BK, TRANS_A); // a part of the A tile as stored: APR rows of APC
const APC: u32 = select(BK, PM, TRANS_A);
const BPR: u32 = select(BK, PN, TRANS_B);
const BPC: u32 = select(PN, BK, TRANS_B);
const ASTR: u32 = APC + 8u;
const BSTR: u32 = BPC + 8u;
const ACPP: u32 = APR * APC / 8u; // 8-f16 chunks per part
const BCPP: u32 = BPR * BPC / 8u;
const_assert ACPP % NT == 0u; // the chunks of one unrolled j lie in one part
const_assert BCPP % NT == 0u;
const_assert AQ * NT == WM * ACPP;
const_assert BQ * NT == WN * BCPP;
const_assert BK == KQ * SK;

const_assert ASTR % 8u == 0u && BSTR % 8u == 0u && SM % 8u == 0u && SN % 8u == 0u && SK % 8u == 0u;
// the majorness branch not taken, at offset 0, stays inside the part: a left matrix of SK columns (or
// SM rows) of ASTR, a right one of SN columns (or SK rows) of BSTR
const_assert SK <= APR && SM <= APR && SN <= BPR && SK <= BPR;

// the parts as 8-f16 chunks (vec4<u32>): a chunk goes in as one store; matrix offsets and strides count chunks
var<workgroup> As: array<array<vec4<u32>, APR * ASTR / 8u>, WM>;
var<workgroup> Bs: array<array<vec4<u32>, BPR * BSTR / 8u>, WN>;
var<workgroup> Ct: array<f32, NSG * SM * SN>;

alias LeftT = subgroup_matrix_left<f16, SK, SM>;
alias RightT = subgroup_matrix_right<f16, SN, SK>;
alias ResultT = subgroup_matrix_result<f32, SN, SM>;

// chunk j*NT + lid: part p = (j*NT) / ACPP, chunk c of the part: its row c / (APC/8), 8 columns from
// (c % (APC/8)) * 8; zeros past kend (the slice's end: a multiple of 16)
fn load_a(k: u32, kend: u32, m0: u32, lid: u32) -> array<vec4<u32>, AQ> {
    var r: array<vec4<u32>, AQ>;
    //!unroll j AQ
    {
        let p = (j * NT) / ACPP;
        let c = lid + (j * NT) % ACPP;
        let row = select(p * PM, 0u, TRANS_A) + c / (APC / 8u); // in the whole tile as stored
        let col = select(0u, p * PM, TRANS_A) + (c % (APC / 8u)) * 8u;
        if (select(k + col, k + row, TRANS_A) < kend) {
            r[j] = A[(a.a_off + select((m0 + row) * a.lda + k + col, (k + row) * a.lda + m0 + col, TRANS_A)) / 8u];
        }
    }
    return r;
}
fn load_b(k: u32, kend: u32, n0: u32, boff: u32, lid: u32) -> array<vec4<u32>, BQ> {
    var r: array<vec4<u32>, BQ>;
    //!unroll j BQ
    {
        let p = (j * NT) / BCPP;
        let c = lid + (j * NT) % BCPP;
        let row = select(0u, p * PN, TRANS_B) + c / (BPC / 8u);
        let col = select(p * PN, 0u, TRANS_B) + (c % (BPC / 8u)) * 8u;
        if (select(k + row, k + col, TRANS_B) < kend) {
            r[j] = B[(boff + select((k + row) * a.ldb + n0 + col, (n0 + row) * a.ldb + k + col, TRANS_B)) / 8u];
        }
    }
    return r;
}

@compute @workgroup_size(NT, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let prod = wid.z % a.nprod;
    let boff = a.b_off + prod * a.am;
    let kbeg = (wid.z / a.nprod) * a.kchunk;
    let kend = min((a.K + 15u) / 16u * 16u, kbeg + a.kchunk); // the copies hold zeros up to a multiple of 16
    let wa = sid / WN; // this subgroup's parts of the tiles, its block in the workgroup's
    let wb = sid % WN;
    let sm0 = wa * PM;
    let sn0 = wb * PN;
    var acc: array<ResultT, TMN>;
    var la: array<LeftT, TM>;
    var lb: array<RightT, TN>;
    var ra: array<vec4<u32>, AQ> = load_a(kbeg, kend, m0, lid);
    var rb: array<vec4<u32>, BQ> = load_b(kbeg, kend, n0, boff, lid);
    for (var k = kbeg; k < kend; k += BK) {
        workgroupBarrier(); // the last step's tiles are read
        //!unroll j AQ
        {
            let p = (j * NT) / ACPP;
            let c = lid + (j * NT) % ACPP;
            As[p][(c / (APC / 8u)) * (ASTR / 8u) + c % (APC / 8u)] = ra[j];
        }
        //!unroll j BQ
        {
            let p = (j * NT) / BCPP;
            let c = lid + (j * NT) % BCPP;
            Bs[p][(c / (BPC / 8u)) * (BSTR / 8u) + c % (BPC / 8u)] = rb[j];
        }
        workgroupBarrier();
        ra = load_a(k + BK, kend, m0, lid); // the next step's, in flight while this one's are multiplied
        rb = load_b(k + BK, kend, n0, boff, lid);
        // offsets of constants only (the unrolled indices are constants): the bounds of each load are
        // known when the shader is made, and robustness adds no test around it. Both majorness branches
        // are validated, with their constant offsets checked against the part: the branch not taken
        // loads at offset 0 (select on TRANS_A/TRANS_B), in bounds by the const_assert on SK, SM, SN above
        //!unroll kq KQ
        {
            //!unroll i TM
            {
                if (TRANS_A) {
                    la[i] = subgroupMatrixLoad<LeftT, col_major>(
                        &As[wa], select(0u, (kq * SK * ASTR + i * SM) / 8u, TRANS_A), ASTR / 8u);
                } else {
                    la[i] = subgroupMatrixLoad<LeftT, row_major>(
                        &As[wa], select((i * SM * ASTR + kq * SK) / 8u, 0u, TRANS_A), ASTR / 8u);
                }
            }
            //!unroll j TN
            {
                if (TRANS_B) {
                    lb[j] = subgroupMatrixLoad<RightT, col_major>(
                        &Bs[wb], select(0u, (j * SN * BSTR + kq * SK) / 8u, TRANS_B), BSTR / 8u);
                } else {
                    lb[j] = subgroupMatrixLoad<RightT, row_major>(
                        &Bs[wb], select((kq * SK * BSTR + j * SN) / 8u, 0u, TRANS_B), BSTR / 8u);
                }
            }
            //!unroll t TMN
            {
                acc[t] = subgroupMatrixMultiplyAccumulate(la[t / TN], lb[t % TN], acc[t]);
            }
        }
    }
    let split = nwg.z > a.nprod;
    let cbase = a.c_off + wid.z * a.M * a.N; // a split slice's partial product
    let c_off = a.c_off + prod * a.cstride;
    if ((split || a.flags == 0u) && m0 + BM <= a.M && n0 + BN <= a.N) {
        let base = select(c_off, cbase, split);
        //!unroll t TMN
        {
            subgroupMatrixStore<row_major>(&Cm, base + (m0 + sm0 + (t / TN) * SM) * a.N + n0 + sn0 + (t % TN) * SN, acc[t],
                                           a.N);
        }
        return;
    }
    let r_off = a.r_off + prod * a.cstride;
    let bias_off = a.bias_off + prod * a.bstride;
    let ct = sid * SM * SN;
    //!unroll t TMN
    {
        subgroupMatrixStore<row_major>(&Ct, ct, acc[t], SN);
        workgroupBarrier();
        for (var e = lane; e < SM * SN; e += SG) {
            let m = m0 + sm0 + (t / TN) * SM + e / SN;
            let n = n0 + sn0 + (t % TN) * SN + e % SN;
            if (m < a.M && n < a.N) {
                var v = Ct[ct + e];
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
