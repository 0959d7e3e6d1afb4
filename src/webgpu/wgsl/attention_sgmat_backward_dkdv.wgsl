// attention_sgmat_backward_dkdv.wgsl — the f16 tier (src/webgpu/attention.c)
// of the causal attention backward's dk and dv on subgroup matrices: f16
// operands, f32 accumulation, P and dS in f32 until rounded for their
// products. Runs after attention_backward_d (D = rowsum(dY o Y) into stats).
// One workgroup per (block of BR = NSG*16 key rows, head h, batch b);
// subgroup s owns key rows 16s..16s+15, holding K and V of its rows as
// DK = HS/16 left matrices each. Tiles of BC query rows ((scale Q), dY, their
// lse and D) stream through workgroup memory (f32 read, rounded to f16 as
// stored), from the block's diagonal to T. Per tile and subgroup:
//   S^T = K (scale Q)^T and dP^T = V dY^T   NB = BC/16 result matrices
//               each, the tiles read as column-major right matrices, stored
//               to Sw and Dw (the subgroup's 16 x BC f32);
//   P, dS       LPR = SG/16 lanes per key row, BC/LPR queries each:
//               p = exp(s - lse_i) (0 where query < key or query >= T),
//               ds = p (dp - D_i), rounded to f16 into Pw and Ew;
//   dv += P^T dY, dk += dS^T (scale Q)   from Pw, Ew as left matrices, dY
//               and (scale Q) from their tiles.
//   dv_j = sum_{i>=j} p_ij dy_i,  dk_j = sum_{i>=j} ds_ij (scale q_i)
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// with e the mask's factor of (query, key), P^T holds p e and dS^T
// p (dp e - D_i), as attention_backward_dkdv.
// End: dk, dv through Sw (one 16 x 16 block per step) into dk at o1_off and
// dv at o2_off (KV1: both through the dk binding; rows < T).
// Ta, Tb (attention_sgmat_common): the (scale Q) and dY tiles.
// Prefix: enables and the uniformity diagnostic as matmul_sgmat, HS (a
// multiple of 16), BR, BC (multiples of 16), VEC (true), SG, NSG,
// DK = HS/16, NB = BC/16, QQ = BR*HS/4/NTH (K and V of the block),
// KQ = BC*HS/4/NTH (a tile) (vec4 per invocation), KV1, 16 x 16 x 16
// matrices.
//!include attention_common
//!include attention_sgmat_common
@group(0) @binding(4) var<storage, read> dy4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> dk: array<f32>;
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;

const_assert BR % BC == 0u;         // query tiles start at the block's first key

var<workgroup> Pw: array<array<f16, 16u * ESTR>, NSG>;  // P^T, per subgroup
var<workgroup> Ew: array<array<f16, 16u * ESTR>, NSG>;  // dS^T, per subgroup
var<workgroup> Lt: array<f32, BC>;
var<workgroup> Dt: array<f32, BC>;

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
    let j0 = wid.x * BR;                // this block's first key (the longest, first)
    let row = lane / LPR;
    let c0 = (lane % LPR) * CPL;
    let krow = j0 + sid * 16u + row;
    let BNT = a.B * a.NH * T;
    let sbase = (b * a.NH + h) * T;
    //!drop let dkey = tt_drop_key(a.p15);
    // K, then V, of the block through the two tiles into left matrices
    var lk: array<LeftT, DK>;
    var lv: array<LeftT, DK>;
    for (var w = 0u; w < 2u; w++) {
        workgroupBarrier(); // (V:) K read
        //!unroll j QQ
        {
            let e = lid + j * NTH;
            let r = e / HS4;
            let d4 = e % HS4;
            stage(r, d4, vec4<f16>(select(ld_k(b, j0 + r, hb, d4), ld_v(b, j0 + r, hb, d4), w == 1u)));
        }
        workgroupBarrier();
        //!unroll d DK
        {
            if (w == 0u) { lk[d] = load_rows(sid, d); } else { lv[d] = load_rows(sid, d); }
        }
    }
    var accv: array<ResultT, DK>;
    var acck: array<ResultT, DK>;
    let n_tiles = (T + BC - 1u) / BC;
    for (var tile = j0 / BC; tile < n_tiles; tile++) {
        let i0 = tile * BC;
        workgroupBarrier(); // K, V loaded / the last tile's readers done
        //!unroll j KQ
        {
            let e = lid + j * NTH;
            let r = e / HS4;
            let d4 = e % HS4;
            put_pair(r, d4, vec4<f16>(ld_q(b, i0 + r, hb, d4) * a.scale), vec4<f16>(ld_dy(b, i0 + r, hb, d4)));
        }
        for (var r = lid; r < BC; r += NTH) {
            let t = min(i0 + r, T - 1u);
            Lt[r] = stats[sbase + t];
            Dt[r] = stats[BNT + sbase + t];
        }
        workgroupBarrier();
        scores_pair(sid, &lk, &lv); // S^T = K (scale Q)^T into Sw, dP^T = V dY^T into Dw
        workgroupBarrier();
        // no lane_skew here: skewed, this kernel ran slower (docs/BENCHMARKS.md)
        for (var c = 0u; c < CPL; c++) {
            let q = i0 + c0 + c;
            let i = row * SSTR + c0 + c;
            let p = select(exp(Sw[sid][i] - Lt[c0 + c]), 0.0, q < krow || q >= T);
            Pw[sid][row * ESTR + c0 + c] = f16(p);
            Ew[sid][row * ESTR + c0 + c] = f16(p * (Dw[sid][i] - Dt[c0 + c]));
            //!drop let e = tt_drop_mul(dkey, (sbase + q) * T + krow); // mask of (query, key)
            //!drop Pw[sid][row * ESTR + c0 + c] = f16(p * e);
            //!drop Ew[sid][row * ESTR + c0 + c] = f16(p * (Dw[sid][i] * e - Dt[c0 + c]));
        }
        workgroupBarrier();
        // dv += P^T dY, dk += dS^T (scale Q)
        //!unroll n NB
        {
            let lp = subgroupMatrixLoad<LeftT, row_major>(&Pw[sid], n * 16u, ESTR);
            let le = subgroupMatrixLoad<LeftT, row_major>(&Ew[sid], n * 16u, ESTR);
            //!unroll d DK
            {
                let gr = subgroupMatrixLoad<RightT, row_major>(&Tb, n * 16u * KSTR + d * 16u, KSTR);
                accv[d] = subgroupMatrixMultiplyAccumulate(lp, gr, accv[d]);
                let qr = subgroupMatrixLoad<RightT, row_major>(&Ta, n * 16u * KSTR + d * 16u, KSTR);
                acck[d] = subgroupMatrixMultiplyAccumulate(le, qr, acck[d]);
            }
        }
    }
    // dk, dv: one 16 x 16 block of each subgroup per step
    //!unroll d DK
    {
        workgroupBarrier();
        subgroupMatrixStore<row_major>(&Sw[sid], 0u, acck[d], SSTR);
        subgroupMatrixStore<row_major>(&Dw[sid], 0u, accv[d], SSTR);
        workgroupBarrier();
        if (krow < T) {
            let base = (b * T + krow) * a.C + hb + d * 16u;
            for (var c = 0u; c < 16u / LPR; c++) {
                let x = (lane % LPR) * (16u / LPR) + c;
                dk[a.o1_off + base + x] = Sw[sid][row * SSTR + x];
                if (KV1) {
                    dk[a.o2_off + base + x] = Dw[sid][row * SSTR + x];
                } else {
                    dv[a.o2_off + base + x] = Dw[sid][row * SSTR + x];
                }
            }
        }
    }
}
