// attn_t_bwd_dkdv.wgsl — tiled attention backward, part 2 (opt-in variant,
// TT_WEBGPU_ATTN=tiled; default: attn_bwd_dkdv.wgsl). FlashAttention-2
// style: one workgroup per (key block of BR rows, h, b); the scaled K block
// and the V block stay in workgroup memory (row stride HS+1); tiles of BC
// query rows (Q, dY, lse, D) are streamed through workgroup memory from the
// block's diagonal to T; the P and dS tiles (BR x BC, stride BC+1) in
// workgroup memory. Register micro-tiles: NTH = (BR/RPT) * TPR threads,
// thread (g, lane) owns key rows g, g + BR/RPT, ... (RPT of them):
//   S, dP phase: RPT x CPT entries (queries lane, lane+TPR, ...)
//   dk, dv phase: 2 x RPT x DPT accumulators (columns lane, lane+TPR, ...)
//   p_ij = exp(scale q_i.k_j - lse_i); dv_j = sum_{i>=j} p_ij dy_i
//   ds_ij = p_ij (dy_i.v_j - D_i);     dk_j = scale * sum_{i>=j} ds_ij q_i
// (P recomputed from Q, K and the forward's lse; D from attn_t_bwd_dq, which
// runs first.) No atomics, fixed summation order: deterministic.
// Grid (ceil(T/BR), NH, B). Prefix: HS, BR, BC, RPT, TPR. Tiles (gpu_ops.c
// att_tiled_plan), head size 64: 48 KiB: BR 32, BC 32; 16 KiB: BR 16, BC 8.
// Prediction, gpt2 on an H200: 4 causal products (S, dP, dV, dK) = 25.8
// GFLOP/layer, 310 GFLOP/step; the current attn_bwd_dkdv ran ~2.1 TFLOP/s
// (h200-run1, massive) -> ~145 ms/step; estimate 4-6 TFLOP/s here, ~50-80
// ms/step. Whole tiled attention (fwd + both backward parts) at gpt2: ~120-
// 180 ms/step vs ~310 ms/step for the current kernels (estimates from the
// measured rates, not measured at gpt2; attention is ~15% of the 2142 ms
// step, the matmuls most of the rest).
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> dk: array<f32>;
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;

const RG: u32 = BR / RPT;
const NTH: u32 = RG * TPR;
const CPT: u32 = BC / TPR;
const DPT: u32 = (HS + TPR - 1u) / TPR;
const KS: u32 = HS + 1u;
const PS: u32 = BC + 1u;
var<workgroup> Ks: array<f32, BR * KS>;
var<workgroup> Vs: array<f32, BR * KS>;
var<workgroup> Qt: array<f32, BC * KS>;
var<workgroup> Gt: array<f32, BC * KS>;
var<workgroup> Ps: array<f32, BR * PS>;
var<workgroup> Ss: array<f32, BR * PS>;
var<workgroup> Lt: array<f32, BC>;
var<workgroup> Dt: array<f32, BC>;

@compute @workgroup_size(NTH)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    let C = a.C;
    let h = wid.y;
    let b = wid.z;
    let g = lid / TPR;
    let lane = lid % TPR;
    let j0 = wid.x * BR;
    let hb = h * HS;
    let BNT = a.B * a.NH * T;
    let sbase = (b * a.NH + h) * T;
    for (var e = lid; e < BR * HS; e += NTH) {
        let rr = e / HS;
        let dd = e % HS;
        var kx = 0.0;
        var vx = 0.0;
        if (j0 + rr < T) {
            let src = (b * T + j0 + rr) * C + hb + dd;
            kx = k[src] * a.scale;
            vx = v[src];
        }
        Ks[rr * KS + dd] = kx;
        Vs[rr * KS + dd] = vx;
    }
    var dka: array<f32, RPT * DPT>;
    var dva: array<f32, RPT * DPT>;
    for (var x = 0u; x < RPT * DPT; x++) {
        dka[x] = 0.0;
        dva[x] = 0.0;
    }
    let i_first = j0 / BC * BC;
    let n_tiles = (T - i_first + BC - 1u) / BC;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let i0 = i_first + tile * BC;
        workgroupBarrier(); // K, V loaded / previous tile's readers done
        for (var e = lid; e < BC * HS; e += NTH) {
            let ir = e / HS;
            let dd = e % HS;
            var qx = 0.0;
            var gx = 0.0;
            if (i0 + ir < T) {
                let src = (b * T + i0 + ir) * C + hb + dd;
                qx = q[src];
                gx = dy[src];
            }
            Qt[ir * KS + dd] = qx;
            Gt[ir * KS + dd] = gx;
        }
        for (var e = lid; e < BC; e += NTH) {
            var lv = 0.0;
            var dvv = 0.0;
            if (i0 + e < T) {
                lv = stats[sbase + i0 + e];
                dvv = stats[BNT + sbase + i0 + e];
            }
            Lt[e] = lv;
            Dt[e] = dvv;
        }
        workgroupBarrier();
        var sa: array<f32, RPT * CPT>;
        var pa: array<f32, RPT * CPT>;
        for (var x = 0u; x < RPT * CPT; x++) {
            sa[x] = 0.0;
            pa[x] = 0.0;
        }
        for (var d = 0u; d < HS; d++) {
            var kd: array<f32, RPT>;
            var vd: array<f32, RPT>;
            for (var rr = 0u; rr < RPT; rr++) {
                kd[rr] = Ks[(g + rr * RG) * KS + d];
                vd[rr] = Vs[(g + rr * RG) * KS + d];
            }
            for (var cc = 0u; cc < CPT; cc++) {
                let qd = Qt[(lane + cc * TPR) * KS + d];
                let gd = Gt[(lane + cc * TPR) * KS + d];
                for (var rr = 0u; rr < RPT; rr++) {
                    sa[rr * CPT + cc] = fma(kd[rr], qd, sa[rr * CPT + cc]);
                    pa[rr * CPT + cc] = fma(vd[rr], gd, pa[rr * CPT + cc]);
                }
            }
        }
        for (var rr = 0u; rr < RPT; rr++) {
            let r = g + rr * RG;
            let j = j0 + r;
            for (var cc = 0u; cc < CPT; cc++) {
                let c = lane + cc * TPR;
                let i = i0 + c;
                var p = 0.0;
                var ds = 0.0;
                if (j < T && i >= j && i < T) {
                    p = exp(sa[rr * CPT + cc] - Lt[c]);
                    ds = p * (pa[rr * CPT + cc] - Dt[c]);
                }
                Ps[r * PS + c] = p;
                Ss[r * PS + c] = ds;
            }
        }
        workgroupBarrier();
        // masked entries hold p = ds = 0: the thread's rows share one range
        // (from its first key row's diagonal) and add exact zeros elsewhere
        var c0 = BC;
        for (var rr = 0u; rr < RPT; rr++) {
            let j = j0 + g + rr * RG;
            if (j < T && i0 + BC > j) {
                var cs = 0u;
                if (j > i0) { cs = j - i0; }
                c0 = min(c0, cs);
            }
        }
        let cn = min(BC, T - i0);
        for (var c = c0; c < cn; c++) {
            var p: array<f32, RPT>;
            var ds: array<f32, RPT>;
            for (var rr = 0u; rr < RPT; rr++) {
                p[rr] = Ps[(g + rr * RG) * PS + c];
                ds[rr] = Ss[(g + rr * RG) * PS + c];
            }
            for (var kk = 0u; kk < DPT; kk++) {
                let dd = min(lane + kk * TPR, HS - 1u);
                let gd = Gt[c * KS + dd];
                let qd = Qt[c * KS + dd];
                for (var rr = 0u; rr < RPT; rr++) {
                    dva[rr * DPT + kk] = fma(p[rr], gd, dva[rr * DPT + kk]);
                    dka[rr * DPT + kk] = fma(ds[rr], qd, dka[rr * DPT + kk]);
                }
            }
        }
    }
    for (var rr = 0u; rr < RPT; rr++) {
        let j = j0 + g + rr * RG;
        if (j < T) {
            let jb = (b * T + j) * C + hb;
            for (var kk = 0u; kk < DPT; kk++) {
                let d = lane + kk * TPR;
                if (d < HS) {
                    dk[jb + d] = dka[rr * DPT + kk] * a.scale;
                    dv[jb + d] = dva[rr * DPT + kk];
                }
            }
        }
    }
}
