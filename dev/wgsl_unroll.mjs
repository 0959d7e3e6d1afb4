// wgsl_unroll.mjs — the `//!unroll VAR CONST` expansion of src/webgpu/gpu_ops.c
// for the dev/ harnesses that compose the product's WGSL themselves: the
// block after the line is repeated CONST times with `const VAR = i;` (GPUs),
// or kept as a loop (loop: true, as gpu_ops.c does on CPU adapters). CONST
// is read from the kernel's prefix (`const NAME: u32 = Nu;`). The
// `//!include NAME` lines of gpu_ops.c are expanded first (NAME.wgsl of
// src/webgpu/wgsl).
import fs from "node:fs";
const WGSL = new URL("../src/webgpu/wgsl/", import.meta.url);
export function unroll(src, prefix, loop = false) {
  src = src.replace(/^\/\/!include (\w+)[^\n]*$/gm, (_, n) => fs.readFileSync(new URL(`${n}.wgsl`, WGSL), "utf8"));
  for (;;) {
    const d = src.indexOf("//!unroll ");
    if (d < 0) return src;
    const line = src.slice(d + 10, src.indexOf("\n", d)).trim().split(/\s+/);
    const n = Number(new RegExp(`const ${line[1]}: u32 = (\\d+)u;`).exec(prefix)[1]);
    const b = src.indexOf("{", d);
    let e = b + 1, depth = 1;
    while (depth) { if (src.startsWith("//", e)) e = src.indexOf("\n", e); else { depth += src[e] === "{" ? 1 : src[e] === "}" ? -1 : 0; e++; } }
    const body = src.slice(b + 1, e - 1);
    let out = "";
    if (loop) out = `for (var ${line[0]} = 0u; ${line[0]} < ${n}u; ${line[0]}++) {${body}}`;
    else for (let i = 0; i < n; i++) out += `{ const ${line[0]} = ${i}u;${body}}\n`;
    src = src.slice(0, d) + out + src.slice(e);
  }
}
