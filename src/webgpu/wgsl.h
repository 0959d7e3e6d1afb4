/* wgsl.h — the WGSL kernel sources embedded at build time from
 * src/webgpu/wgsl/<name>.wgsl (see src/webgpu/embed_wgsl.cmake). */
#ifndef TT_WGSL_H
#define TT_WGSL_H

/* NUL-terminated source of src/webgpu/wgsl/<name>.wgsl, or NULL. */
const char *tt_wgsl_get(const char *name);

#endif
