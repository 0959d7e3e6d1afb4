// attention_rows_backward_dkdv.wgsl — attention backward, part 2 (LANES threads per key row
// j), queries i >= j streamed through workgroup memory in tiles of BC rows
// (row stride HS+1); lane l takes the queries ii = l, l + LANES, ... of each
// tile; the lanes' dk, dv partial sums are added into lane 0 in lane order:
//   p_ij = exp(scale q_i.k_j - lse_i); dv_j = sum_i p_ij dy_i
//   ds_ij = p_ij (dy_i.v_j - D_i);     dk_j = scale * sum_i ds_ij q_i
// stats = [lse | D] from attention_rows_forward / _backward_dq. Grid (ceil(T/BR), NH, B),
// workgroup BR*LANES. Prefix: HS, BR, BC, LANES, XO, KV1 (dk and dv in one
// buffer: dv written through the dk binding at o2_off).
// Dropout variant ("//!drop " lines, dropout_common.wgsl; key slot a.p15):
// with the forward's mask factor m (recomputed), dv takes p m and
// ds = p (m dp - D).
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
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> dk: array<f32>;
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;

const NTH: u32 = BR * LANES;
const KS: u32 = HS + 1u;
var<workgroup> Qs: array<f32, BC * KS>;
var<workgroup> Gs: array<f32, BC * KS>;
var<workgroup> Ls: array<f32, BC>;
var<workgroup> Ds: array<f32, BC>;
var<workgroup> Xo: array<f32, XO>; // BR rows x 2 HS (LANES > 1)

@compute @workgroup_size(NTH)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    let C = a.C;
    let h = wid.y;
    let b = wid.z;
    let rloc = lid / LANES;
    let lane = lid % LANES;
    let j = wid.x * BR + rloc;
    let valid = j < T;
    let jb = (b * T + j) * C + h * HS;
    let BNT = a.B * a.NH * T;
    let sbase = (b * a.NH + h) * T;
    //!drop let dkey = tt_drop_key(a.p15);
    var kv: array<f32, HS>;
    var vv: array<f32, HS>;
    var dka: array<f32, HS>;
    var dva: array<f32, HS>;
    for (var d = 0u; d < HS; d++) {
        kv[d] = 0.0;
        vv[d] = 0.0;
        dka[d] = 0.0;
        dva[d] = 0.0;
        if (valid) {
            kv[d] = k[a.k_off + jb + d] * a.scale;
            vv[d] = v[a.v_off + jb + d];
        }
    }
    let i_first = (wid.x * BR) / BC * BC;
    let n_tiles = (T - i_first + BC - 1u) / BC;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let i0 = i_first + tile * BC;
        for (var e = lid; e < BC * HS; e += NTH) {
            let ir = e / HS;
            let dd = e % HS;
            let i = i0 + ir;
            var qx = 0.0;
            var gx = 0.0;
            if (i < T) {
                let src = (b * T + i) * C + h * HS + dd;
                qx = q[a.q_off + src];
                gx = dy[src];
            }
            Qs[ir * KS + dd] = qx;
            Gs[ir * KS + dd] = gx;
        }
        for (var e = lid; e < BC; e += NTH) {
            let i = i0 + e;
            var lv = 0.0;
            var dvv = 0.0;
            if (i < T) {
                lv = stats[sbase + i];
                dvv = stats[BNT + sbase + i];
            }
            Ls[e] = lv;
            Ds[e] = dvv;
        }
        workgroupBarrier();
        if (valid && i0 + BC > j) {
            var ii0 = 0u;
            if (j > i0) { ii0 = j - i0; }
            let iin = min(BC, T - i0);
            for (var ii = ii0 + lane; ii < iin; ii += LANES) {
                var s = 0.0;
                var dp = 0.0;
                for (var d = 0u; d < HS; d++) {
                    s = fma(Qs[ii * KS + d], kv[d], s);
                    dp = fma(Gs[ii * KS + d], vv[d], dp);
                }
                let p = exp(s - Ls[ii]);
                var pm = p;   // p and dP through the mask
                var dpm = dp;
                //!drop let mf = tt_drop_mul(dkey, (sbase + i0 + ii) * T + j);
                //!drop pm = p * mf;
                //!drop dpm = dp * mf;
                let ds = p * (dpm - Ds[ii]);
                for (var d = 0u; d < HS; d++) {
                    dva[d] = fma(pm, Gs[ii * KS + d], dva[d]);
                    dka[d] = fma(ds, Qs[ii * KS + d], dka[d]);
                }
            }
        }
        workgroupBarrier();
    }
    for (var src = 1u; src < LANES; src++) {
        let xb = rloc * 2u * HS;
        if (lane == src) {
            for (var d = 0u; d < HS; d++) {
                Xo[xb + d] = dka[d];
                Xo[xb + HS + d] = dva[d];
            }
        }
        workgroupBarrier();
        if (lane == 0u) {
            for (var d = 0u; d < HS; d++) {
                dka[d] += Xo[xb + d];
                dva[d] += Xo[xb + HS + d];
            }
        }
        workgroupBarrier();
    }
    if (valid && lane == 0u) {
        for (var d = 0u; d < HS; d++) {
            dk[a.o1_off + jb + d] = dka[d] * a.scale;
            if (KV1) { dk[a.o2_off + jb + d] = dva[d]; } else { dv[a.o2_off + jb + d] = dva[d]; }
        }
    }
}
