// attn_t_bwd_dq.wgsl — tiled attention backward, part 1 (opt-in variant,
// TT_WEBGPU_ATTN=tiled; default: attn_bwd_dq.wgsl). FlashAttention-2 style:
// one workgroup per (query block of BR rows, h, b); the scaled Q block and
// the dY block in workgroup memory (row stride HS+1); K and V tiles of BC
// rows streamed through workgroup memory; the dS tile (BR x BC, stride BC+1)
// in workgroup memory. Register micro-tiles: NTH = (BR/RPT) * TPR threads,
// thread (g, lane) owns query rows g, g + BR/RPT, ... (RPT of them):
//   S, dP phase: RPT x CPT entries (keys lane, lane+TPR, ...)
//   dq phase:    RPT x DPT accumulators (columns lane, lane+TPR, ...)
// Per row (lane 0, fixed order):
//   D_i = dy_i . y_i (stored: stats[BNT + row], read by attn_t_bwd_dkdv)
//   p_ij = exp(scale q_i.k_j - lse_i), dp_ij = dy_i . v_j, ds = p (dp - D_i)
//   dq_i = scale * sum_{j<=i} ds_ij k_j
// No atomics; every sum in a fixed order: deterministic.
// stats = [lse (B*NH*T) | D (B*NH*T)]. Grid (ceil(T/BR), NH, B). Prefix:
// HS, BR, BC, RPT, TPR. Tiles (gpu_ops.c att_tiled_plan), head size 64:
// 48 KiB: BR 64, BC 16; 16 KiB: BR 16, BC 8.
// Prediction, gpt2 on an H200: 3 causal products (S, dP, dQ) = 19.3
// GFLOP/layer, 232 GFLOP/step; the current attn_bwd_dq ran ~2.7 TFLOP/s
// (h200-run1, massive) -> ~85 ms/step; this kernel ~0.4-0.6 shared loads per
// FMA: estimate 4-6 TFLOP/s, ~40-60 ms/step. Unmeasured.
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read> dy: array<f32>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

const RG: u32 = BR / RPT;
const NTH: u32 = RG * TPR;
const CPT: u32 = BC / TPR;
const DPT: u32 = (HS + TPR - 1u) / TPR;
const KS: u32 = HS + 1u;
const PS: u32 = BC + 1u;
var<workgroup> Qs: array<f32, BR * KS>;
var<workgroup> Gs: array<f32, BR * KS>;
var<workgroup> Ks: array<f32, BC * KS>;
var<workgroup> Vs: array<f32, BC * KS>;
var<workgroup> Ps: array<f32, BR * PS>;
var<workgroup> Ls: array<f32, BR>;
var<workgroup> Ds: array<f32, BR>;

@compute @workgroup_size(NTH)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    let C = a.C;
    let h = wid.y;
    let b = wid.z;
    let g = lid / TPR;
    let lane = lid % TPR;
    let i0 = wid.x * BR;
    let hb = h * HS;
    let BNT = a.B * a.NH * T;
    for (var e = lid; e < BR * HS; e += NTH) {
        let rr = e / HS;
        let dd = e % HS;
        var x = 0.0;
        var gx = 0.0;
        if (i0 + rr < T) {
            let src = (b * T + i0 + rr) * C + hb + dd;
            x = q[src] * a.scale;
            gx = dy[src];
        }
        Qs[rr * KS + dd] = x;
        Gs[rr * KS + dd] = gx;
    }
    workgroupBarrier();
    for (var r = lid; r < BR; r += NTH) {
        let i = i0 + r;
        var Di = 0.0;
        var L = 0.0;
        if (i < T) {
            let ib = (b * T + i) * C + hb;
            for (var d = 0u; d < HS; d++) { Di = fma(Gs[r * KS + d], y[ib + d], Di); }
            let srow = (b * a.NH + h) * T + i;
            L = stats[srow];
            stats[BNT + srow] = Di;
        }
        Ls[r] = L;
        Ds[r] = Di;
    }
    var acc: array<f32, RPT * DPT>;
    for (var x = 0u; x < RPT * DPT; x++) { acc[x] = 0.0; }
    let n_tiles = (min(T, i0 + BR) - 1u) / BC + 1u;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        workgroupBarrier(); // Ls/Ds written / previous tile's readers done
        for (var e = lid; e < BC * HS; e += NTH) {
            let jr = e / HS;
            let dd = e % HS;
            var kx = 0.0;
            var vx = 0.0;
            if (j0 + jr < T) {
                let src = (b * T + j0 + jr) * C + hb + dd;
                kx = k[src];
                vx = v[src];
            }
            Ks[jr * KS + dd] = kx;
            Vs[jr * KS + dd] = vx;
        }
        workgroupBarrier();
        var sa: array<f32, RPT * CPT>;
        var pa: array<f32, RPT * CPT>;
        for (var x = 0u; x < RPT * CPT; x++) {
            sa[x] = 0.0;
            pa[x] = 0.0;
        }
        for (var d = 0u; d < HS; d++) {
            var qd: array<f32, RPT>;
            var gd: array<f32, RPT>;
            for (var rr = 0u; rr < RPT; rr++) {
                qd[rr] = Qs[(g + rr * RG) * KS + d];
                gd[rr] = Gs[(g + rr * RG) * KS + d];
            }
            for (var cc = 0u; cc < CPT; cc++) {
                let kd = Ks[(lane + cc * TPR) * KS + d];
                let vd = Vs[(lane + cc * TPR) * KS + d];
                for (var rr = 0u; rr < RPT; rr++) {
                    sa[rr * CPT + cc] = fma(qd[rr], kd, sa[rr * CPT + cc]);
                    pa[rr * CPT + cc] = fma(gd[rr], vd, pa[rr * CPT + cc]);
                }
            }
        }
        for (var rr = 0u; rr < RPT; rr++) {
            let r = g + rr * RG;
            let i = i0 + r;
            for (var cc = 0u; cc < CPT; cc++) {
                let c = lane + cc * TPR;
                var ds = 0.0;
                if (i < T && j0 + c <= i) { ds = exp(sa[rr * CPT + cc] - Ls[r]) * (pa[rr * CPT + cc] - Ds[r]); }
                Ps[r * PS + c] = ds;
            }
        }
        workgroupBarrier();
        // masked and out-of-range entries hold ds = 0: a full tile adds exact zeros
        var jmax = 0u;
        for (var rr = 0u; rr < RPT; rr++) {
            let i = i0 + g + rr * RG;
            if (i < T && i >= j0) { jmax = max(jmax, min(BC, i - j0 + 1u)); }
        }
        for (var jj = 0u; jj < jmax; jj++) {
            var ds: array<f32, RPT>;
            for (var rr = 0u; rr < RPT; rr++) { ds[rr] = Ps[(g + rr * RG) * PS + jj]; }
            for (var kk = 0u; kk < DPT; kk++) {
                let kd = Ks[jj * KS + min(lane + kk * TPR, HS - 1u)];
                for (var rr = 0u; rr < RPT; rr++) { acc[rr * DPT + kk] = fma(ds[rr], kd, acc[rr * DPT + kk]); }
            }
        }
    }
    for (var rr = 0u; rr < RPT; rr++) {
        let i = i0 + g + rr * RG;
        if (i < T) {
            let ib = (b * T + i) * C + hb;
            for (var kk = 0u; kk < DPT; kk++) {
                let d = lane + kk * TPR;
                if (d < HS) { dq[ib + d] = acc[rr * DPT + kk] * a.scale; }
            }
        }
    }
}
