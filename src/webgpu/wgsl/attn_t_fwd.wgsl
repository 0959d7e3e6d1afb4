// attn_t_fwd.wgsl — tiled (FlashAttention-2 style) causal attention forward,
// the opt-in variant (TT_WEBGPU_ATTN=tiled; default: attn_fwd.wgsl).
// Tiling: one workgroup per (query block of BR rows, head h, batch b); the
// scaled Q block in workgroup memory (row stride HS+1); K then V tiles of BC
// rows loaded cooperatively into ONE shared tile buffer (K for S = Q K^T,
// then V for O += P V); the S tile (BR x BC, row stride BC+1) in workgroup
// memory. Register micro-tiles as in a matmul: NTH = (BR/RPT) * TPR threads;
// thread (g, lane) owns the RPT query rows g, g + BR/RPT, ... and
//   S phase:  the RPT x CPT scores of keys lane, lane+TPR, ... (CPT = BC/TPR)
//   PV phase: the RPT x DPT outputs of columns lane, lane+TPR, ... (DPT = ceil(HS/TPR))
// so each shared load feeds RPT (or CPT/DPT) FMAs instead of one. The online
// softmax (m, l) of a row is kept identically by the TPR threads of the row.
// Fixed summation order: deterministic. Only y and the row logsumexp are
// stored: lse[(b*NH + h)*T + t] = m + log(l).
// Tile sizes: gpu_ops.c (att_tiled_plan) from maxComputeWorkgroupStorageSize;
// head size 64: 48 KiB (H200): BR 64, BC 32, RPT 4, TPR 8 (128 threads);
// 16 KiB (WebGPU default): BR 32, BC 16, RPT 4, TPR 8 (64 threads).
// Prediction, gpt2 preset on an H200 (B 8, T 1024, 12 heads x 64, 12 layers):
// forward = 12.9 GFLOP/layer, 155 GFLOP/step (useful, causal). The current
// attn_fwd reached ~1.9 TFLOP/s on the H200 (docs/bench/h200-run1, preset
// massive), i.e. ~80 ms/step at gpt2. This kernel needs ~0.4-0.5 shared
// loads per FMA (vs ~1 for attn_fwd) and reads each K/V tile once per 64
// rows (vs 16): estimate 4-6 TFLOP/s, ~25-40 ms/step. Unmeasured.
// Grid (ceil(T/BR), NH, B). Prefix: HS, BR, BC, RPT, TPR.
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, p12: u32, p13: u32, p14: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const RG: u32 = BR / RPT;                 // row groups
const NTH: u32 = RG * TPR;                // threads
const CPT: u32 = BC / TPR;                // S columns per thread (TPR divides BC)
const DPT: u32 = (HS + TPR - 1u) / TPR;   // output columns per thread
const KS: u32 = HS + 1u;
const PS: u32 = BC + 1u;
var<workgroup> Qs: array<f32, BR * KS>;
var<workgroup> KV: array<f32, BC * KS>;
var<workgroup> Ps: array<f32, BR * PS>;

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
    for (var e = lid; e < BR * HS; e += NTH) {
        let rr = e / HS;
        let dd = e % HS;
        var x = 0.0;
        if (i0 + rr < T) { x = q[(b * T + i0 + rr) * C + hb + dd] * a.scale; }
        Qs[rr * KS + dd] = x;
    }
    var o: array<f32, RPT * DPT>;
    var m: array<f32, RPT>;
    var l: array<f32, RPT>;
    for (var x = 0u; x < RPT * DPT; x++) { o[x] = 0.0; }
    for (var rr = 0u; rr < RPT; rr++) {
        m[rr] = -3.0e38;
        l[rr] = 0.0;
    }
    let n_tiles = (min(T, i0 + BR) - 1u) / BC + 1u;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        workgroupBarrier(); // Q loaded / previous tile's readers of KV and Ps done
        for (var e = lid; e < BC * HS; e += NTH) {
            let jr = e / HS;
            let dd = e % HS;
            var x = 0.0;
            if (j0 + jr < T) { x = k[(b * T + j0 + jr) * C + hb + dd]; }
            KV[jr * KS + dd] = x;
        }
        workgroupBarrier();
        var sa: array<f32, RPT * CPT>;
        for (var x = 0u; x < RPT * CPT; x++) { sa[x] = 0.0; }
        for (var d = 0u; d < HS; d++) {
            var qd: array<f32, RPT>;
            for (var rr = 0u; rr < RPT; rr++) { qd[rr] = Qs[(g + rr * RG) * KS + d]; }
            for (var cc = 0u; cc < CPT; cc++) {
                let kd = KV[(lane + cc * TPR) * KS + d];
                for (var rr = 0u; rr < RPT; rr++) { sa[rr * CPT + cc] = fma(qd[rr], kd, sa[rr * CPT + cc]); }
            }
        }
        for (var rr = 0u; rr < RPT; rr++) {
            for (var cc = 0u; cc < CPT; cc++) { Ps[(g + rr * RG) * PS + lane + cc * TPR] = sa[rr * CPT + cc]; }
        }
        workgroupBarrier();
        for (var e = lid; e < BC * HS; e += NTH) {
            let jr = e / HS;
            let dd = e % HS;
            var x = 0.0;
            if (j0 + jr < T) { x = v[(b * T + j0 + jr) * C + hb + dd]; }
            KV[jr * KS + dd] = x;
        }
        workgroupBarrier();
        // online softmax: rows whose keys in this tile are fewer than BC get
        // p = 0 for the masked ones (the max is over their own keys only)
        var jn: array<u32, RPT>;
        var jmax = 0u;
        for (var rr = 0u; rr < RPT; rr++) {
            let i = i0 + g + rr * RG;
            var n = 0u;
            if (i < T && i >= j0) { n = min(BC, i - j0 + 1u); }
            jn[rr] = n;
            jmax = max(jmax, n);
            let r = g + rr * RG;
            var mx = m[rr];
            for (var jj = 0u; jj < n; jj++) { mx = max(mx, Ps[r * PS + jj]); }
            let corr = exp(m[rr] - mx);
            l[rr] *= corr;
            for (var kk = 0u; kk < DPT; kk++) { o[rr * DPT + kk] *= corr; }
            m[rr] = mx;
        }
        for (var jj = 0u; jj < jmax; jj++) {
            var p: array<f32, RPT>;
            for (var rr = 0u; rr < RPT; rr++) {
                p[rr] = 0.0;
                if (jj < jn[rr]) { p[rr] = exp(Ps[(g + rr * RG) * PS + jj] - m[rr]); }
                l[rr] += p[rr];
            }
            for (var kk = 0u; kk < DPT; kk++) {
                let vd = KV[jj * KS + min(lane + kk * TPR, HS - 1u)];
                for (var rr = 0u; rr < RPT; rr++) { o[rr * DPT + kk] = fma(p[rr], vd, o[rr * DPT + kk]); }
            }
        }
    }
    for (var rr = 0u; rr < RPT; rr++) {
        let i = i0 + g + rr * RG;
        if (i < T) {
            let inv = 1.0 / l[rr];
            let ib = (b * T + i) * C + hb;
            for (var kk = 0u; kk < DPT; kk++) {
                let d = lane + kk * TPR;
                if (d < HS) { y[ib + d] = o[rr * DPT + kk] * inv; }
            }
            if (lane == 0u) { lse[(b * a.NH + h) * T + i] = m[rr] + log(l[rr]); }
        }
    }
}
