// probe.mjs — what Dawn's Node binding (npm `webgpu`) offers on this GPU, with
// and without the NVIDIA f16 toggle, and one f16 x f16 -> f32 subgroup-matrix
// matmul timed against a plain fp32 tiled matmul on the same device.
// Usage: node dev/f16/probe.mjs /path/to/dawn.node [N]   (dawn.node: npm `webgpu` 0.6.2, dist/linux-x64)
// Prints JSON lines: {"adapter": ...} for each toggle set, then {"matmul": ...}.
import { createRequire } from "node:module";
import { medianMs } from "./dawn_device.mjs";
const require = createRequire(import.meta.url);
const dawnPath = process.argv[2];
const N = Number(process.argv[3] || 4096);
const { create, globals } = require(dawnPath);
Object.assign(globalThis, globals);

async function describe(flags) {
  const gpu = create(flags);
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) return { flags, adapter: null };
  const info = adapter.info || {};
  const cfgs = (info.subgroupMatrixConfigs || []).map((c) => ({
    M: c.M, N: c.N, K: c.K, componentType: c.componentType, resultComponentType: c.resultComponentType,
  }));
  const limits = {};
  for (const k of ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup"])
    limits[k] = adapter.limits[k];
  return { gpu, adapter, desc: { flags, name: info.description || info.device, vendor: info.vendor, arch: info.architecture,
    subgroupMinSize: info.subgroupMinSize, subgroupMaxSize: info.subgroupMaxSize,
    features: [...adapter.features].sort(), subgroupMatrixConfigs: cfgs, limits } };
}

const plain = await describe([]);
console.log(JSON.stringify({ adapter: plain.desc || null }));
const tog = await describe(["enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia"]);
console.log(JSON.stringify({ adapter: tog.desc || null }));
if (!tog.adapter) process.exit(0);

const feats = tog.desc.features;
const cfgs = tog.desc.subgroupMatrixConfigs.filter((c) => c.componentType === "f16" && c.resultComponentType === "f32");
const cfg = cfgs[0];
const want = ["shader-f16", "subgroups", "chromium-experimental-subgroup-matrix", "timestamp-query"].filter((f) => feats.includes(f));
const device = await tog.adapter.requestDevice({
  requiredFeatures: want,
  requiredLimits: { maxStorageBufferBindingSize: tog.desc.limits.maxStorageBufferBindingSize,
                    maxBufferSize: tog.desc.limits.maxBufferSize },
});
device.addEventListener?.("uncapturederror", (e) => console.log(JSON.stringify({ error: String(e.error?.message || e) })));

// random data, A (N x N) and B (N x N) row-major
function rnd(n, seed) { const a = new Float32Array(n); let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; a[i] = (s / 4294967296) * 2 - 1; } return a; }
const A = rnd(N * N, 1), B = rnd(N * N, 2);
function f16bits(x) { // round to nearest even f32 -> f16 bits
  const f = new Float32Array([x]); const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000; let e = ((u >>> 23) & 0xff) - 127 + 15; let m = u & 0x7fffff;
  if (e <= 0) return sign; if (e >= 31) return sign | 0x7c00;
  let h = sign | (e << 10) | (m >>> 13); const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++; return h; }
function f16val(h) { const e = (h >> 10) & 31, m = h & 1023, s = h & 0x8000 ? -1 : 1;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15); }
const A16 = new Uint16Array(N * N), B16 = new Uint16Array(N * N);
for (let i = 0; i < N * N; i++) { A16[i] = f16bits(A[i]); B16[i] = f16bits(B[i]); }

function buf(data, usage) { const b = device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  device.queue.writeBuffer(b, 0, data); return b; }
const S = GPUBufferUsage.STORAGE;
const bA = buf(A, S), bB = buf(B, S), bA16 = buf(A16, S), bB16 = buf(B16, S);
const bC = device.createBuffer({ size: N * N * 4, usage: S | GPUBufferUsage.COPY_SRC });

async function readC() { const r = device.createBuffer({ size: N * N * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const e = device.createCommandEncoder(); e.copyBufferToBuffer(bC, 0, r, 0, N * N * 4); device.queue.submit([e.finish()]);
  await r.mapAsync(GPUMapMode.READ); const out = new Float32Array(r.getMappedRange().slice(0)); r.unmap(); r.destroy(); return out; }

async function timeKernel(name, code, bindings, groups, flopsPerRun, check) {
  let mod;
  try {
    device.pushErrorScope("validation");
    mod = device.createShaderModule({ code });
    const info = await mod.getCompilationInfo();
    const errs = info.messages.filter((m) => m.type === "error").map((m) => m.message);
    const pipe = device.createComputePipeline({ layout: "auto", compute: { module: mod, entryPoint: "main" } });
    const bg = device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: bindings.map((b, i) => ({ binding: i, resource: { buffer: b } })) });
    const err = await device.popErrorScope();
    if (errs.length || err) { console.log(JSON.stringify({ matmul: name, error: errs.join("; ") || err.message })); return; }
    const run = async (reps) => { const e = device.createCommandEncoder();
      for (let r = 0; r < reps; r++) { const p = e.beginComputePass(); p.setPipeline(pipe); p.setBindGroup(0, bg); p.dispatchWorkgroups(...groups); p.end(); }
      device.queue.submit([e.finish()]); await device.queue.onSubmittedWorkDone(); };
    const med = await medianMs(run, 1500);
    const C = await readC(); const maxErr = check(C);
    console.log(JSON.stringify({ matmul: name, N, ms: +med.toFixed(3), tflops: +(flopsPerRun / med / 1e9).toFixed(2), maxAbsErrSampled: maxErr }));
  } catch (e) { console.log(JSON.stringify({ matmul: name, error: String(e.message || e) })); }
}

// reference on sampled entries: f64 from the f16-rounded inputs (f16 kernel) or the f32 inputs
function checker(useF16) { return (C) => { let worst = 0; let s = 12345;
  for (let t = 0; t < 64; t++) { s = (s * 1103515245 + 12345) >>> 0; const i = s % N; s = (s * 1103515245 + 12345) >>> 0; const j = s % N;
    let acc = 0; for (let k = 0; k < N; k++) acc += useF16 ? f16val(A16[i * N + k]) * f16val(B16[k * N + j]) : A[i * N + k] * B[k * N + j];
    worst = Math.max(worst, Math.abs(acc - C[i * N + j])); } return +worst.toExponential(2); }; }

// fp32: 64x64 tile, K step 16, 256 threads, 4x4 per thread (a plain shared-memory kernel)
const fp32 = `
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
const N: u32 = ${N}u;
var<workgroup> As: array<array<f32, 64>, 16>;
var<workgroup> Bs: array<array<f32, 64>, 16>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let row0 = wg.y * 64u; let col0 = wg.x * 64u; let tid = l.y * 16u + l.x;
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = 0u; k0 < N; k0 += 16u) {
    for (var i = 0u; i < 4u; i++) { let idx = tid + i * 256u; let r = idx / 16u; let c = idx % 16u;
      As[c][r] = A[(row0 + r) * N + k0 + c];
      let rb = idx / 64u; let cb = idx % 64u; Bs[rb][cb] = B[(k0 + rb) * N + col0 + cb]; }
    workgroupBarrier();
    for (var k = 0u; k < 16u; k++) { var a: array<f32, 4>; var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) { a[i] = As[k][l.y * 4u + i]; b[i] = Bs[k][l.x * 4u + i]; }
      for (var i = 0u; i < 4u; i++) { for (var j = 0u; j < 4u; j++) { acc[i][j] = fma(a[i], b[j], acc[i][j]); } } }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) { for (var j = 0u; j < 4u; j++) { C[(row0 + l.y * 4u + i) * N + col0 + l.x * 4u + j] = acc[i][j]; } }
}`;
await timeKernel("fp32 tiled 64x64 (plain)", fp32, [bA, bB, bC], [N / 64, N / 64, 1], 2 * N * N * N, checker(false));

for (const cfg of cfgs) {
  // subgroup matrix: one subgroup (32 invocations) per workgroup owns a (TM*M) x (TN*N) block of C
  // (offsets must be subgroup-uniform, so they come from the workgroup id alone);
  // A and B tiles loaded straight from storage (row-major), f32 accumulators stored row-major.
  const { M: m, N: n, K: kk } = cfg;
  if (tog.desc.subgroupMinSize !== 32 || tog.desc.subgroupMaxSize !== 32) console.log(JSON.stringify({ note: "subgroup size is not fixed at 32: the subgroup-matrix kernel assumes it" }));
  for (const [TM, TN] of [[2, 2], [2, 4], [4, 4], [4, 8]]) {
    const bm = TM * m, bn = TN * n; // workgroup block = one subgroup's block
    if (N % bm || N % bn) continue;
    let decl = "", mac = "", store = "";
    for (let i = 0; i < TM; i++) for (let j = 0; j < TN; j++) decl += `var c${i}_${j} = subgroup_matrix_result<f32, ${n}, ${m}>();\n`;
    for (let i = 0; i < TM; i++) mac += `let a${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, ${kk}, ${m}>>(&A, (r0 + ${i * m}u) * N + k, false, N);\n`;
    for (let j = 0; j < TN; j++) mac += `let b${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, ${n}, ${kk}>>(&B, k * N + c0 + ${j * n}u, false, N);\n`;
    for (let i = 0; i < TM; i++) for (let j = 0; j < TN; j++) mac += `c${i}_${j} = subgroupMatrixMultiplyAccumulate(a${i}, b${j}, c${i}_${j});\n`;
    for (let i = 0; i < TM; i++) for (let j = 0; j < TN; j++) store += `subgroupMatrixStore(&C, (r0 + ${i * m}u) * N + c0 + ${j * n}u, c${i}_${j}, false, N);\n`;
    const code = `enable f16;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> A: array<f16>;
@group(0) @binding(1) var<storage, read> B: array<f16>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
const N: u32 = ${N}u;
@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wg: vec3u) {
  let r0 = wg.y * ${bm}u;
  let c0 = wg.x * ${bn}u;
${decl}
  for (var k = 0u; k < N; k += ${kk}u) {
${mac}
  }
${store}
}`;
    await timeKernel(`f16 subgroup-matrix M${m}N${n}K${kk} ${TM}x${TN} per subgroup`, code, [bA16, bB16, bC], [N / bn, N / bm, 1], 2 * N * N * N, checker(true));
  }
}
if (!cfgs.length) console.log(JSON.stringify({ matmul: "f16 subgroup-matrix", error: "no f16 -> f32 subgroup matrix configuration offered" }));
process.exit(0);
