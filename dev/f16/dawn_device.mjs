// dawn_device.mjs — what the dev/f16 harnesses (matmul_check.mjs,
// attn_check.mjs) share: Dawn's Node binding opened as the lead's harness
// opens it (allow_unsafe_apis, vulkan_enable_f16_on_nvidia, and env TOGGLES); the device with
// shader-f16, subgroups and, where the product would use them, subgroup
// matrices (web/worker.js sgmatConfig: the largest f16 -> f32 configuration
// with K dividing 16; also subgroups of one size and WGSL's subgroup_id),
// with the adapter's storage limits; storage buffers; f16 rounding; seeded
// random data; the subgroup-matrix builtins stubbed for adapters without
// them, and Dawn's bounds check on their constant offsets written into a
// kernel as const_asserts.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// the harnesses print JSON lines and end with process.exit: written synchronously, none is lost
// when stdout is a pipe (Node writes pipes asynchronously, and exit drops what is queued)
console.log = (...a) => fs.writeSync(1, a.join(" ") + "\n");

export async function openDevice(dawnPath) {
  const { create, globals } = require(dawnPath);
  Object.assign(globalThis, globals);
  // TOGGLES: more of Dawn's toggles, e.g. disable_robustness (what the bounds clamps browsers keep cost)
  const more = process.env.TOGGLES ? "," + process.env.TOGGLES : "";
  const gpu = create([`enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia${more}`]);
  // the instance held for the process's life: a harness that keeps only the device lets the GC collect it, and
  // Dawn's Node binding then hangs or crashes (futex, std::system_error) in the next submits
  globalThis.ttDawnInstance = gpu;
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  const ai = adapter.info || {};
  let sgcfg = null;
  for (const c of ai.subgroupMatrixConfigs || [])
    if (c.componentType === "f16" && c.resultComponentType === "f32" && 16 % c.K === 0 &&
        (!sgcfg || c.M * c.N * c.K > sgcfg.M * sgcfg.N * sgcfg.K)) sgcfg = { M: c.M, N: c.N, K: c.K };
  const sgmat = adapter.features.has("shader-f16") && adapter.features.has("chromium-experimental-subgroup-matrix") &&
    adapter.features.has("subgroups") && !!(gpu.wgslLanguageFeatures && gpu.wgslLanguageFeatures.has("subgroup_id")) &&
    !!sgcfg && ai.subgroupMinSize === ai.subgroupMaxSize && ai.subgroupMaxSize > 0;
  const feats = ["shader-f16", "subgroups"].filter((f) => adapter.features.has(f));
  if (sgmat) feats.push("chromium-experimental-subgroup-matrix");
  const L = adapter.limits;
  const device = await adapter.requestDevice({ requiredFeatures: feats, requiredLimits: {
    maxStorageBufferBindingSize: L.maxStorageBufferBindingSize, maxBufferSize: L.maxBufferSize,
    maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize } });
  const cpuAdapter = /llvmpipe|lavapipe|swiftshader/i.test(`${ai.description} ${ai.architecture}`);
  // a storage buffer (at least 16 bytes) holding data, or of `bytes` bytes
  const buf = (data, bytes) => {
    const U = GPUBufferUsage, b = device.createBuffer({ size: Math.max(16, bytes || data.byteLength), usage: U.STORAGE | U.COPY_DST | U.COPY_SRC });
    if (data) device.queue.writeBuffer(b, 0, data);
    return b;
  };
  return { gpu, adapter, ai, sgcfg: sgmat ? sgcfg : null, sgmat, device, cpuAdapter, buf };
}

// ms per dispatch of run(reps) (which submits reps dispatches and waits): run(5) for warmMs (the clock
// rises under sustained work), then the median of 7 x run(10)
export async function medianMs(run, warmMs) {
  for (const t0 = performance.now(); performance.now() - t0 < warmMs;) await run(5);
  const ts = [];
  for (let i = 0; i < 7; i++) { const t0 = performance.now(); await run(10); ts.push((performance.now() - t0) / 10); }
  return ts.sort((a, b) => a - b)[3];
}

// f32 -> f16 (nearest even) -> f32
export function r16(x) {
  const a = Math.abs(x); if (a >= 65520) return Math.sign(x) * Infinity; if (a === 0) return x;
  const e = Math.max(Math.floor(Math.log2(a)), -14), s = 2 ** (e - 10);
  let q = a / s, f = Math.floor(q), d = q - f; if (d > 0.5 || (d === 0.5 && f % 2)) f++;
  return Math.sign(x) * f * s;
}

// n uniform values in [-amp, amp) from a linear congruential generator seeded once
export function randoms(seed) {
  return (n, amp = 1) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) { seed = (seed * 1103515245 + 12345) >>> 0; a[i] = amp * (seed / 2 ** 31 - 1); }
    return a;
  };
}

// The subgroup-matrix types and builtins of a composed kernel replaced by
// plain functions of one struct (for adapters without them, as lavapipe):
// compiling the result checks the kernel's composition, names and types,
// all but the matrix builtins' own signatures. The builtins are in their
// template form (subgroupMatrixLoad<T, row_major>(p, offset, stride),
// subgroupMatrixStore<col_major>(p, offset, m, stride)). A load or store
// through &NAME (a workgroup or storage array of f16 or f32) becomes a
// function of NAME; a load or store through &NAME[I] (a workgroup array of
// arrays of f16, f32 or vec4<u32>), one of NAME and I.
// Dawn's own check on a subgroup-matrix load or store whose offset and
// stride are constant expressions (it validates every branch, taken or
// not): the access, (offset + (major - 1) * stride) elements of the array
// and then one column (col_major) or row (row_major) of components, must fit
// the array the pointer names. Added to a whole (unrolled) kernel as one
// "const_assert ... // sgbounds" line before each such call, so compiling it
// stubbed on an adapter without the builtins checks the same bounds (a
// failure: boundsMessage). An offset or stride is taken as constant when
// each of its names is declared const only (never let, var or a parameter);
// a pointer into a runtime-sized array is not checked (nor by Dawn).
const SG_BOUNDS = "// sgbounds";
export function addSgBounds(code) {
  const bytes = { f16: 2, f32: 4, "vec4<u32>": 16 };
  const mats = new Map(), arrays = new Map(), decls = new Map(), vals = new Map();
  // a matrix type, named or through an alias: its component type, columns C and rows R
  const MAT = /subgroup_matrix_(?:left|right|result)<(f16|f32), *([^,>]+), *([^,>]+)>/;
  const matType = (t) => { const m = MAT.exec(t); return m ? { comp: m[1], C: m[2], R: m[3] } : null; };
  for (const m of code.matchAll(/^alias (\w+) = ([^;]+);/gm)) if (matType(m[2])) mats.set(m[1], matType(m[2]));
  const matOf = (t) => mats.get(t) || matType(t);
  for (const m of code.matchAll(/var<workgroup> (\w+): array<array<(f16|f32|vec4<u32>), ([^>]+)>, [^>]+>;/g)) arrays.set(m[1], { elem: m[2], len: m[3], parts: true });
  for (const m of code.matchAll(/var<workgroup> (\w+): array<(f16|f32|vec4<u32>), ([^>]+)>;/g)) arrays.set(m[1], { elem: m[2], len: m[3], parts: false });
  for (const m of code.matchAll(/\bvar\s+(\w+)\s*:\s*(?:array<)?(\w+)/g)) if (matOf(m[2])) vals.set(m[1], matOf(m[2]));
  // every declaration of a name (const or not) and where it is; a name at p means the last one before p whose
  // block is still open there
  const decl = (name, at, isConst) => { if (!decls.has(name)) decls.set(name, []); decls.get(name).push({ at, isConst }); };
  for (const m of code.matchAll(/\bconst\s+(\w+)\s*[:=]/g)) decl(m[1], m.index, true);
  for (const m of code.matchAll(/\b(?:let|var)(?:<[^>]*>)?\s+(\w+)/g)) decl(m[1], m.index, false);
  for (const m of code.matchAll(/\bfn\s+\w+\s*\(([^)]*)\)/g)) for (const q of m[1].matchAll(/(\w+)\s*:/g)) decl(q[1], m.index, false);
  const depth = new Int32Array(code.length + 1);
  for (let i = 0, d = 0; i < code.length; i++) { if (code[i] === "{") d++; else if (code[i] === "}") d--; depth[i + 1] = d; }
  const visible = (from, to) => { for (let i = from; i <= to; i++) if (depth[i] < depth[from]) return false; return true; };
  const isConst = (name, p) => { const ds = (decls.get(name) || []).filter((x) => x.at < p).sort((x, y) => y.at - x.at);
    const d = ds.find((x) => visible(x.at, p)); return !!d && d.isConst; };
  const constExpr = (e, p) => [...e.matchAll(/(?<![\w.])[A-Za-z_]\w*(\s*\()?/g)].every((m) =>
    m[1] ? ["select", "min", "max", "u32", "i32"].includes(m[0].replace(/\s*\($/, "")) : isConst(m[0], p));
  const args = (at) => { // the top-level arguments of the call whose "(" is at `at` (null: not closed)
    const out = []; let nest = 0, from = at + 1;
    for (let i = at; i < code.length; i++) {
      const c = code[i];
      if (c === "(" || c === "[") nest++;
      else if (c === ")" || c === "]") { if (--nest === 0) { out.push(code.slice(from, i).trim()); return out; } }
      else if (c === "," && nest === 1) { out.push(code.slice(from, i).trim()); from = i + 1; }
    }
    return null;
  };
  const inserts = [];
  for (const m of code.matchAll(/subgroupMatrix(Load|Store)<(?:(\w+(?:<[^>]*>)?), *)?(row|col)_major>\(/g)) {
    const a = args(m.index + m[0].length - 1);
    if (!a) continue;
    const [ptr, off, stride] = m[1] === "Load" ? a : [a[0], a[1], a[3]];
    const mat = m[1] === "Load" ? matOf(m[2]) : vals.get((/^(\w+)/.exec(a[2]) || [])[1]);
    const pm = /^&\s*(\w+)(\[[^\]]*\])?$/.exec(ptr), arr = pm && arrays.get(pm[1]);
    if (!mat || !arr || arr.parts !== !!pm[2] || !constExpr(off, m.index) || !constExpr(stride, m.index)) continue;
    const col = m[3] === "col", eb = bytes[arr.elem];
    const major = col ? mat.C : mat.R, minor = col ? mat.R : mat.C;
    inserts.push({ at: code.lastIndexOf("\n", m.index) + 1, line: `const_assert ((${off}) + ((${major}) - 1u) * (${stride})) * ${eb}u + (${minor}) * ${bytes[mat.comp]}u <= (${arr.len}) * ${eb}u; ${SG_BOUNDS} ${pm[1]}\n` });
  }
  for (const { at, line } of inserts.sort((x, y) => y.at - x.at)) code = code.slice(0, at) + line + code.slice(at);
  return code;
}
// A compilation message on an added bounds line, in words (else the message)
export function boundsMessage(code, lineNum, message) {
  const line = code.split("\n")[lineNum - 1] || "";
  if (!line.includes(SG_BOUNDS)) return message;
  return `a subgroup-matrix access past its array ${line.slice(line.indexOf(SG_BOUNDS) + SG_BOUNDS.length).trim()}: ${message} (${line.slice(0, line.indexOf(";")).trim()})`;
}
export function stubSgmat(code) {
  code = code.replace(/^diagnostic\(off, chromium\.subgroup_matrix_uniformity\);\n/m, "")
    .replace(/^enable chromium_experimental_subgroup_matrix;\n/m, "")
    .replace(/subgroup_matrix_(left|right|result)<(f16|f32), *\w+, *\w+>/g, "SgStub");
  const elem = new Map(), parts = new Map();
  for (const m of code.matchAll(/var<(?:workgroup|storage[^>]*)> (\w+): array<(f16|f32)>?[,>]/g)) elem.set(m[1], m[2]);
  for (const m of code.matchAll(/var<workgroup> (\w+): array<array<(f16|f32|vec4<u32>),/g)) parts.set(m[1], m[2]);
  const used = new Set(), use = (a) => { if (!elem.has(a)) throw new Error(`stub: ${a} is not an f16 or f32 array`); used.add(a); };
  const usedP = new Set(), useP = (a) => { if (!parts.has(a)) throw new Error(`stub: ${a} is not an array of f16, f32 or vec4<u32> arrays`); usedP.add(a); };
  code = code.replace(/subgroupMatrixLoad<\w+, (?:row|col)_major>\(\s*&(\w+)\[(\w+)\],/g, (_, a, i) => (useP(a), `sgLoadP_${a}(${i},`))
    .replace(/subgroupMatrixLoad<\w+, (?:row|col)_major>\(\s*&(\w+),/g, (_, a) => (use(a), `sgLoad_${a}(`))
    .replace(/subgroupMatrixStore<(?:row|col)_major>\(\s*&(\w+)\[(\w+)\],/g, (_, a, i) => (useP(a), `sgStoreP_${a}(${i},`))
    .replace(/subgroupMatrixStore<(?:row|col)_major>\(\s*&(\w+),/g, (_, a) => (use(a), `sgStore_${a}(`))
    .replace(/subgroupMatrixMultiplyAccumulate\(/g, "sgMma(");
  if (/subgroupMatrix|subgroup_matrix/.test(code.replace(/\/\/[^\n]*/g, ""))) throw new Error("stub: a subgroup-matrix builtin left unstubbed");
  const get = (t, x) => (t === "vec4<u32>" ? `f32(${x}.x)` : `f32(${x})`), put = (t) => (t === "vec4<u32>" ? "vec4<u32>(u32(m.v))" : `${t}(m.v)`);
  let fns = "struct SgStub { v: f32 }\nfn sgMma(a: SgStub, b: SgStub, c: SgStub) -> SgStub { return SgStub(fma(a.v, b.v, c.v)); }\n";
  for (const a of usedP)
    fns += `fn sgLoadP_${a}(w: u32, o: u32, s: u32) -> SgStub { return SgStub(${get(parts.get(a), `${a}[w][o + s]`)}); }\n` +
      `fn sgStoreP_${a}(w: u32, o: u32, m: SgStub, s: u32) { ${a}[w][o + s] = ${put(parts.get(a))}; }\n`;
  for (const a of used)
    fns += `fn sgLoad_${a}(o: u32, s: u32) -> SgStub { return SgStub(f32(${a}[o + s])); }\n` +
      `fn sgStore_${a}(o: u32, m: SgStub, s: u32) { ${a}[o + s] = ${elem.get(a)}(m.v); }\n`;
  return `${code}\n${fns}`;
}
