// attention_rows_forward.wgsl — causal multi-head attention forward, FlashAttention style:
// LANES threads per query row (a workgroup holds BR rows), keys/values
// streamed through workgroup memory in tiles of BC rows (row stride HS+1, so
// lanes reading different keys hit different banks); lane l takes the keys
// jj = l, l + LANES, ... of each tile with its own online softmax (m, l, o);
// at the end lanes 1 .. LANES-1 are merged into lane 0 in lane order
// (deterministic). Only y and the row logsumexp are stored.
// q, k, v, y: (B, T, C) with head h at columns h*HS .. h*HS+HS-1.
// lse[(b*NH + h)*T + t] = log sum_j exp(s_tj), s = scale * q.k
// Grid (ceil(T/BR), NH, B), workgroup BR*LANES. Prefix: HS, BR, BC, LANES, XO.
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// o takes p times its mask factor (element ((b*NH + h)*T + i)*T + j), l p whole.
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, p10: u32, p11: u32, q_off: u32, k_off: u32, v_off: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const NTH: u32 = BR * LANES;
const KS: u32 = HS + 1u;
var<workgroup> Ks: array<f32, BC * KS>;
var<workgroup> Vs: array<f32, BC * KS>;
var<workgroup> Xo: array<f32, XO>; // merge slots: BR rows x (HS + 2) (LANES > 1)

@compute @workgroup_size(NTH)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    let C = a.C;
    let h = wid.y;
    let b = wid.z;
    let rloc = lid / LANES;
    let lane = lid % LANES;
    let i = wid.x * BR + rloc;
    let valid = i < T;
    let ib = (b * T + i) * C + h * HS;
    //!drop let dkey = tt_drop_key(a.p15);
    //!drop let drow = ((b * a.NH + h) * T + i) * T; // mask index of (i, key 0)
    var qv: array<f32, HS>;
    var o: array<f32, HS>;
    for (var d = 0u; d < HS; d++) {
        o[d] = 0.0;
        qv[d] = 0.0;
        if (valid) { qv[d] = q[a.q_off + ib + d] * a.scale; }
    }
    var m = -3.0e38;
    var l = 0.0;
    let i_last = min(T, (wid.x + 1u) * BR) - 1u;
    let n_tiles = i_last / BC + 1u;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let j0 = tile * BC;
        for (var e = lid; e < BC * HS; e += NTH) {
            let jr = e / HS;
            let dd = e % HS;
            let j = j0 + jr;
            var kv = 0.0;
            var vv = 0.0;
            if (j < T) {
                let src = (b * T + j) * C + h * HS + dd;
                kv = k[a.k_off + src];
                vv = v[a.v_off + src];
            }
            Ks[jr * KS + dd] = kv;
            Vs[jr * KS + dd] = vv;
        }
        workgroupBarrier();
        if (valid && j0 <= i) {
            let jn = min(BC, i - j0 + 1u);
            for (var jj = lane; jj < jn; jj += LANES) {
                var s = 0.0;
                for (var d = 0u; d < HS; d++) { s = fma(qv[d], Ks[jj * KS + d], s); }
                if (s > m) {
                    let corr = exp(m - s);
                    l *= corr;
                    for (var d = 0u; d < HS; d++) { o[d] *= corr; }
                    m = s;
                }
                let p = exp(s - m);
                l += p;
                var pv = p; // the weight of v_j
                //!drop pv = p * tt_drop_mul(dkey, drow + j0 + jj);
                for (var d = 0u; d < HS; d++) { o[d] = fma(pv, Vs[jj * KS + d], o[d]); }
            }
        }
        workgroupBarrier();
    }
    // merge lane src into lane 0 of the row, src = 1, 2, ... (fixed order)
    for (var src = 1u; src < LANES; src++) {
        let xb = rloc * (HS + 2u);
        if (lane == src) {
            for (var d = 0u; d < HS; d++) { Xo[xb + d] = o[d]; }
            Xo[xb + HS] = m;
            Xo[xb + HS + 1u] = l;
        }
        workgroupBarrier();
        if (lane == 0u) {
            let m2 = Xo[xb + HS];
            let mn = max(m, m2);
            let c1 = exp(m - mn);
            let c2 = exp(m2 - mn);
            l = l * c1 + Xo[xb + HS + 1u] * c2;
            for (var d = 0u; d < HS; d++) { o[d] = o[d] * c1 + Xo[xb + d] * c2; }
            m = mn;
        }
        workgroupBarrier();
    }
    if (valid && lane == 0u) {
        let inv = 1.0 / l;
        for (var d = 0u; d < HS; d++) { y[ib + d] = o[d] * inv; }
        lse[(b * a.NH + h) * T + i] = m + log(l);
    }
}
