// matmul_robust.mjs — what Dawn's robustness transform (the bounds clamps a
// browser always applies) costs src/webgpu/wgsl/matmul.wgsl at the gpt2
// step's shapes, under Dawn's Node binding (npm `webgpu`, the browser
// engine's Dawn): each kernel variant timed on a device with robustness (as
// in Chrome) and one with the `disable_robustness` toggle (as the native
// engine runs). Variants are kernel texts: the product's, files named on the
// command line, and "vecstore"
// is a diagnostic (its transposing stores are wrong on purpose: timing
// only), the others must give the product's bits (checked against "base").
//   node dev/robust/matmul_robust.mjs /path/to/dawn.node [variant,...] [shape prefix] [tile: 128]
// (variants: base = src/webgpu/wgsl/matmul.wgsl, vecstore, NAME=FILE)
// Prints one JSON line per (shape, variant, robustness).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { unroll } from "../wgsl_unroll.mjs";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const W = path.join(here, "../../src/webgpu/wgsl/");
const [dawnPath, only, shapeOnly, tileArg] = process.argv.slice(2);
const TILE = Number(tileArg || 128); // lavapipe: 32 (it compiles the 128 tile for minutes)
const { create, globals } = require(dawnPath);
Object.assign(globalThis, globals);
const read = (n) => fs.readFileSync(n.includes("/") ? n : W + n + ".wgsl", "utf8");

let cpuAdapter = false; // lavapipe: loops (as gpu_ops.c composes for CPU adapters)
// the variants: name -> kernel text
const base = read("matmul");
const variants = {
  base,
  vecstore: base.replace(/As\[so \+ kk \* BM4 \+ i\]\[c\] = SE\(v\.x\);[^}]*?SE\(v\.w\);/s, "As[so + kk * BM4 + i] = SV(v);")
                .replace(/Bs\[so \+ kk \* BN4 \+ i\]\[c\] = SE\(v\.x\);[^}]*?SE\(v\.w\);/s, "Bs[so + kk * BN4 + i] = SV(v);"),
  // diagnostics of the 128 tile only (SWZ off: s = 0; one stage where B is not transposed: sa = sb = 0):
  // are the shared-memory clamps what robustness costs, and does an index Tint can bound lose them?
  nosw: base.replaceAll("(ty ^ s)", "ty").replaceAll("(tx ^ s)", "tx").replaceAll("((BN4 / 2u + tx) ^ s)", "(BN4 / 2u + tx)")
            .replaceAll("((BM4 / 2u + ty) ^ s)", "(BM4 / 2u + ty)"),
  sa0: base.replaceAll("let sa = st * SA;", "let sa = select(st * SA, 0u, STAGES == 1u);").replaceAll("let sb = st * SB;", "let sb = select(st * SB, 0u, STAGES == 1u);"),
};
// index forms Dawn can bound, the stage offset alone as min() (m1) or the stage offset alone as % (m3: no % on swizzled columns)
variants.m1 = base.replaceAll("(st % STAGES) * SA", "min(st, STAGES - 1u) * SA").replaceAll("(st % STAGES) * SB", "min(st, STAGES - 1u) * SB");
variants.m3 = base.replaceAll(" % BM4)]", ")]").replaceAll(" % BN4)]", ")]");
variants.both = variants.nosw.replaceAll("let sa = st * SA;", "const sa = 0u;").replaceAll("let sb = st * SB;", "const sb = 0u;");
// NAME=FILE in the variant list: another kernel text (e.g. an older matmul.wgsl)
for (const v of (only || "").split(",")) if (v.includes("=")) variants[v.split("=")[0]] = read(path.resolve(v.split("=")[1]));
if (variants.vecstore === base) throw new Error("vecstore: pattern not found");
const names = Object.keys(variants).filter((v) => !only || only.split(",").some((o) => o.split("=")[0] === v));

function source(text, ta, tb, tile) {
  const db8 = tile === 128 && tb, bk = db8 ? 8 : 16, stages = tile === 128 && !db8 ? 1 : 2, tm = tile === 128 ? 8 : 4;
  const prefix = `const BM: u32 = ${tile}u;\nconst BN: u32 = ${tile}u;\nconst BK: u32 = ${bk}u;\nconst TM: u32 = ${tm}u;\n` +
    `const TN: u32 = ${tm}u;\nconst TRANS_A: bool = ${ta};\nconst TRANS_B: bool = ${tb};\nconst VEC: bool = true;\n` +
    `const STAGES: u32 = ${stages}u;\nconst SWZ: bool = ${tile !== 128};\nalias SE = f32;\nalias SV = vec4<SE>;\n`;
  return unroll(`${prefix}\n${read("common")}\n${text}`, prefix, cpuAdapter);
}

const keep = [];
async function open(robust) {
  const gpu = create(robust ? [] : ["enable-dawn-features=disable_robustness"]);
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  const L = adapter.limits;
  const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
    maxBufferSize: L.maxBufferSize } });
  const name = adapter.info.description || adapter.info.device;
  cpuAdapter = /llvmpipe|lavapipe|swiftshader/i.test(`${name} ${adapter.info.architecture}`);
  keep.push(gpu, adapter); // the instance and adapter must outlive their devices (collected ones free them)
  return { device, name, gpu };
}

const shapes = [
  { name: "fc fwd (bias)", M: 8192, N: 3072, K: 768, flags: 2 },
  { name: "fc fwd (plain)", M: 8192, N: 3072, K: 768 },
  { name: "fc proj fwd (bias res)", M: 8192, N: 768, K: 3072, flags: 6 },
  { name: "dX fc (TB)", M: 8192, N: 768, K: 3072, tb: 1 },
  { name: "dW fc (TA acc)", M: 768, N: 3072, K: 8192, ta: 1, flags: 1 },
  { name: "ragged fwd", M: 1000, N: 300, K: 200, flags: 7 },
  { name: "ragged TA", M: 130, N: 67, K: 100, ta: 1, flags: 1 },
  { name: "ragged TB", M: 96, N: 80, K: 160, tb: 1, flags: 3 },
  { name: "ragged both", M: 70, N: 130, K: 96, ta: 1, tb: 1, flags: 5 },
];
if (shapeOnly) shapes.splice(0, shapes.length, ...shapes.filter((s) => s.name.startsWith(shapeOnly)));
let seed = 7;
const rnd = (n) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) { seed = (seed * 1103515245 + 12345) >>> 0; a[i] = seed / 2 ** 31 - 1; } return a; };
const data = {};
for (const s of shapes) data[s.name] = { A: rnd(s.M * s.K), B: rnd(s.K * s.N + s.N), R: rnd(s.M * s.N), C: rnd(s.M * s.N) };

const ref = {};
for (const robust of [1, 0]) {
  const { device, name, gpu } = await open(robust);
  const S = GPUBufferUsage.STORAGE, CD = GPUBufferUsage.COPY_DST, CS = GPUBufferUsage.COPY_SRC;
  const layout = device.createBindGroupLayout({ entries: [
    { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } },
    ...[1, 2, 4, 5, 6, 7].map((b) => ({ binding: b, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } })),
    { binding: 3, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } }] });
  const buf = (d) => { const b = device.createBuffer({ size: d.byteLength, usage: S | CD | CS }); device.queue.writeBuffer(b, 0, d); return b; };
  for (const s of shapes) {
    const d = data[s.name], ta = !!s.ta, tb = !!s.tb;
    const bufs = { A: buf(d.A), B: buf(d.B), R: buf(d.R) };
    const lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
    const args = new Uint32Array([s.M, s.N, s.K, lda, ldb, s.M * s.N, 0, 0, 0, 0, 0, s.flags || 0, s.K, s.M, 1, 0]);
    const u = device.createBuffer({ size: 64, usage: GPUBufferUsage.UNIFORM | CD });
    device.queue.writeBuffer(u, 0, args);
    for (const v of names) {
      const row = { shape: s.name, variant: v, robust, device: name };
      try {
        device.pushErrorScope("validation");
        const module = device.createShaderModule({ code: source(variants[v], ta, tb, TILE) });
        const msgs = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error");
        const p = device.createComputePipeline({ layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }), compute: { module, entryPoint: "main" } });
        const err = await device.popErrorScope();
        if (msgs.length || err) throw new Error(msgs.map((m) => `${m.lineNum}: ${m.message}`).join("; ") || err.message);
        const C = buf(d.C);
        const bg = device.createBindGroup({ layout, entries: [u, bufs.A, bufs.B, C, bufs.B, bufs.R, bufs.A, bufs.B].map((b, i) => ({ binding: i, resource: { buffer: b } })) });
        const go = async (reps) => {
          const e = device.createCommandEncoder();
          for (let r = 0; r < reps; r++) { const pass = e.beginComputePass(); pass.setPipeline(p); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(Math.ceil(s.N / TILE), Math.ceil(s.M / TILE), 1); pass.end(); }
          device.queue.submit([e.finish()]);
          await device.queue.onSubmittedWorkDone();
        };
        // one dispatch from the fresh C: the bits, against base
        await go(1);
        const rb = device.createBuffer({ size: s.M * s.N * 4, usage: GPUBufferUsage.MAP_READ | CD });
        const e = device.createCommandEncoder(); e.copyBufferToBuffer(C, 0, rb, 0, s.M * s.N * 4); device.queue.submit([e.finish()]);
        await rb.mapAsync(GPUMapMode.READ); const out = new Uint32Array(rb.getMappedRange().slice(0)); rb.unmap();
        const key = s.name;
        if (v === "base" && robust === 1) ref[key] = out;
        if (ref[key]) { let diff = 0; for (let i = 0; i < out.length; i++) diff += out[i] !== ref[key][i]; row.bitsDiffer = diff; }
        if (s.M * s.N * s.K > 1e9) {
          for (const t0 = performance.now(); performance.now() - t0 < 700;) await go(5);
          const ts = [];
          for (let i = 0; i < 7; i++) { const t0 = performance.now(); await go(10); ts.push((performance.now() - t0) / 10); }
          ts.sort((a, b) => a - b);
          row.ms = +ts[3].toFixed(3); row.tflops = +(2 * s.M * s.N * s.K / ts[3] / 1e9).toFixed(1);
        }
      } catch (err) { row.error = String(err.message || err).slice(0, 400); }
      console.log(JSON.stringify(row));
    }
  }
  device.destroy();
  void gpu;
}
process.exit(0);
