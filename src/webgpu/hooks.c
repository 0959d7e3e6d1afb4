/* hooks.c — reads the WebGPU test hooks (hooks.h). Compiled without
 * TT_TEST_HOOKS into the product (every hook off, no environment read) and
 * with it into the test library ttcore_hooks (CMakeLists.txt). */
#include "hooks.h"

#include <stddef.h>
#include <stdlib.h>

#ifdef TT_TEST_HOOKS
static const char *const hook_names[TT_HOOK_COUNT] = {
    "TT_WEBGPU_WGSL_DIR",     "TT_WEBGPU_BOUNDS_CHECK",     "TT_WEBGPU_FAULT_SHADER",    "TT_WEBGPU_FAULT_OOM",
    "TT_WEBGPU_FAULT_AT_STEP", "TT_WEBGPU_FAULT_KIND",      "TT_WEBGPU_HIDE_FEATURES",   "TT_WEBGPU_REQUIRE_FEATURES",
    "TT_WEBGPU_MAX_BINDING_MIB", "TT_WEBGPU_TILE",          "TT_WEBGPU_SPLITK",          "TT_WEBGPU_UNROLL",
    "TT_WEBGPU_BIASFOLD",     "TT_WEBGPU_ATTN_PF", "TT_WEBGPU_ATTN_DS", "TT_WEBGPU_QKV_BATCH",
    "TT_WEBGPU_ATTN_SPLIT",   "TT_WEBGPU_HEAD_ROWS",    "TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP",
};
#endif

const char *tt_hook_get(tt_hook h) {
#ifdef TT_TEST_HOOKS
    if ((unsigned)h >= TT_HOOK_COUNT) return NULL;
    const char *v = getenv(hook_names[h]);
    return v && *v ? v : NULL;
#else
    (void)h;
    return NULL;
#endif
}
