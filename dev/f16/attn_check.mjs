// attn_check.mjs — the f16 tier's attention on subgroup matrices
// (src/webgpu/wgsl/attention_sgmat_*.wgsl: forward, backward dk/dv and dq,
// their common part; planned by src/webgpu/attention.c) under Dawn's Node
// binding, checked against float64 on a GPU host (lavapipe has no subgroup
// matrices); their time is the step profile's (bench/browser_engine.mjs
// --profile).
//   node dev/f16/attn_check.mjs /path/to/webgpu [check [N]|compile DIR|time]
// Kernels composed as src/webgpu/gpu_ops.c composes them (prefix, common.wgsl,
// the kernel with its //!include lines; //!unroll blocks unrolled).
// check: ragged T, several heads and batches, q/k/v at offsets of one buffer;
// y against the float64 attention of the f16-rounded q, k, v
// (max |gpu - ref| / max |ref| <= 2e-3: P is rounded to f16 for the PV
// product), lse within 1e-4 absolute; the backward (attention_backward_d, then
// attention_sgmat_backward_dkdv and _dq) on the forward's lse: dq, dk, dv
// against float64 with f16-rounded dY too, within 5e-3 of their largest.
// Two cases run the dropout variants (masks of src/rng.h, recomputed here).
// Each case runs in a process of its own (check N: case N alone): Dawn's
// Node binding has crashed (SIGSEGV) on the third case run in one process.
// Prints one JSON line per case; exit 1 if a check fails.
// time: one layer of the gpt2 b8 step (B 8, T 1024, 12 heads of 64), the
// forward, then the backward (D, dk/dv, dq), each the median of 7 x 10
// dispatches after a warm-up, one JSON line; with WGSL_DIR, another copy of
// the kernels (a variant: run the product and it one after the other, in one call).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { unroll } from "../wgsl_unroll.mjs";
import { addSgBounds, boundsMessage, medianMs, openDevice, r16, randoms, stubSgmat } from "./dawn_device.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const [dawnPath, what = "check", arg] = process.argv.slice(2);
const W = process.env.WGSL_DIR ? path.resolve(process.env.WGSL_DIR) + "/" : path.join(here, "../../src/webgpu/wgsl/"); // WGSL_DIR: another copy of the kernels
if (!dawnPath || !["check", "compile", "time"].includes(what)) {
  console.error("usage: node dev/f16/attn_check.mjs /path/to/webgpu [check [N]|compile DIR|time]");
  process.exit(2);
}
const { ai, sgcfg, device, buf } = await openDevice(dawnPath);
// the kernels: 16 x 16 x 16 matrices, SG / 16 lanes per row
const sgmat = !!sgcfg && sgcfg.M === 16 && sgcfg.N === 16 && sgcfg.K === 16 && ai.subgroupMaxSize % 16 === 0;
console.log(JSON.stringify({ adapter: ai.description || ai.device, sgmat, subgroups: [ai.subgroupMinSize, ai.subgroupMaxSize],
  wgStorage: device.limits.maxComputeWorkgroupStorageSize }));

const SGA = process.env.ATTN_SG || "4:64"; // NSG:BC of the experiment
// ATTN_X=a+b (time mode only; wrong results): a ladder on the forward, parts taken out of its key-tile
// loop to see what each costs: noqk (the S = Q K^T loads and multiply-accumulates), nosm (the two
// softmax loops' reads, exps and stores), nopv (the O += P V loads and multiply-accumulates), nobar
// (the loop's workgroup barriers); each throws where its text is gone
const cut = (src, re, name) => { const out = src.replace(re, ""); if (out === src) throw new Error(`ATTN_X ${name}: its text is not in the kernel`); return out; };
const ladder = {
  noqk: (t) => cut(cut(t, /^ *let kt = subgroupMatrixLoad.*\n/m, "noqk"), /^ *s\[n\] = subgroupMatrixMultiplyAccumulate\(lq\[d\], kt, s\[n\]\);\n/m, "noqk"),
  nosm: (t) => cut(cut(t, /^ *let v = select\(Sw.*\n *Sw\[sid\]\[row \* SSTR \+ cc\] = v;\n *mt = max\(mt, v\);\n/m, "nosm"),
    /^ *let p = exp\(Sw.*\n *ls \+= p;\n *Pw\[sid\]\[row \* ESTR \+ cc\] = f16\(p\);\n/m, "nosm"),
  nopv: (t) => cut(cut(cut(t, /^ *let lp = subgroupMatrixLoad.*\n/m, "nopv"), /^ *let vt = subgroupMatrixLoad.*\n/m, "nopv"),
    /^ *o\[d\] = subgroupMatrixMultiplyAccumulate\(lp, vt, o\[d\]\);\n/m, "nopv"),
  nobar: (t) => { const a = t.indexOf("for (var tile"), b = t.indexOf("// y = O / l, lse");
    if (a < 0 || b < a) throw new Error("ATTN_X nobar: the tile loop is not in the kernel");
    return t.slice(0, a) + t.slice(a, b).replaceAll("workgroupBarrier();", "") + t.slice(b); },
};
const XS = (process.env.ATTN_X || "").split("+").filter(Boolean);
for (const x of XS) if (!ladder[x]) { console.error(`attn_check: ATTN_X ${x}: not one of ${Object.keys(ladder).join(", ")}`); process.exit(2); }
if (XS.length && what !== "time") { console.error("attn_check: ATTN_X is for the time mode (its results are wrong)"); process.exit(2); }
const read = (f) => fs.readFileSync(f, "utf8");
// drop: the dropout variant as gpu_ops.c composes it (DROP_BIND after the kernel's bindings, its
// "//!drop " lines made code, dropout_common.wgsl appended)
function source(kind, hs, drop) {
  const { code, wg } = source0(kind, hs);
  if (!drop) return { code, wg };
  const bind = { sgmat: 6, dq: 7, dkdv: 8 }[kind];
  return { code: code.replaceAll("//!drop ", "        ") + `\nconst DROP_BIND: u32 = ${bind}u;\n` + read(W + "dropout_common.wgsl"), wg };
}
// attention.c's sga_skew: each lane's skew, 2 bits a lane, as two u32
function skew(bc, lpr) {
  const cpl = bc / lpr, w = [0, 0];
  let used = 0;
  for (let L = 0; L < 32; L++) {
    const st = Math.floor(L / lpr) * (bc + 4) + (L % lpr) * cpl;
    let k = 0;
    while (k < 4 && (used >>> ((st + k) % 32)) & 1) k++;
    if (k === 4) k = 0;
    used |= 1 << ((st + k) % 32);
    w[L >> 4] = (w[L >> 4] | (k << (2 * (L & 15)))) >>> 0;
  }
  return `const SKEW = vec2<u32>(${w[0]}u, ${w[1]}u);\n`;
}
function source0(kind, hs) {
  let prefix, body;
  if (kind === "sgmat") {
    const [nsg, bc] = SGA.split(":").map(Number), sg = ai.subgroupMaxSize, nth = nsg * sg, br = nsg * 16;
    prefix = `diagnostic(off, chromium.subgroup_matrix_uniformity);\nenable f16;\nenable subgroups;\n` +
      `enable chromium_experimental_subgroup_matrix;\nconst HS: u32 = ${hs}u;\nconst BR: u32 = ${br}u;\nconst BC: u32 = ${bc}u;\n` +
      `const VEC: bool = true;\nconst SG: u32 = ${sg}u;\nconst NSG: u32 = ${nsg}u;\nconst DK: u32 = ${hs / 16}u;\n` +
      `const NB: u32 = ${bc / 16}u;\nconst QQ: u32 = ${br * hs / 4 / nth}u;\nconst KQ: u32 = ${bc * hs / 4 / nth}u;\n` +
      skew(bc, sg / 16);
    body = XS.reduce((t, x) => ladder[x](t), read(W + "attention_sgmat_forward.wgsl"));
  } else if (kind === "d") { // attention.c ds_backward's D site
    prefix = `const HS: u32 = ${hs}u;\nconst VEC: bool = true;\nconst WG: u32 = 256u;\n`;
    body = read(W + "attention_backward_d.wgsl");
    return { code: unroll(`${prefix}\n${read(W + "common.wgsl")}\n${body}`, prefix), wg: 256 };
  } else if (kind === "dq" || kind === "dkdv") { // attention.c sg_backward
    const sg = ai.subgroupMaxSize, nsg = 4, bc = 32, nth = nsg * sg, br = nsg * 16;
    prefix = `diagnostic(off, chromium.subgroup_matrix_uniformity);\nenable f16;\nenable subgroups;\n` +
      `enable chromium_experimental_subgroup_matrix;\nconst HS: u32 = ${hs}u;\nconst BR: u32 = ${br}u;\nconst BC: u32 = ${bc}u;\n` +
      `const VEC: bool = true;\nconst SG: u32 = ${sg}u;\nconst NSG: u32 = ${nsg}u;\nconst DK: u32 = ${hs / 16}u;\n` +
      `const NB: u32 = ${bc / 16}u;\nconst QQ: u32 = ${br * hs / 4 / nth}u;\nconst KQ: u32 = ${bc * hs / 4 / nth}u;\nconst KV1: bool = false;\n` +
      skew(bc, sg / 16);
    body = read(W + `attention_sgmat_backward_${kind}.wgsl`);
    return { code: unroll(`${prefix}\n${read(W + "common.wgsl")}\n${body}`, prefix), wg: br };
  }
  return { code: unroll(`${prefix}\n${read(W + "common.wgsl")}\n${body}`, prefix), wg: 16 * Number(SGA.split(":")[0]) };
}
const entry = (b, type) => ({ binding: b, visibility: GPUShaderStage.COMPUTE, buffer: { type } });
const layout = device.createBindGroupLayout({ entries: [entry(0, "uniform"), entry(1, "read-only-storage"),
  entry(2, "read-only-storage"), entry(3, "read-only-storage"), entry(4, "storage"), entry(5, "storage")] });
const pipes = new Map();
async function pipeline(kind, hs, drop) {
  const key = kind + hs + (drop ? "drop" : "");
  if (pipes.has(key)) return pipes.get(key);
  const { code, wg } = source(kind, hs, drop && kind !== "d");
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code });
  const msgs = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error");
  const fwd = kind === "sgmat" && !drop;
  const p = device.createComputePipeline({ layout: fwd ? device.createPipelineLayout({ bindGroupLayouts: [layout] }) : "auto", compute: { module, entryPoint: "main" } });
  const err = await device.popErrorScope();
  if (msgs.length || err) throw new Error(`${kind}: ${msgs.map((m) => `${m.lineNum}: ${m.message}`).join("; ") || err.message}`);
  pipes.set(key, { p, wg });
  return pipes.get(key);
}
const CD = GPUBufferUsage.COPY_DST;
const rnd = randoms(11);

// q, k, v in one buffer at element offsets qo, ko, vo (multiples of 4), each (B, T, C)
function problem(B, T, NH, hs, amp) {
  const C = NH * hs, n = B * T * C, qo = 4, ko = qo + n + 4, vo = ko + n + 8, all = rnd(vo + n + 4, amp);
  return { B, T, NH, hs, C, n, qo, ko, vo, all };
}
async function dispatch(kind, pr, bufs, reps) {
  const { B, T, NH, hs, C, qo, ko, vo } = pr;
  const { p, wg } = await pipeline(kind, hs, !!bufs.keys);
  const f = new Float32Array([1 / Math.sqrt(hs)]), args = new Uint32Array(16);
  args.set([B, T, C, NH, new Uint32Array(f.buffer)[0], Math.ceil(hs / 4), 32, Math.ceil(32 * Math.ceil(hs / 4) / 128), 0, 0, 0, 0, qo, ko, vo, 0]);
  const u = device.createBuffer({ size: 64, usage: GPUBufferUsage.UNIFORM | CD }); device.queue.writeBuffer(u, 0, args);
  const list = [u, bufs.qkv, bufs.qkv, bufs.qkv, bufs.y, bufs.lse, ...(bufs.keys ? [bufs.keys] : [])];
  const g = device.createBindGroup({ layout: bufs.keys ? p.getBindGroupLayout(0) : layout, entries: list.map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  const e = device.createCommandEncoder();
  for (let r = 0; r < reps; r++) { const pass = e.beginComputePass(); pass.setPipeline(p); pass.setBindGroup(0, g); pass.dispatchWorkgroups(Math.ceil(T / wg), NH, B); pass.end(); }
  device.queue.submit([e.finish()]);
  await device.queue.onSubmittedWorkDone();
}
// the backward as attention.c's sg_backward plans it: D (attention_backward_d), dk/dv, dq; stats = [lse | D]
// (lse from the forward just run), dy at element 0 of its buffer, outputs dq, dk, dv in one buffer
async function backward(pr, bufs, reps) {
  const { B, T, NH, hs, C, n, qo, ko, vo } = pr;
  const f = new Float32Array([1 / Math.sqrt(hs)]), args = new Uint32Array(16);
  args.set([B, T, C, NH, new Uint32Array(f.buffer)[0], 0, 0, 0, 0, 0, 0, n, qo, ko, vo, 0]);
  const argsQ = args.slice(); argsQ[10] = 0;
  const argsK = args.slice(); argsK[10] = n; argsK[11] = 0;
  const uni = (a) => { const u = device.createBuffer({ size: 64, usage: GPUBufferUsage.UNIFORM | CD }); device.queue.writeBuffer(u, 0, a); return u; };
  const kk = bufs.keys ? [bufs.keys] : [], drop = kk.length > 0;
  const d = await pipeline("d", hs), dq = await pipeline("dq", hs, drop), dkdv = await pipeline("dkdv", hs, drop);
  const bg = (pp, list) => device.createBindGroup({ layout: pp.p.getBindGroupLayout(0), entries: list.map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  const gD = bg(d, [uni(args), bufs.y, bufs.dy, bufs.lse]);
  const gQ = bg(dq, [uni(argsQ), bufs.qkv, bufs.qkv, bufs.qkv, bufs.dy, bufs.lse, bufs.dq, ...kk]);
  const gK = bg(dkdv, [uni(argsK), bufs.qkv, bufs.qkv, bufs.qkv, bufs.dy, bufs.lse, bufs.dkv, bufs.dvv, ...kk]);
  const e = device.createCommandEncoder();
  for (let r = 0; r < reps; r++) {
    const pass = e.beginComputePass();
    pass.setPipeline(d.p); pass.setBindGroup(0, gD); pass.dispatchWorkgroups(Math.ceil(B * NH * T / 256));
    pass.setPipeline(dkdv.p); pass.setBindGroup(0, gK); pass.dispatchWorkgroups(Math.ceil(T / dkdv.wg), NH, B);
    pass.setPipeline(dq.p); pass.setBindGroup(0, gQ); pass.dispatchWorkgroups(Math.ceil(T / dq.wg), NH, B);
    pass.end();
  }
  device.queue.submit([e.finish()]);
  await device.queue.onSubmittedWorkDone();
}
async function readback(b, n) {
  const r = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | CD });
  const e = device.createCommandEncoder(); e.copyBufferToBuffer(b, 0, r, 0, n * 4); device.queue.submit([e.finish()]);
  await r.mapAsync(GPUMapMode.READ); const out = new Float32Array(r.getMappedRange().slice(0)); r.unmap(); return out;
}

// compile DIR: every .wgsl of DIR, whole kernels as the device gets them
// (tests/tools/wgsl_compose writes them through the product's own
// composition: these attention kernels and matmul_sgmat), compiled here with the matrix builtins stubbed where the
// adapter lacks them (dawn_device.mjs stubSgmat) and each matrix access at constant offsets checked against its
// array as Dawn checks it (addSgBounds): the CI's check
// (tests/webgpu/test_webgpu_sgmat_compile.sh) on lavapipe
if (what === "compile") {
  if (!arg) { console.error("attn_check: compile needs a DIR of composed kernels"); process.exit(2); }
  let bad = 0;
  for (const f of fs.readdirSync(arg).filter((f) => f.endsWith(".wgsl")).sort()) {
    let code = fs.readFileSync(path.join(arg, f), "utf8"), msgs;
    try {
      code = addSgBounds(code);
      if (!sgmat) code = stubSgmat(code);
      const m = device.createShaderModule({ code });
      msgs = (await m.getCompilationInfo()).messages.filter((x) => x.type === "error")
        .map((x) => `${x.lineNum}: ${boundsMessage(code, x.lineNum, x.message)}`);
    } catch (e) { msgs = [String(e.message || e)]; }
    if (msgs.length) bad++;
    console.log(JSON.stringify({ compile: f, stubbed: !sgmat, ok: !msgs.length, ...(msgs.length ? { errors: msgs.slice(0, 3) } : {}) }));
  }
  process.exit(bad ? 1 : 0);
}
if (!sgmat) { console.log(JSON.stringify({ blocked: "no f16 16x16x16 subgroup matrices here" })); process.exit(1); }
let failed = 0;
// dropout (src/rng.h): element i of key (k0, k1) kept iff (bits >> 8) >= round(p 2^24), kept ones times 1/(1-p)
const mix = (x) => { x ^= x >>> 16; x = Math.imul(x, 0x7feb352d); x ^= x >>> 15; x = Math.imul(x, 0x846ca68b); x ^= x >>> 16; return x >>> 0; };
function dropMask(p, k0, k1) {
  const th = Math.round(p * 2 ** 24), scale = Math.fround(1 / (1 - p));
  return { keys: new Uint32Array([th, new Uint32Array(new Float32Array([scale]).buffer)[0], 0, 0, k0, k1]),
    mul: (i) => ((mix((mix((i ^ k0) >>> 0) ^ k1) >>> 0) >>> 8) >= th ? scale : 0) };
}
async function check(c) {
  const pr = problem(c.B, c.T, c.NH, c.hs, c.amp || 1);
  const { B, T, NH, hs, C, n, qo, ko, vo, all } = pr;
  const dyv = rnd(n, 1);
  const bufs = { qkv: buf(all), y: buf(null, n * 4), lse: buf(null, 2 * B * NH * T * 4), dy: buf(dyv),
    dq: buf(null, n * 4), dkv: buf(null, 2 * n * 4), dvv: buf(null, n * 4) };
  const dm = c.drop ? dropMask(c.drop, 0x9e3779b9, 0x12345678) : null;
  if (dm) bufs.keys = buf(dm.keys);
  const mf = (b, h, i, j) => dm ? dm.mul(((b * NH + h) * T + i) * T + j) : 1; // mask factor of (row i, key j)
  await dispatch("sgmat", pr, bufs, 1);
  const y = await readback(bufs.y, n), lse = await readback(bufs.lse, B * NH * T);
  let bwd = null;
  if (c.bwd) { await backward(pr, bufs, 1); bwd = { dq: await readback(bufs.dq, n), dk: await readback(bufs.dkv, 2 * n), dv: await readback(bufs.dvv, n) }; }
  const gdq = new Float64Array(n), gdk = new Float64Array(n), gdv = new Float64Array(n);
  const all16 = Float64Array.from(all, r16), dy16 = Float64Array.from(dyv, r16);
  const at = (o, b, t, h, d) => all16[o + (b * T + t) * C + h * hs + d];
  let worst = 0, big = 0, lerr = 0;
  const s = new Float64Array(T);
  for (let b = 0; b < B; b++) for (let h = 0; h < NH; h++) for (let i = 0; i < T; i++) {
    let m = -Infinity;
    for (let j = 0; j <= i; j++) { let d = 0; for (let x = 0; x < hs; x++) d += at(qo, b, i, h, x) * at(ko, b, j, h, x); s[j] = d / Math.sqrt(hs); m = Math.max(m, s[j]); }
    let l = 0; for (let j = 0; j <= i; j++) { s[j] = Math.exp(s[j] - m); l += s[j]; }
    for (let x = 0; x < hs; x++) {
      let o = 0; for (let j = 0; j <= i; j++) o += s[j] * mf(b, h, i, j) * at(vo, b, j, h, x);
      o /= l; big = Math.max(big, Math.abs(o)); worst = Math.max(worst, Math.abs(o - y[(b * T + i) * C + h * hs + x]));
    }
    lerr = Math.max(lerr, Math.abs(m + Math.log(l) - lse[(b * NH + h) * T + i]));
    if (!bwd) continue;
    // backward of row i (f16-rounded dy): D = dy . y, dP_j = dy . v_j, dS_j = P_j (dP_j - D) / sqrt(hs)
    const sc = 1 / Math.sqrt(hs), dy = (x) => dy16[(b * T + i) * C + h * hs + x];
    const yi = new Float64Array(hs);
    for (let x = 0; x < hs; x++) { let o = 0; for (let j = 0; j <= i; j++) o += s[j] * mf(b, h, i, j) * at(vo, b, j, h, x); yi[x] = o / l; }
    let D = 0; for (let x = 0; x < hs; x++) D += dy(x) * yi[x];
    for (let j = 0; j <= i; j++) {
      const p = s[j] / l; let dp = 0; for (let x = 0; x < hs; x++) dp += dy(x) * at(vo, b, j, h, x);
      const e = mf(b, h, i, j), ds = p * (dp * e - D) * sc;
      for (let x = 0; x < hs; x++) {
        gdq[(b * T + i) * C + h * hs + x] += ds * at(ko, b, j, h, x);
        gdk[(b * T + j) * C + h * hs + x] += ds * at(qo, b, i, h, x);
        gdv[(b * T + j) * C + h * hs + x] += p * e * dy(x);
      }
    }
  }
  if (bwd) {
    const cmp = (ref, got, off) => { let w = 0, bg = 0; for (let e = 0; e < n; e++) { bg = Math.max(bg, Math.abs(ref[e])); w = Math.max(w, Math.abs(ref[e] - got[off + e])); } return w / (bg || 1); };
    const eq = cmp(gdq, bwd.dq, 0), ek = cmp(gdk, bwd.dk, n), ev = cmp(gdv, bwd.dv, 0);
    const okb = [eq, ek, ev].every((x) => Number.isFinite(x) && x <= 5e-3);
    if (!okb) failed++;
    console.log(JSON.stringify({ check: "sgmat backward", ...c, dqErr: +eq.toExponential(2), dkErr: +ek.toExponential(2), dvErr: +ev.toExponential(2), ok: okb }));
  }
  const rel = worst / (big || 1), ok = rel <= 2e-3 && lerr <= 1e-4 && Number.isFinite(rel) && Number.isFinite(lerr);
  if (!ok) failed++;
  console.log(JSON.stringify({ check: "sgmat", ...c, relErr: +rel.toExponential(2), lseErr: +lerr.toExponential(2), ok }));
}
const CASES = [{ B: 1, T: 64, NH: 1, hs: 64, bwd: 1 }, { B: 2, T: 130, NH: 3, hs: 64, bwd: 1 },
  { B: 1, T: 200, NH: 2, hs: 64, amp: 3, bwd: 1 }, { B: 1, T: 97, NH: 2, hs: 32, bwd: 1 }, { B: 1, T: 40, NH: 1, hs: 16, bwd: 1 },
  { B: 2, T: 130, NH: 2, hs: 64, bwd: 1, drop: 0.25 }, { B: 1, T: 97, NH: 2, hs: 32, bwd: 1, drop: 0.5 }];
if (what === "time") {
  const head = { time: "gpt2 b8 layer", wgsl: W, ladder: XS.join("+") || "none" };
  try {
    const pr = problem(8, 1024, 12, 64, 1), n = pr.n, bnt = 8 * 12 * 1024;
    const bufs = { qkv: buf(pr.all), y: buf(null, n * 4), lse: buf(null, 2 * bnt * 4), dy: buf(rnd(n, 1)), dq: buf(null, n * 4),
      dkv: buf(null, 2 * n * 4), dvv: buf(null, n * 4) };
    const fwd = await medianMs((r) => dispatch("sgmat", pr, bufs, r), 300), bwd = await medianMs((r) => backward(pr, bufs, r), 300);
    const flop = 2 * 2 * bnt * 1024 * 64 / 2; // Q K^T and P V, the causal half; the backward counted as 2.5x (FlashAttention-2's)
    console.log(JSON.stringify({ ...head, forward_ms: +fwd.toFixed(4), backward_ms: +bwd.toFixed(4),
      forward_tflops: +(flop / fwd / 1e9).toFixed(1), backward_tflops: +(2.5 * flop / bwd / 1e9).toFixed(1) }));
  } catch (e) { console.log(JSON.stringify({ ...head, error: String(e.message || e).slice(0, 600) })); process.exit(1); }
  process.exit(0);
}
if (what === "check" && arg === undefined) { // every case, each in a child process
  for (let i = 0; i < CASES.length; i++) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), dawnPath, "check", String(i)], { encoding: "utf8" });
    const lines = (r.stdout || "").split("\n").filter((l) => l.startsWith('{"check"'));
    for (const l of lines) console.log(l);
    if (r.status !== 0 || lines.length !== 2) {
      failed++;
      if (r.status !== 0 && lines.every((l) => !l.includes('"ok":false')))
        console.log(JSON.stringify({ check: "sgmat", ...CASES[i], error: `exit ${r.status ?? r.signal}` }));
    }
  }
} else if (what === "check") {
  const c = CASES[Number(arg)];
  if (!c) { console.error(`attn_check: no case ${arg} (0..${CASES.length - 1})`); process.exit(2); }
  try { await check(c); } catch (e) { failed++; console.log(JSON.stringify({ check: "sgmat", ...c, error: String(e.message || e).slice(0, 600) })); }
}
process.exit(failed ? 1 : 0);
