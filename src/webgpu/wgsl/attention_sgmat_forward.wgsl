// attention_sgmat_forward.wgsl — the f16 tier (src/webgpu/attention.c) of the
// causal attention forward of attention_forward.wgsl (same Args, bindings,
// grid, outputs y and lse) on subgroup matrices: f16 operands, f32
// accumulation, softmax in f32.
// One workgroup per (block of BR = NSG*16 query rows, head h, batch b); NSG
// subgroups of SG lanes, subgroup s owns query rows 16s..16s+15 of the
// block. Key/value tiles of BC rows streamed through workgroup memory (f32
// read, rounded to f16 as stored), tiles wholly above the diagonal skipped.
// Per tile and subgroup:
//   S = Q K^T   NB = BC/16 result matrices (16 rows x 16 keys), Q held as
//               DK = HS/16 left matrices for the whole loop, K^T read from
//               the K tile as column-major right matrices;
//   softmax     S stored to Sw (the subgroup's 16 x BC f32), LPR = SG/16
//               lanes per row each own BC/LPR keys: scale, causal mask,
//               kept max m and sum l (f32, exact p), P rounded to f16
//               into Pw; the lanes of a row meet by subgroupShuffleXor;
//   rescale     only when a row's tile maximum passes its kept m by more
//               than RESC (then m moves to the maximum in every row): O
//               (DK result matrices) through Sw, its rows times
//               exp(m_old - m_new). Else p = exp(s - m) <= e^RESC, exact
//               in f32; in f16 with dropout's factor 1/(1 - p_drop) up to
//               p_drop 0.999; a row's first tile sets m;
//   O += P V    P from Pw as left matrices, V from the V tile as right ones.
// End: O / l through Sw into y (rows < T), lse = m + log(l).
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// P times the mask into Pw (l sums the undropped p), as attention_forward.
// Q is staged through the tiles before the loop. Ta, Tb
// (attention_sgmat_common): the K and V tiles.
// Prefix: enables and the uniformity diagnostic as matmul_sgmat, HS (a
// multiple of 16), BR, BC (multiples of 16), VEC (true), SG, NSG,
// DK = HS/16, NB = BC/16, QQ = BR*HS/4/NTH, KQ = BC*HS/4/NTH (vec4 per
// invocation), 16 x 16 x 16 matrices.
//!include attention_common
//!include attention_sgmat_common
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const NEG: f32 = -3.0e38;
const_assert HS <= BC;              // O passes through Sw

var<workgroup> Pw: array<array<f16, 16u * ESTR>, NSG>;  // P, per subgroup
var<workgroup> Rf: array<u32, NSG>;               // per subgroup: 1 when a row of it must move its m
const RESC: f32 = 4.0;

@compute @workgroup_size(NTH)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
    let T = a.T;
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let i0 = (nwg.x - 1u - wid.x) * BR; // the longest rows first
    let row = lane / LPR;               // this lane's row of the subgroup's 16
    let c0 = (lane % LPR) * CPL;        // and its keys c0 .. c0 + CPL - 1 of a tile
    let sk = lane_skew(lane);           // its loops over them start at c0 + sk
    let qrow = i0 + sid * 16u + row;
    //!drop let dkey = tt_drop_key(a.p15);
    //!drop let drow = ((b * a.NH + h) * T + qrow) * T; // mask index of (row, key 0)
    // Q (BR rows) through the tiles into DK left matrices
    //!unroll j QQ
    {
        let e = lid + j * NTH;
        stage(e / HS4, e % HS4, vec4<f16>(ld_q(b, i0 + e / HS4, hb, e % HS4)));
    }
    workgroupBarrier();
    var lq: array<LeftT, DK>;
    //!unroll d DK
    {
        lq[d] = load_rows(sid, d);
    }
    var o: array<ResultT, DK>;
    var s: array<ResultT, NB>;
    var m = NEG;
    var l = 0.0;
    let n_tiles = (min(T, i0 + BR) - 1u) / BC + 1u;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        workgroupBarrier(); // Q loaded / the last tile's readers done
        stage_kv(lid, b, j0, hb);
        workgroupBarrier();
        // S = Q K^T
        //!unroll n NB
        {
            s[n] = ResultT();
        }
        //!unroll d DK
        {
            //!unroll n NB
            {
                let kt = subgroupMatrixLoad<RightT, col_major>(&Ta, n * 16u * KSTR + d * 16u, KSTR);
                s[n] = subgroupMatrixMultiplyAccumulate(lq[d], kt, s[n]);
            }
        }
        //!unroll n NB
        {
            subgroupMatrixStore<row_major>(&Sw[sid], n * 16u, s[n], SSTR);
        }
        workgroupBarrier();
        // softmax of this lane's keys of its row
        var mt = NEG;
        for (var c = 0u; c < CPL; c++) {
            let cc = c0 + (c + sk) % CPL;
            let key = j0 + cc;
            let v = select(Sw[sid][row * SSTR + cc] * a.scale, NEG, key > qrow || key >= T);
            Sw[sid][row * SSTR + cc] = v;
            mt = max(mt, v);
        }
        for (var x = 1u; x < LPR; x <<= 1u) { mt = max(mt, subgroupShuffleXor(mt, x)); }
        let ov = subgroupAny(m != NEG && mt > m + RESC);
        if (lane == 0u) { Rf[sid] = select(0u, 1u, ov); }
        let rf: array<u32, NSG> = workgroupUniformLoad(&Rf);
        var resc = false;
        for (var i = 0u; i < NSG; i++) { resc = resc || rf[i] != 0u; }
        let mn = select(m, max(m, mt), resc || m == NEG);
        let corr = exp(m - mn);
        m = mn;
        var ls = 0.0;
        for (var c = 0u; c < CPL; c++) {
            let cc = c0 + (c + sk) % CPL;
            let p = exp(Sw[sid][row * SSTR + cc] - mn);
            ls += p;
            Pw[sid][row * ESTR + cc] = f16(p);
            //!drop Pw[sid][row * ESTR + cc] = f16(p * tt_drop_mul(dkey, drow + j0 + cc));
        }
        for (var x = 1u; x < LPR; x <<= 1u) { ls += subgroupShuffleXor(ls, x); }
        l = fma(l, corr, ls);
        // rescale O (resc is uniform over the workgroup: WGSL orders the subgroup's store and its lanes'
        // reads only by a workgroup barrier)
        if (resc) {
            //!unroll d DK
            {
                subgroupMatrixStore<row_major>(&Sw[sid], d * 16u, o[d], SSTR);
            }
            workgroupBarrier();
            for (var c = 0u; c < HS / LPR; c++) {
                let i = row * SSTR + (lane % LPR) * (HS / LPR) + (c + sk) % (HS / LPR);
                Sw[sid][i] = Sw[sid][i] * corr;
            }
            workgroupBarrier();
            //!unroll d DK
            {
                o[d] = subgroupMatrixLoad<ResultT, row_major>(&Sw[sid], d * 16u, SSTR);
            }
        }
        workgroupBarrier(); // P stored
        // O += P V
        //!unroll n NB
        {
            let lp = subgroupMatrixLoad<LeftT, row_major>(&Pw[sid], n * 16u, ESTR);
            //!unroll d DK
            {
                let vt = subgroupMatrixLoad<RightT, row_major>(&Tb, n * 16u * KSTR + d * 16u, KSTR);
                o[d] = subgroupMatrixMultiplyAccumulate(lp, vt, o[d]);
            }
        }
    }
    // y = O / l, lse
    workgroupBarrier();
    //!unroll d DK
    {
        subgroupMatrixStore<row_major>(&Sw[sid], d * 16u, o[d], SSTR);
    }
    workgroupBarrier();
    if (qrow < T) {
        let inv = 1.0 / l;
        let base = (b * T + qrow) * a.C + hb;
        for (var c = 0u; c < HS / LPR; c++) {
            let d = (lane % LPR) * (HS / LPR) + c;
            y[base + d] = Sw[sid][row * SSTR + d] * inv;
        }
        if (lane % LPR == 0u) { lse[(b * a.NH + h) * T + qrow] = m + log(l); }
    }
}
