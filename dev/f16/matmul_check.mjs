// matmul_check.mjs — the product's f16-tier matmul kernels under Dawn's Node
// binding (npm `webgpu`), checked against float64 and timed beside the f32
// kernel, on a GPU host (no test of the CI: lavapipe has no subgroup matrices).
//   node dev/f16/matmul_check.mjs /path/to/webgpu [check|time|all|peak] [f32|f16|sgmat]
// (/path/to/webgpu: the npm package folder, or its dawn.node.) The adapter is
// opened with allow_unsafe_apis,vulkan_enable_f16_on_nvidia (as the lead's
// harness opens it for the browser engine).
//
// Kernels, composed as src/webgpu/gpu_ops.c composes them (prefix, then
// common.wgsl, then the kernel; //!unroll blocks unrolled on GPUs, loops on CPU adapters), with
// the prefixes of src/webgpu/matmul.c:
//   f32     matmul.wgsl, the planner's 128 tile (tt_gop_mm_kcfg), f32 tiles
//   f16     the same with alias SE = f16 (operands rounded in the shared tiles)
//   sgmat   matmul_cast.wgsl (f16 copies of A and B, padded) then
//           matmul_sgmat.wgsl (subgroup matrices), composed as matmul.c's
//           sg_setup composes them: WM x WN subgroups per workgroup, TM x TN
//           result matrices each, k steps of BK (SGC="WMxWN:TMxTN:BK", by
//           default 2x2:4x4:32 as the product; the time mode also sweeps
//           SWEEP="2x2:4x4:32,2x4:4x2:32,..."), only where the device lists
//           an f16 -> f32 configuration with K dividing 16 (the largest)
// check (on the 32 and 128 tiles of the plain kernels): transposes, ragged shapes, ones rows, bias / R / accumulate, split-K
// slices and a batch of 3, each variant against the float64 product of its
// own operands (f16-rounded for f16 and sgmat): max |gpu - ref| / max |ref|
// must stay <= 1e-5 (f32 accumulation of exact products; 1e-4 for sgmat,
// whose accumulation order is the device's). time: the gpt2 step's products
// (B 8, T 1024) and 4096^3 (SHAPES= picks some by name), median of 7 x 10 dispatches after a warm-up.
// peak: the ceiling of subgroup matrices here, no staging, no storage
// (PEAK="WMxWN:TMxTN:BK,..."): multiply-accumulates alone, and with their
// matrices loaded from workgroup memory at every k step.
// Prints one JSON line per case; exit 1 if a check fails.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { unroll } from "../wgsl_unroll.mjs";
import { medianMs, openDevice, r16, randoms } from "./dawn_device.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const W = path.join(here, "../../src/webgpu/wgsl/");
const [dawnPath, what = "all"] = process.argv.slice(2);
if (!dawnPath) { console.error("usage: node dev/f16/matmul_check.mjs /path/to/webgpu [check|time|all|peak]"); process.exit(2); }
const { gpu, adapter, ai, sgcfg, sgmat, device, cpuAdapter, buf } = await openDevice(dawnPath);
// a subgroup-matrix configuration "WMxWN:TMxTN:BK" (matmul.c's MM_SG_*)
// ("...@FILE": the kernel's text from FILE, e.g. an older matmul_sgmat.wgsl to time beside the current one;
// "...@noload+nostore+nobar" (time mode only): the ladder below, made from the product's text)
const sgParse = (t) => { const [c, file] = t.split("@"), [w, r, bk] = c.split(":"), [wm, wn] = w.split("x").map(Number),
  [tm, tn] = r.split("x").map(Number);
  return { wm, wn, tm, tn, bk: Number(bk), name: t, file }; };
const sgDefault = sgParse(process.env.SGC || "2x2:4x4:32");
console.log(JSON.stringify({ adapter: ai.description || ai.device, f16: device.features.has("shader-f16"), sgmat, sgcfg,
  configs: ai.subgroupMatrixConfigs, subgroups: [ai.subgroupMinSize, ai.subgroupMaxSize] }));
if (!device.features.has("shader-f16")) { console.log(JSON.stringify({ blocked: "no shader-f16" })); process.exit(1); }

// ---- experiments on matmul_sgmat.wgsl, made from its text (each throws where its text is gone) ----
// The ladder (timing only, wrong results): what each part of a k step costs, by taking parts out of the
// product: noload (the next step's chunks not read: the first step's stored again), nostore (the
// chunks folded into one word instead of stored into the tiles: the reads stay), nobar (the k loop's
// two barriers gone); joined with "+", e.g. "2x2:4x4:32@noload+nostore+nobar" (multiply-accumulates
// and matrix loads from workgroup memory alone, as "peak" times them, in the product's loop).
// Experiments measured and not kept (docs/BENCHMARKS.md: two tile copies, f32 operands read as they
// are, rows permuted within a subgroup's tile rows) are in git history.
const at = (src, s, from = 0) => { const i = src.indexOf(s, from); if (i < 0) throw new Error(`experiment: "${s}" not in the kernel`); return i; };
function noload(src) {
  const a = at(src, "        ra = load_a(k + BK"), b = src.indexOf("\n", at(src, "        rb = load_b(k + BK")) + 1;
  return src.slice(0, a) + src.slice(b);
}
// the store of a chunk of tile T (from registers r) replaced by `by`
function chunkStore(src, T, r, by) {
  const b0 = at(src, `            ${T}[p][`), b1 = at(src, `] = ${r}[j];\n`, b0) + `] = ${r}[j];`.length;
  return src.slice(0, b0) + `            ${by}` + src.slice(b1);
}
function nostore(src) {
  for (const [T, r] of [["As", "ra"], ["Bs", "rb"]])
    src = chunkStore(src, T, r, `sink ^= ${r}[j].x ^ ${r}[j].y ^ ${r}[j].z ^ ${r}[j].w ^ c ^ p;`);
  const loop = "    for (var k = kbeg; k < kend; k += BK) {", tail = "    let split = nwg.z > a.nprod;";
  at(src, loop); at(src, tail);
  return src.replace(loop, "    var sink = 0u;\n" + loop).replace(tail, "    if (sink == 0x9e3779b9u) { Cm[0] = 1.0; }\n" + tail);
}
function nobar(src) {
  const b0 = at(src, "    for (var k = kbeg; k < kend; k += BK) {"), b1 = at(src, "    let split = nwg.z > a.nprod;");
  return src.slice(0, b0) + src.slice(b0, b1).replaceAll("workgroupBarrier();", "") + src.slice(b1);
}
const experiments = { noload, nostore, nobar };

// ---- kernel sources (gpu_ops.c's composition) ----
const read = (n) => fs.readFileSync(W + n + ".wgsl", "utf8");
function source(variant, ta, tb, vec, tile, g = sgDefault) {
  let prefix, body;
  if (variant === "sgmat") { // matmul.c sg_setup
    const nt = g.wm * g.wn * ai.subgroupMaxSize, bm = g.wm * g.tm * sgcfg.M, bn = g.wn * g.tn * sgcfg.N;
    prefix = `diagnostic(off, chromium.subgroup_matrix_uniformity);\nenable f16;\nenable subgroups;\n` +
      `enable chromium_experimental_subgroup_matrix;\nconst SM: u32 = ${sgcfg.M}u;\nconst SN: u32 = ${sgcfg.N}u;\n` +
      `const SK: u32 = ${sgcfg.K}u;\nconst TM: u32 = ${g.tm}u;\nconst TN: u32 = ${g.tn}u;\nconst TMN: u32 = ${g.tm * g.tn}u;\n` +
      `const SG: u32 = ${ai.subgroupMaxSize}u;\nconst WM: u32 = ${g.wm}u;\nconst WN: u32 = ${g.wn}u;\nconst BK: u32 = ${g.bk}u;\n` +
      `const AQ: u32 = ${bm * g.bk / 8 / nt}u;\nconst BQ: u32 = ${bn * g.bk / 8 / nt}u;\nconst KQ: u32 = ${g.bk / sgcfg.K}u;\n` +
      `const TRANS_A: bool = ${ta};\nconst TRANS_B: bool = ${tb};\n`;
    // "@a+b+FILE": experiments a, b applied to FILE's text (default the product's)
    const xs = g.file ? g.file.split("+") : [], file = xs.find((x) => !experiments[x]);
    body = xs.filter((x) => experiments[x]).reduce((s, x) => experiments[x](s, ta, tb),
      file ? fs.readFileSync(file, "utf8") : read("matmul_sgmat"));
  } else if (variant === "cast") {
    prefix = `enable f16;\nconst WG: u32 = 256u;\n`;
    body = read("matmul_cast");
  } else { // tt_gop_mm_kcfg: the 128 tile 8x8 per thread, B transposed BK 8 in two stages; 64, 32: 4x4, two stages, swizzled
    const db8 = tile === 128 && tb, bk = db8 ? 8 : 16, stages = tile === 128 && !db8 ? 1 : 2, tm = tile === 128 ? 8 : 4;
    prefix = `${variant === "f16" ? "enable f16;\n" : ""}const BM: u32 = ${tile}u;\nconst BN: u32 = ${tile}u;\nconst BK: u32 = ${bk}u;\nconst TM: u32 = ${tm}u;\n` +
      `const TN: u32 = ${tm}u;\nconst TRANS_A: bool = ${ta};\nconst TRANS_B: bool = ${tb};\nconst VEC: bool = ${vec};\n` +
      `const STAGES: u32 = ${stages}u;\nconst SWZ: bool = ${tile !== 128};\nalias SE = ${variant === "f16" ? "f16" : "f32"};\nalias SV = vec4<SE>;\n`;
    body = read("matmul");
  }
  return unroll(`${prefix}\n${read("common")}\n${body}`, prefix, cpuAdapter);
}
const CD = GPUBufferUsage.COPY_DST;
const layout = device.createBindGroupLayout({ entries: [
  { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } },
  ...[1, 2, 4, 5, 6, 7].map((b) => ({ binding: b, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } })),
  { binding: 3, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } }] });
const entry = (b, type) => ({ binding: b, visibility: GPUShaderStage.COMPUTE, buffer: { type } });
const sgLayout = device.createBindGroupLayout({ entries: [entry(0, "uniform"), entry(1, "read-only-storage"),
  entry(2, "read-only-storage"), entry(3, "storage"), entry(4, "read-only-storage"), entry(5, "read-only-storage")] });
const castLayout = device.createBindGroupLayout({ entries: [entry(0, "uniform"), entry(1, "read-only-storage"), entry(2, "storage")] });
const layoutOf = (v) => v === "sgmat" ? sgLayout : v === "cast" ? castLayout : layout;
const pipes = new Map();
async function pipeline(variant, ta, tb, vec, tile, g = sgDefault) {
  const key = `${variant}${ta}${tb}${vec}${tile}${g.name}`;
  if (pipes.has(key)) return pipes.get(key);
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code: source(variant, ta, tb, vec, tile, g) });
  const msgs = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error");
  const p = device.createComputePipeline({ layout: device.createPipelineLayout({ bindGroupLayouts: [layoutOf(variant)] }), compute: { module, entryPoint: "main" } });
  const err = await device.popErrorScope();
  if (msgs.length || err) throw new Error(`${variant}: ${msgs.map((m) => `${m.lineNum}: ${m.message}`).join("; ") || err.message}`);
  pipes.set(key, p);
  return p;
}
const rnd = randoms(7);

// one product as matmul.c plans it (tile: the variant's; z slices of kchunk; nprod products)
async function run(variant, c, reps = 1) {
  const { M, N, K, ta, tb, flags = 0, ones = 0, splits = 1, nprod = 1 } = c;
  const am = M - ones, lda = ta ? am : K, ldb = tb ? K : N, bstride = nprod > 1 ? K * N + N : 0, cstride = M * N;
  const kchunk = splits > 1 ? Math.ceil(Math.ceil(K / splits) / 16) * 16 : K, z = Math.ceil(K / kchunk);
  const args = new Uint32Array([M, N, K, lda, ldb, cstride, 0, 0, 0, 0, 0, flags, kchunk, am, nprod, bstride]);
  const tile = variant === "sgmat" ? 64 : c.tile || 128;
  return { args, z, tile, groups: [Math.ceil(N / tile), Math.ceil(M / tile), z * nprod], reps };
}
// matmul.c sg_setup: the two f16 copies (matmul_cast), then the product on them
const ru = (x, m) => Math.ceil(x / m) * m;
function uni(args) { const u = device.createBuffer({ size: 64, usage: GPUBufferUsage.UNIFORM | CD }); device.queue.writeBuffer(u, 0, args); return u; }
async function sgDispatch(c, bufs, reps, g = sgDefault, productOnly = false) {
  const { M, N, K, ta = 0, tb = 0, flags = 0, ones = 0, splits = 1, nprod = 1 } = c;
  const am = M - ones, lda = ta ? am : K, ldb = tb ? K : N, bstride = nprod > 1 ? K * N + N : 0, cstride = M * N;
  const kchunk = splits > 1 ? Math.ceil(Math.ceil(K / splits) / 16) * 16 : K, z = Math.ceil(K / kchunk);
  const bm = g.wm * g.tm * sgcfg.M, bn = g.wn * g.tn * sgcfg.N, Kp = ru(K, 16), Mp = ru(M, bm), Np = ru(N, bn);
  const adr = ta ? Kp : Mp, adld = ta ? Mp : Kp, bdr = tb ? Np : Kp, bdld = tb ? Kp : Np, na = adr * adld, nb = bdr * bdld;
  const key = `h16:${na + nprod * nb}`;
  if (!bufs[key]) bufs[key] = buf(null, (na + nprod * nb) * 2 + Number(process.env.H16_SLACK || 0));
  const H = bufs[key];
  const castA = new Uint32Array([ta ? K : am, ta ? am : K, lda, 0, ta ? K : M, ta ? M : K, adld, adr, 0, 1, 0, 0, 0, 0, 0, 0]);
  const castB = new Uint32Array([tb ? N : K, tb ? K : N, ldb, 0, 0, 0, bdld, bdr, na, nprod, bstride, nb, 0, 0, 0, 0]);
  const args = new Uint32Array([M, N, K, adld, bdld, cstride, 0, na, 0, 0, 0, flags, kchunk, nb, nprod, bstride]);
  const pc = await pipeline("cast", 0, 0, 0, 0), pp = await pipeline("sgmat", !!ta, !!tb, 0, 0, g);
  const C = z > 1 ? buf(null, z * M * N * nprod * 4) : bufs.C;
  const gA = device.createBindGroup({ layout: castLayout, entries: [uni(castA), bufs.A, H].map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  const gB = device.createBindGroup({ layout: castLayout, entries: [uni(castB), bufs.B, H].map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  const gP = device.createBindGroup({ layout: sgLayout, entries: [uni(args), H, H, C, bufs.bias, bufs.R]
    .map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  const wgs = (n4) => Math.min(Math.ceil(n4 / 256), 32768);
  const e = device.createCommandEncoder();
  for (let r = 0; r < reps; r++) {
    const pass = e.beginComputePass();
    if (!productOnly || r === 0) {
      pass.setPipeline(pc); pass.setBindGroup(0, gA); pass.dispatchWorkgroups(wgs(na / 4));
      pass.setBindGroup(0, gB); pass.dispatchWorkgroups(wgs(nprod * nb / 4));
    }
    pass.setPipeline(pp); pass.setBindGroup(0, gP); pass.dispatchWorkgroups(Np / bn, Mp / bm, z * nprod); pass.end();
  }
  device.queue.submit([e.finish()]);
  await device.queue.onSubmittedWorkDone();
  return { C, z };
}
async function dispatch(variant, c, bufs, reps) {
  if (variant === "sgmat") return sgDispatch(c, bufs, reps);
  const plan = await run(variant, c);
  const vec = ((plan.args[3] | plan.args[4] | plan.args[15]) & 3) === 0; // matmul.c: lda, ldb, bstride 4-aligned
  const p = await pipeline(variant, !!c.ta, !!c.tb, vec, plan.tile);
  const u = device.createBuffer({ size: 64, usage: GPUBufferUsage.UNIFORM | CD });
  device.queue.writeBuffer(u, 0, plan.args);
  const C = plan.z > 1 ? buf(null, plan.z * c.M * c.N * (c.nprod || 1) * 4) : bufs.C;
  const bg = device.createBindGroup({ layout, entries: [u, bufs.A, bufs.B, C, bufs.bias, bufs.R, bufs.A, bufs.B].map((b, i) =>
    ({ binding: i, resource: { buffer: b } })) });
  const e = device.createCommandEncoder();
  for (let r = 0; r < reps; r++) { const pass = e.beginComputePass(); pass.setPipeline(p); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(...plan.groups); pass.end(); }
  device.queue.submit([e.finish()]);
  await device.queue.onSubmittedWorkDone();
  return { C, z: plan.z };
}
async function readback(b, n) {
  const r = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | CD });
  const e = device.createCommandEncoder(); e.copyBufferToBuffer(b, 0, r, 0, n * 4); device.queue.submit([e.finish()]);
  await r.mapAsync(GPUMapMode.READ); const out = new Float32Array(r.getMappedRange().slice(0)); r.unmap(); r.destroy(); return out;
}

let failed = 0;
async function check(variant, c) {
  const { M, N, K, ta = 0, tb = 0, flags = 0, ones = 0, nprod = 1 } = c;
  const am = M - ones, bst = nprod > 1 ? K * N + N : 0;
  const A = rnd(am * K), B = rnd(nprod > 1 ? nprod * bst : K * N + N), R = rnd(nprod * M * N), C0 = rnd(nprod * M * N);
  const bufs = { A: buf(A), B: buf(B), bias: buf(B), R: buf(R), C: buf(C0) };
  const { C, z } = await dispatch(variant, c, bufs, 1);
  const rd = variant === "f32" ? (x) => x : r16;
  let got;
  if (z > 1) { // add the slices as matmul_splitk_reduce does (here on the host; no epilogue)
    const part = await readback(C, z * nprod * M * N); got = new Float64Array(nprod * M * N);
    for (let s = 0; s < z; s++) for (let i = 0; i < nprod * M * N; i++) got[i] += part[s * nprod * M * N + i];
  } else got = await readback(C, nprod * M * N);
  let worst = 0, big = 0;
  for (let p = 0; p < nprod; p++) for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
    let s = 0;
    for (let k = 0; k < K; k++) {
      const a = m >= am ? 1 : ta ? A[k * am + m] : A[m * K + k];
      const b = tb ? B[p * bst + n * K + k] : B[p * bst + k * N + n];
      s += rd(a) * rd(b);
    }
    const i = p * M * N + m * N + n;
    if (z === 1) { if (flags & 2) s += B[p * bst + n]; if (flags & 4) s += R[i]; if (flags & 1) s += C0[i]; }
    worst = Math.max(worst, Math.abs(s - got[i])); big = Math.max(big, Math.abs(s));
  }
  if (process.env.CASES) { // diagnosis: the first outputs beside their references
    const show = [];
    for (let i = 0; i < Math.min(6, nprod * M * N); i++) show.push(+got[i].toFixed(4));
    console.log(JSON.stringify({ got: show }));
  }
  const rel = worst / (big || 1), tol = variant === "sgmat" ? 1e-4 : 1e-5, ok = rel <= tol;
  if (!ok) failed++;
  console.log(JSON.stringify({ check: variant, ...c, relErr: +rel.toExponential(2), ok }));
}

const only = process.argv[4]; // one variant (f32, f16, sgmat) or all
const variants = ["f32", "f16", ...(sgmat ? ["sgmat"] : [])].filter((v) => !only || v === only);
if (what === "check" || what === "all") {
  const cases = process.env.CASES ? JSON.parse(process.env.CASES) : [
    { M: 64, N: 64, K: 64 }, { M: 130, N: 67, K: 33, flags: 7 }, { M: 100, N: 200, K: 300, ta: 1 },
    { M: 96, N: 80, K: 160, tb: 1, flags: 3 }, { M: 70, N: 130, K: 96, ta: 1, tb: 1, flags: 5 },
    { M: 65, N: 96, K: 200, ta: 1, ones: 1, flags: 1 }, { M: 128, N: 192, K: 1000, splits: 4 },
    { M: 72, N: 96, K: 64, nprod: 3, flags: 2 }, { M: 1, N: 1, K: 1 }, { M: 17, N: 3, K: 65, tb: 1 },
  ];
  for (const v of variants) for (const c0 of cases) for (const tile of [32, 128]) {
    if (tile === 128 && (cpuAdapter || v === "sgmat")) continue; // lavapipe compiles a 128 tile for minutes; sgmat has no tiles
    const c = { ...c0, tile };
    // matmul.c sg_setup keeps the f16 tiles for outputs fewer than one result matrix (Dawn refuses the
    // dispatch; its flop floor is not applied here: the checks are small)
    if (v === "sgmat" && (c.nprod || 1) * c.M * c.N < sgcfg.M * sgcfg.N) continue;
    try { await check(v, c); } catch (e) { failed++; console.log(JSON.stringify({ check: v, ...c, error: String(e.message || e) })); }
  }
}
if (what === "time" || what === "all") {
  // the gpt2 step's products at B 8, T 1024 (BT = 8192, C = 768, V padded 50304), and 4096^3
  const shapes = [
    { name: "4096^3", M: 4096, N: 4096, K: 4096 },
    { name: "qkv fwd", M: 8192, N: 2304, K: 768 }, { name: "attn proj fwd", M: 8192, N: 768, K: 768 },
    { name: "fc fwd", M: 8192, N: 3072, K: 768 }, { name: "fc proj fwd", M: 8192, N: 768, K: 3072 },
    { name: "head fwd", M: 8192, N: 50304, K: 768, tb: 1 }, { name: "dX fc proj", M: 8192, N: 3072, K: 768, tb: 1 },
    { name: "dW fc", M: 768, N: 3072, K: 8192, ta: 1 },
  ];
  const pick = process.env.SHAPES ? process.env.SHAPES.split(",") : null; // e.g. SHAPES="4096^3,dW fc"
  for (const sh of shapes.filter((x) => !pick || pick.includes(x.name))) {
    const { M, N, K, ta = 0, tb = 0 } = sh;
    const bufs = { A: buf(null, M * K * 4), B: buf(null, K * N * 4 + N * 4), bias: buf(null, 16), R: buf(null, 16), C: buf(null, M * N * 4) };
    const row = { time: sh.name, M, N, K, ta, tb };
    if (sgmat && (!only || only === "sgmat"))
      for (const t of (process.env.SWEEP || "").split(",").filter(Boolean)) {
        const g = sgParse(t);
        try {
          const ms = await medianMs((r) => sgDispatch(sh, bufs, r, g), 300), mp = await medianMs((r) => sgDispatch(sh, bufs, r, g, true), 300);
          row[`sg${t}_ms`] = +ms.toFixed(3); row[`sg${t}_tflops`] = +(2 * M * N * K / ms / 1e9).toFixed(1);
          row[`sg${t}_product_tflops`] = +(2 * M * N * K / mp / 1e9).toFixed(1);
        } catch (e) { row[`sg${t}_error`] = String(e.message || e).slice(0, 300); }
      }
    for (const v of variants) {
      try {
        const ms = await medianMs((r) => dispatch(v, sh, bufs, r), 1000);
        row[v + "_ms"] = +ms.toFixed(3); row[v + "_tflops"] = +(2 * M * N * K / ms / 1e9).toFixed(1);
      } catch (e) { row[v + "_error"] = String(e.message || e).slice(0, 300); }
    }
    console.log(JSON.stringify(row));
  }
}
if (what === "peak" && sgmat) {
  // the ceiling of subgroup matrices through this Dawn: every subgroup of WM x WN holds TM x TN result
  // matrices and runs ITER k steps of TM x TN multiply-accumulates on matrices loaded once ("mma"), or
  // loaded from workgroup memory at every step as the product's kernel does ("lds+mma"); no staging
  for (const t of (process.env.PEAK || "2x2:4x4:32,2x2:2x4:32,4x2:4x4:32").split(",")) {
    const g = sgParse(t), nsg = g.wm * g.wn, it = 2048, wgs = 132 * 16;
    for (const mode of ["mma", "lds+mma"]) {
      const lds = mode !== "mma";
      const code = `diagnostic(off, chromium.subgroup_matrix_uniformity);\nenable f16;\nenable subgroups;\n` +
        `enable chromium_experimental_subgroup_matrix;\n@group(0) @binding(0) var<storage, read_write> O: array<f32>;\n` +
        `alias LeftT = subgroup_matrix_left<f16, ${sgcfg.K}, ${sgcfg.M}>;\nalias RightT = subgroup_matrix_right<f16, ${sgcfg.N}, ${sgcfg.K}>;\n` +
        `alias ResultT = subgroup_matrix_result<f32, ${sgcfg.N}, ${sgcfg.M}>;\n` +
        `var<workgroup> Z: array<f16, ${(g.tm + g.tn) * 2 * 16 * 24}>;\n` +
        `@compute @workgroup_size(${nsg * ai.subgroupMaxSize}) fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {\n` +
        `  var la: array<LeftT, ${g.tm}>; var lb: array<RightT, ${g.tn}>; var acc: array<ResultT, ${g.tm * g.tn}>;\n` +
        // constant indices only: an array of matrices indexed by a variable is kept in memory, not registers
        [...Array(g.tm).keys()].map((i) => `  la[${i}] = subgroupMatrixLoad<LeftT>(&Z, ${i * 384}u, false, 24u);\n`).join("") +
        [...Array(g.tn).keys()].map((i) => `  lb[${i}] = subgroupMatrixLoad<RightT>(&Z, ${(g.tm + i) * 384}u, false, 24u);\n`).join("") +
        `  for (var k = 0u; k < ${it}u; k++) {\n` +
        (lds ? `    let o = (k & 1u) * ${(g.tm + g.tn) * 384}u;\n` +
          [...Array(g.tm).keys()].map((i) => `    la[${i}] = subgroupMatrixLoad<LeftT>(&Z, o + ${i * 384}u, false, 24u);\n`).join("") +
          [...Array(g.tn).keys()].map((i) => `    lb[${i}] = subgroupMatrixLoad<RightT>(&Z, o + ${(g.tm + i) * 384}u, false, 24u);\n`).join("") : "") +
        [...Array(g.tm * g.tn).keys()].map((i) => `    acc[${i}] = subgroupMatrixMultiplyAccumulate(la[${Math.floor(i / g.tn)}], lb[${i % g.tn}], acc[${i}]);\n`).join("") +
        `  }\n  let base = (wid.x * ${nsg}u + sid) * ${g.tm * g.tn * 256}u;\n` +
        [...Array(g.tm * g.tn).keys()].map((i) => `  subgroupMatrixStore(&O, base + ${i * 256}u, acc[${i}], false, 16u);\n`).join("") + `}\n`;
      try {
        device.pushErrorScope("validation");
        const module = device.createShaderModule({ code });
        const p = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
        const err = await device.popErrorScope();
        if (err) throw new Error(err.message);
        const O = buf(null, wgs * nsg * g.tm * g.tn * 256 * 4);
        const bg = device.createBindGroup({ layout: p.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: O } }] });
        const go = async (reps) => { const e = device.createCommandEncoder();
          for (let r = 0; r < reps; r++) { const pass = e.beginComputePass(); pass.setPipeline(p); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(wgs); pass.end(); }
          device.queue.submit([e.finish()]); await device.queue.onSubmittedWorkDone(); };
        await go(3);
        const ts = [];
        for (let i = 0; i < 5; i++) { const t0 = performance.now(); await go(5); ts.push((performance.now() - t0) / 5); }
        ts.sort((a, b) => a - b);
        const flop = 2 * wgs * nsg * it * g.tm * g.tn * sgcfg.M * sgcfg.N * sgcfg.K;
        console.log(JSON.stringify({ peak: t, mode, ms: +ts[2].toFixed(3), tflops: +(flop / ts[2] / 1e9).toFixed(1) }));
      } catch (e) { console.log(JSON.stringify({ peak: t, mode, error: String(e.message || e).slice(0, 300) })); }
    }
  }
}
process.exit(failed ? 1 : 0);
