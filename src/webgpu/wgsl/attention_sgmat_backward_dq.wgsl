// attention_sgmat_backward_dq.wgsl — the f16 tier (src/webgpu/attention.c)
// of the causal attention backward's dq on subgroup matrices: f16 operands,
// f32 accumulation, P and dS in f32 until rounded for their product.
// Runs after attention_backward_d (D = rowsum(dY o Y) into stats).
// One workgroup per (block of BR = NSG*16 query rows, head h, batch b);
// subgroup s owns query rows 16s..16s+15, holding (scale Q) and dY of its
// rows as DK = HS/16 left matrices each. Key/value tiles of BC rows stream
// through workgroup memory (f32 read, rounded to f16 as stored), from key 0
// to the block's diagonal (Q and dY staged through the same memory first).
// Per tile and subgroup:
//   S = (scale Q) K^T and dP = dY V^T   NB = BC/16 result matrices each,
//               K^T and V^T read from the tiles as column-major right
//               matrices, stored to Sw and Dw (the subgroup's 16 x BC f32);
//   P, dS       LPR = SG/16 lanes per row, BC/LPR keys each: p = exp(s -
//               lse) (0 where key > query), ds = p (dp - D), rounded to f16
//               into Ew;
//   dq += dS K  dS from Ew as left matrices, K from its tile.
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// ds = p (dp e - D), e the mask's factor of (query, key), as
// attention_backward_dq.
// End: dq = scale (dS K) through Sw (one 16 x 16 block per step) into dq at
// o1_off (rows < T).
// Ta, Tb (attention_sgmat_common): the K and V tiles.
// Prefix: enables and the uniformity diagnostic as matmul_sgmat, HS (a
// multiple of 16), BR, BC (multiples of 16), VEC (true), SG, NSG,
// DK = HS/16, NB = BC/16, QQ = BR*HS/4/NTH, KQ = BC*HS/4/NTH (vec4 per
// invocation), 16 x 16 x 16 matrices.
//!include attention_common
//!include attention_sgmat_common
@group(0) @binding(4) var<storage, read> dy4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> dq: array<f32>;

var<workgroup> Ew: array<array<f16, 16u * ESTR>, NSG>;  // dS, per subgroup

fn ld_dy(b: u32, t: u32, hb: u32, d4: u32) -> vec4<f32> {
    let i = base_of(b, t, hb, d4);
    return select(vec4<f32>(0.0), dy4[min(i, last_el()) >> 2u], t < a.T);
}

@compute @workgroup_size(NTH)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
    let T = a.T;
    let h = wid.y;
    let b = wid.z;
    let hb = h * HS;
    let i0 = (nwg.x - 1u - wid.x) * BR; // the longest rows first
    let row = lane / LPR;
    let c0 = (lane % LPR) * CPL;
    let sk = lane_skew(lane);
    let qrow = i0 + sid * 16u + row;
    let BNT = a.B * a.NH * T;
    let srow = (b * a.NH + h) * T + min(qrow, T - 1u);
    let lse_r = stats[srow];
    let d_r = stats[BNT + srow];
    //!drop let dkey = tt_drop_key(a.p15);
    //!drop let drow = ((b * a.NH + h) * T + qrow) * T; // mask index of (row, key 0)
    // (scale Q), then dY, of the block through the tiles into left matrices
    var lq: array<LeftT, DK>;
    var lg: array<LeftT, DK>;
    for (var w = 0u; w < 2u; w++) {
        workgroupBarrier(); // (dY:) Q read
        //!unroll j QQ
        {
            let e = lid + j * NTH;
            let r = e / HS4;
            let d4 = e % HS4;
            stage(r, d4, vec4<f16>(select(ld_q(b, i0 + r, hb, d4) * a.scale, ld_dy(b, i0 + r, hb, d4), w == 1u)));
        }
        workgroupBarrier();
        //!unroll d DK
        {
            if (w == 0u) { lq[d] = load_rows(sid, d); } else { lg[d] = load_rows(sid, d); }
        }
    }
    var acc: array<ResultT, DK>;
    let n_tiles = (min(T, i0 + BR) - 1u) / BC + 1u;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        workgroupBarrier(); // Q, dY loaded / the last tile's readers done
        stage_kv(lid, b, j0, hb);
        workgroupBarrier();
        scores_pair(sid, &lq, &lg); // S = (scale Q) K^T into Sw, dP = dY V^T into Dw
        workgroupBarrier();
        for (var c = 0u; c < CPL; c++) {
            let cc = c0 + (c + sk) % CPL;
            let key = j0 + cc;
            let i = row * SSTR + cc;
            let p = select(exp(Sw[sid][i] - lse_r), 0.0, key > qrow || qrow >= T);
            Ew[sid][row * ESTR + cc] = f16(p * (Dw[sid][i] - d_r));
            //!drop Ew[sid][row * ESTR + cc] = f16(p * (Dw[sid][i] * tt_drop_mul(dkey, drow + key) - d_r));
        }
        workgroupBarrier();
        // dq += dS K
        //!unroll n NB
        {
            let ls = subgroupMatrixLoad<LeftT, row_major>(&Ew[sid], n * 16u, ESTR);
            //!unroll d DK
            {
                let kr = subgroupMatrixLoad<RightT, row_major>(&Ta, n * 16u * KSTR + d * 16u, KSTR);
                acc[d] = subgroupMatrixMultiplyAccumulate(ls, kr, acc[d]);
            }
        }
    }
    // dq = scale (dS K), one 16 x 16 block of each subgroup per step
    //!unroll d DK
    {
        workgroupBarrier();
        subgroupMatrixStore<row_major>(&Sw[sid], 0u, acc[d], SSTR);
        workgroupBarrier();
        if (qrow < T) {
            let base = a.o1_off + (b * T + qrow) * a.C + hb + d * 16u;
            for (var c = 0u; c < 16u / LPR; c++) {
                let x = (lane % LPR) * (16u / LPR) + c;
                dq[base + x] = Sw[sid][row * SSTR + x] * a.scale;
            }
        }
    }
}
