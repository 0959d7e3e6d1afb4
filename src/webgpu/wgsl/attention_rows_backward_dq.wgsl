// attention_rows_backward_dq.wgsl — attention backward, part 1 (LANES threads per query row
// i, lane l taking keys jj = l, l + LANES, ... of each tile; the lanes' dq
// partial sums are added into lane 0 in lane order; tiles as in attention_rows_forward):
//   D_i = dy_i . y_i                         (stored: stats[BNT + row])
//   p_ij = exp(scale q_i.k_j - lse_i), dp_ij = dy_i . v_j, ds = p (dp - D_i)
//   dq_i = scale * sum_{j<=i} ds_ij k_j
// stats = [lse (B*NH*T) | D (B*NH*T)]. Grid (ceil(T/BR), NH, B), workgroup
// BR*LANES. Prefix: HS, BR, BC, LANES, XO.
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// ds = p (m dp - D) with the forward's mask factor m, recomputed.
struct Args {
    B: u32, T: u32, C: u32, NH: u32,
    scale: f32, p5: u32, p6: u32, p7: u32,
    p8: u32, p9: u32, o1_off: u32, o2_off: u32, // element offsets of the outputs: dq (o1), or dk (o1) and dv (o2)
    q_off: u32, k_off: u32, v_off: u32, p15: u32,
}
@group(0) @binding(0) var<uniform> a: Args;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read> dy: array<f32>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

const NTH: u32 = BR * LANES;
const KS: u32 = HS + 1u;
var<workgroup> Ks: array<f32, BC * KS>;
var<workgroup> Vs: array<f32, BC * KS>;
var<workgroup> Xo: array<f32, XO>;

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
    let BNT = a.B * a.NH * T;
    let srow = (b * a.NH + h) * T + i;
    //!drop let dkey = tt_drop_key(a.p15);
    var qv: array<f32, HS>;
    var gv: array<f32, HS>;
    var acc: array<f32, HS>;
    var Di = 0.0;
    var L = 0.0;
    for (var d = 0u; d < HS; d++) {
        qv[d] = 0.0;
        gv[d] = 0.0;
        acc[d] = 0.0;
        if (valid) {
            qv[d] = q[a.q_off + ib + d] * a.scale;
            gv[d] = dy[ib + d];
            Di = fma(gv[d], y[ib + d], Di);
        }
    }
    if (valid) {
        L = stats[srow];
        if (lane == 0u) { stats[BNT + srow] = Di; }
    }
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
                var dp = 0.0;
                for (var d = 0u; d < HS; d++) {
                    s = fma(qv[d], Ks[jj * KS + d], s);
                    dp = fma(gv[d], Vs[jj * KS + d], dp);
                }
                var dpm = dp; // dP through the mask
                //!drop dpm = dp * tt_drop_mul(dkey, srow * T + j0 + jj);
                let ds = exp(s - L) * (dpm - Di);
                for (var d = 0u; d < HS; d++) { acc[d] = fma(ds, Ks[jj * KS + d], acc[d]); }
            }
        }
        workgroupBarrier();
    }
    for (var src = 1u; src < LANES; src++) {
        let xb = rloc * HS;
        if (lane == src) {
            for (var d = 0u; d < HS; d++) { Xo[xb + d] = acc[d]; }
        }
        workgroupBarrier();
        if (lane == 0u) {
            for (var d = 0u; d < HS; d++) { acc[d] += Xo[xb + d]; }
        }
        workgroupBarrier();
    }
    if (valid && lane == 0u) {
        for (var d = 0u; d < HS; d++) { dq[a.o1_off + ib + d] = acc[d] * a.scale; }
    }
}
