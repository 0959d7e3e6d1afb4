// sgmat_2stage.wgsl — dev/f16 experiment (SWEEP="...@dev/f16/sgmat_2stage.wgsl"):
// src/webgpu/wgsl/matmul_sgmat.wgsl with two workgroup copies of the tiles:
// a k step multiplies from one while the next step's chunks are stored into
// the other, so one barrier per k step instead of two (workgroup memory
// 2 x (tiles) + Ct: ~42 KiB at 2x2:4x4:32).
//!include matmul_common
@group(0) @binding(1) var<storage, read> A: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<u32>>;

const NSG: u32 = WM * WN;
const NT: u32 = NSG * SG;
const BM: u32 = WM * TM * SM;
const BN: u32 = WN * TN * SN;
const AR: u32 = select(BM, BK, TRANS_A); // op(A)'s tile as stored: AR rows of AC
const AC: u32 = select(BK, BM, TRANS_A);
const BR: u32 = select(BK, BN, TRANS_B);
const BC: u32 = select(BN, BK, TRANS_B);
const ASTR: u32 = AC + 8u;
const BSTR: u32 = BC + 8u;
const_assert AQ * 8u * NT == AR * AC; // AQ, BQ (prefix): 8-f16 chunks of a tile per invocation
const_assert BQ * 8u * NT == BR * BC;
const_assert BK % SK == 0u;

var<workgroup> As: array<f16, 2u * AR * ASTR>;
var<workgroup> Bs: array<f16, 2u * BR * BSTR>;
var<workgroup> Ct: array<f32, NSG * SM * SN>;

alias LeftT = subgroup_matrix_left<f16, SK, SM>;
alias RightT = subgroup_matrix_right<f16, SN, SK>;
alias ResultT = subgroup_matrix_result<f32, SN, SM>;

// chunk q of a tile: row q / (cols / 8), 8 columns from (q % (cols / 8)) * 8;
// zeros past kend (the slice's end: a multiple of 16)
fn load_a(k: u32, kend: u32, m0: u32, lid: u32) -> array<vec4<u32>, AQ> {
    var r: array<vec4<u32>, AQ>;
    //!unroll j AQ
    {
        let q = lid + j * NT;
        let row = q / (AC / 8u);
        let col = (q % (AC / 8u)) * 8u;
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
        let q = lid + j * NT;
        let row = q / (BC / 8u);
        let col = (q % (BC / 8u)) * 8u;
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
    let sm0 = (sid / WN) * TM * SM; // this subgroup's block in the workgroup's
    let sn0 = (sid % WN) * TN * SN;
    var acc: array<ResultT, TMN>;
    var la: array<LeftT, TM>;
    var lb: array<RightT, TN>;
    var ra: array<vec4<u32>, AQ> = load_a(kbeg, kend, m0, lid);
    var rb: array<vec4<u32>, BQ> = load_b(kbeg, kend, n0, boff, lid);
    var k = kbeg;
    // the first step's chunks into copy 0
    //!unroll j AQ
    {
        let q = lid + j * NT;
        let i = (q / (AC / 8u)) * ASTR + (q % (AC / 8u)) * 8u;
        for (var w = 0u; w < 4u; w++) { let h = bitcast<vec2<f16>>(ra[j][w]); As[i + 2u * w] = h.x; As[i + 2u * w + 1u] = h.y; }
    }
    //!unroll j BQ
    {
        let q = lid + j * NT;
        let i = (q / (BC / 8u)) * BSTR + (q % (BC / 8u)) * 8u;
        for (var w = 0u; w < 4u; w++) { let h = bitcast<vec2<f16>>(rb[j][w]); Bs[i + 2u * w] = h.x; Bs[i + 2u * w + 1u] = h.y; }
    }
    workgroupBarrier();
    loop {
        for (var s = 0u; s < 2u; s++) {
            if (k >= kend) { break; }
            ra = load_a(k + BK, kend, m0, lid);
            rb = load_b(k + BK, kend, n0, boff, lid);
            let ao = s * AR * ASTR;
            let bo = s * BR * BSTR;
            for (var kk = 0u; kk < BK; kk += SK) {
                //!unroll i TM
                {
                    let m = sm0 + i * SM;
                    la[i] = subgroupMatrixLoad<LeftT>(&As, ao + select(m * ASTR + kk, kk * ASTR + m, TRANS_A), TRANS_A, ASTR);
                }
                //!unroll j TN
                {
                    let n = sn0 + j * SN;
                    lb[j] = subgroupMatrixLoad<RightT>(&Bs, bo + select(kk * BSTR + n, n * BSTR + kk, TRANS_B), TRANS_B, BSTR);
                }
                //!unroll t TMN
                {
                    acc[t] = subgroupMatrixMultiplyAccumulate(la[t / TN], lb[t % TN], acc[t]);
                }
            }
            // the next step's chunks into the other copy (last read before the previous barrier)
            let an = (1u - s) * AR * ASTR;
            let bn = (1u - s) * BR * BSTR;
            //!unroll j AQ
            {
                let q = lid + j * NT;
                let i = an + (q / (AC / 8u)) * ASTR + (q % (AC / 8u)) * 8u;
                for (var w = 0u; w < 4u; w++) { let h = bitcast<vec2<f16>>(ra[j][w]); As[i + 2u * w] = h.x; As[i + 2u * w + 1u] = h.y; }
            }
            //!unroll j BQ
            {
                let q = lid + j * NT;
                let i = bn + (q / (BC / 8u)) * BSTR + (q % (BC / 8u)) * 8u;
                for (var w = 0u; w < 4u; w++) { let h = bitcast<vec2<f16>>(rb[j][w]); Bs[i + 2u * w] = h.x; Bs[i + 2u * w + 1u] = h.y; }
            }
            workgroupBarrier();
            k += BK;
        }
        if (k >= kend) { break; }
    }
    let split = nwg.z > a.nprod;
    let cbase = a.c_off + wid.z * a.M * a.N; // a split slice's partial product
    let c_off = a.c_off + prod * a.cstride;
    if ((split || a.flags == 0u) && m0 + BM <= a.M && n0 + BN <= a.N) {
        let base = select(c_off, cbase, split);
        //!unroll t TMN
        {
            subgroupMatrixStore(&Cm, base + (m0 + sm0 + (t / TN) * SM) * a.N + n0 + sn0 + (t % TN) * SN, acc[t], false,
                                a.N);
        }
        return;
    }
    let r_off = a.r_off + prod * a.cstride;
    let bias_off = a.bias_off + prod * a.bstride;
    let ct = sid * SM * SN;
    //!unroll t TMN
    {
        subgroupMatrixStore(&Ct, ct, acc[t], false, SN);
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
