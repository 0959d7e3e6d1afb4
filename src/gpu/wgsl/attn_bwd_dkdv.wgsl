// attn_bwd_dkdv.wgsl — attention backward, part 2 (one thread per key row j),
// queries i >= j streamed through workgroup memory in tiles of BC rows:
//   p_ij = exp(scale q_i.k_j - lse_i); dv_j = sum_i p_ij dy_i
//   ds_ij = p_ij (dy_i.v_j - D_i);     dk_j = scale * sum_i ds_ij q_i
// stats = [lse | D] from attn_fwd / attn_bwd_dq. Grid (ceil(T/BR), NH, B).
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

var<workgroup> Qs: array<f32, BC * HS>;
var<workgroup> Gs: array<f32, BC * HS>;
var<workgroup> Ls: array<f32, BC>;
var<workgroup> Ds: array<f32, BC>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let T = a.T;
    let C = a.C;
    let h = wid.y;
    let b = wid.z;
    let j = wid.x * BR + lid;
    let valid = j < T;
    let jb = (b * T + j) * C + h * HS;
    let BNT = a.B * a.NH * T;
    let sbase = (b * a.NH + h) * T;
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
            kv[d] = k[jb + d] * a.scale;
            vv[d] = v[jb + d];
        }
    }
    let i_first = (wid.x * BR) / BC * BC;
    let n_tiles = (T - i_first + BC - 1u) / BC;
    for (var tile = 0u; tile < n_tiles; tile++) {
        let i0 = i_first + tile * BC;
        for (var e = lid; e < BC * HS; e += BR) {
            let i = i0 + e / HS;
            var qx = 0.0;
            var gx = 0.0;
            if (i < T) {
                let src = (b * T + i) * C + h * HS + e % HS;
                qx = q[src];
                gx = dy[src];
            }
            Qs[e] = qx;
            Gs[e] = gx;
        }
        for (var e = lid; e < BC; e += BR) {
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
            for (var ii = ii0; ii < iin; ii++) {
                var s = 0.0;
                var dp = 0.0;
                for (var d = 0u; d < HS; d++) {
                    s = fma(Qs[ii * HS + d], kv[d], s);
                    dp = fma(Gs[ii * HS + d], vv[d], dp);
                }
                let p = exp(s - Ls[ii]);
                let ds = p * (dp - Ds[ii]);
                for (var d = 0u; d < HS; d++) {
                    dva[d] = fma(p, Gs[ii * HS + d], dva[d]);
                    dka[d] = fma(ds, Qs[ii * HS + d], dka[d]);
                }
            }
        }
        workgroupBarrier();
    }
    if (valid) {
        for (var d = 0u; d < HS; d++) {
            dk[jb + d] = dka[d] * a.scale;
            dv[jb + d] = dva[d];
        }
    }
}
