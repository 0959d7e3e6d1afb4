// attention_sgmat_common.wgsl — what the subgroup-matrix attention kernels
// (attention_sgmat_forward, attention_sgmat_backward_dq,
// attention_sgmat_backward_dkdv) share, included by their
// "//!include attention_sgmat_common" line (after attention_common): the
// matrix types, the lanes of a row, the strides, the two streamed f16 tiles
// Ta and Tb (BC rows of HS each; each kernel says what they hold), the
// staging of a block of BR rows through both (rows < BC in Ta, the rest in
// Tb) read back as a subgroup's 16 rows of left matrices, a tile pair's
// staging (K and V: the forward, dq), the subgroups' f32 16 x BC blocks Sw
// and Dw, the backward's score pair (dq, dk/dv), and a lane's skew.
// Prefix constants used: HS, BR, BC, SG, NSG, DK, NB, QQ, KQ, SKEW.
const NTH: u32 = NSG * SG;
const LPR: u32 = SG / 16u;          // lanes per row of a 16-row block
const CPL: u32 = BC / LPR;          // a lane's columns of a BC-wide row
const KSTR: u32 = HS + 8u;          // f16 row stride of the tiles
const SSTR: u32 = BC + 4u;          // f32 row stride of a subgroup's 16 x BC blocks
const ESTR: u32 = BC + 8u;          // f16 row stride of a subgroup's 16 x BC blocks
const_assert BR == NSG * 16u;
const_assert HS == DK * 16u;
const_assert BC == NB * 16u;
const_assert QQ * 4u * NTH == BR * HS; // QQ, KQ (prefix): vec4 per invocation of a block, of a tile
const_assert KQ * 4u * NTH == BC * HS;
const_assert BR <= 2u * BC;

alias LeftT = subgroup_matrix_left<f16, 16, 16>;
alias RightT = subgroup_matrix_right<f16, 16, 16>;
alias ResultT = subgroup_matrix_result<f32, 16, 16>;

var<workgroup> Ta: array<f16, BC * KSTR>;
var<workgroup> Tb: array<f16, BC * KSTR>;
var<workgroup> Sw: array<array<f32, 16u * SSTR>, NSG>;  // a 16 x BC block per subgroup: each kernel says what
var<workgroup> Dw: array<array<f32, 16u * SSTR>, NSG>;

// the column at which a lane starts its loops over the CPL columns of its
// row of Sw, Dw and the f16 blocks (SKEW: 2 bits a lane, attention.c's
// sga_skew): the lanes whose columns start in the same bank of Sw start at
// different columns, so each step of such a loop reads every bank once
fn lane_skew(lane: u32) -> u32 {
    return (select(SKEW.y, SKEW.x, lane < 16u) >> (2u * (lane % 16u))) & 3u;
}
// row r (< 2 BC) of a block: 4 f16 at column 4 d4
fn stage(r: u32, d4: u32, x: vec4<f16>) {
    if (r < BC) {
        let i = r * KSTR + 4u * d4;
        Ta[i] = x.x; Ta[i + 1u] = x.y; Ta[i + 2u] = x.z; Ta[i + 3u] = x.w;
    } else {
        let i = (r - BC) * KSTR + 4u * d4;
        Tb[i] = x.x; Tb[i + 1u] = x.y; Tb[i + 2u] = x.z; Tb[i + 3u] = x.w;
    }
}
// subgroup sid's 16 rows of a staged block, d-block d, as a left matrix
fn load_rows(sid: u32, d: u32) -> LeftT {
    if (sid * 16u < BC) { return subgroupMatrixLoad<LeftT, row_major>(&Ta, sid * 16u * KSTR + d * 16u, KSTR); }
    return subgroupMatrixLoad<LeftT, row_major>(&Tb, (sid * 16u - BC) * KSTR + d * 16u, KSTR);
}
// row r (< BC) of both tiles: xa into Ta, xb into Tb, at column 4 d4
fn put_pair(r: u32, d4: u32, xa: vec4<f16>, xb: vec4<f16>) {
    let i = r * KSTR + 4u * d4;
    Ta[i] = xa.x; Ta[i + 1u] = xa.y; Ta[i + 2u] = xa.z; Ta[i + 3u] = xa.w;
    Tb[i] = xb.x; Tb[i + 1u] = xb.y; Tb[i + 2u] = xb.z; Tb[i + 3u] = xb.w;
}
// keys j0 .. j0 + BC - 1 of head column hb, batch b: K into Ta, V into Tb
fn stage_kv(lid: u32, b: u32, j0: u32, hb: u32) {
    //!unroll j KQ
    {
        let e = lid + j * NTH;
        let r = e / HS4;
        let d4 = e % HS4;
        put_pair(r, d4, vec4<f16>(ld_k(b, j0 + r, hb, d4)), vec4<f16>(ld_v(b, j0 + r, hb, d4)));
    }
}
// the backward's scores of a subgroup (its 16 rows of l1 and l2 against the
// tiles' BC rows): l1 Ta^T into its Sw and l2 Tb^T into its Dw (16 x BC each)
fn scores_pair(sid: u32, l1: ptr<function, array<LeftT, DK>>, l2: ptr<function, array<LeftT, DK>>) {
    var s: array<ResultT, NB>;
    var g: array<ResultT, NB>;
    //!unroll d DK
    {
        //!unroll n NB
        {
            let ta = subgroupMatrixLoad<RightT, col_major>(&Ta, n * 16u * KSTR + d * 16u, KSTR);
            s[n] = subgroupMatrixMultiplyAccumulate((*l1)[d], ta, s[n]);
            let tb = subgroupMatrixLoad<RightT, col_major>(&Tb, n * 16u * KSTR + d * 16u, KSTR);
            g[n] = subgroupMatrixMultiplyAccumulate((*l2)[d], tb, g[n]);
        }
    }
    //!unroll n NB
    {
        subgroupMatrixStore<row_major>(&Sw[sid], n * 16u, s[n], SSTR);
        subgroupMatrixStore<row_major>(&Dw[sid], n * 16u, g[n], SSTR);
    }
}
