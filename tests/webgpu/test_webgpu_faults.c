/* test_webgpu_faults.c — WebGPU faults through the device layer (device.h):
 * each comes back as one line (tt_status, no newline) naming what failed, and
 * the device stays usable after every fault the implementation reports
 * through an error scope:
 *   - WGSL that does not compile (a real Tint error, and the test hook
 *     TT_WEBGPU_FAULT_SHADER breaking a good kernel): TT_EDEVICE naming the
 *     kernel and the compiler's first message line, not its source excerpt;
 *   - a missing entry point;
 *   - a buffer above maxBufferSize (our own check, also near UINT64_MAX) and
 *     one the implementation itself rejects (test hook TT_WEBGPU_FAULT_OOM);
 *   - required features: TT_WEBGPU_REQUIRE_FEATURES agrees with what the
 *     adapter reports for each feature; a feature it lacks (for real, or
 *     hidden by TT_WEBGPU_HIDE_FEATURES) refuses the open with "adapter X
 *     lacks feature Y"; timestamps asked for without the feature are off
 *     and tt_gpu_timestamps_init says so;
 *   - uncaptured validation errors inside a command buffer (a dispatch over
 *     the workgroup-count limit, a bind group of the wrong layout) are
 *     reported by submit and by every later check: never silent.
 * Each "usable afterwards" check runs a small kernel and compares its
 * output with values computed here. Skips (exit 0) without a WebGPU
 * library/adapter unless TT_REQUIRE_WEBGPU=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/device.h"
#include "gpu_test.h"
#include "tt_test.h"

static tt_gpu *G;

static const uint8_t K_RW[1] = {TT_GPU_BIND_RW};
static const uint8_t K_R_RW[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};

/* x[i] = 3 i + 1 over 64 elements */
static const char *GOOD =
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "  if (id.x < 64u) { x[id.x] = 3.0 * f32(id.x) + 1.0; }\n"
    "}\n";
/* y[i] = 2 a[i] */
static const char *TWICE =
    "@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "  if (id.x < 64u) { y[id.x] = 2.0 * a[id.x]; }\n"
    "}\n";
/* a name Tint cannot resolve on line 4 */
static const char *UNRESOLVED =
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n"
    "@compute @workgroup_size(1)\n"
    "fn main() {\n"
    "  x[0] = no_such_value + 1.0;\n"
    "}\n";
static const char *SYNTAX =
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n"
    "@compute @workgroup_size(1)\n"
    "fn main( {\n"
    "}\n";

static int one_line(const char *m) { return m[0] && !strchr(m, '\n') && !strchr(m, '\r'); }

#define CHECK_LINE(st, ...)                                                        \
    do {                                                                           \
        CHECK_MSG(one_line((st).msg), "not one line: [%s]", (st).msg);           \
        const char *want_[] = {__VA_ARGS__};                                       \
        for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)             \
            CHECK_MSG(strstr((st).msg, want_[i_]) != NULL, "[%s] lacks '%s'", (st).msg, want_[i_]); \
    } while (0)

/* The device computes with a freshly compiled kernel: x[i] = 3i + 1. */
static void check_usable(tt_gpu *g, const char *when) {
    tt_status st;
    tt_gpu_kernel k;
    tt_gpu_buf b;
    tt_gpu_group grp;
    int rc = tt_gpu_kernel_create(g, GOOD, "main", 1, K_RW, "good", &k, &st);
    CHECK_MSG(rc == TT_OK, "%s: good kernel: %s", when, st.msg);
    if (rc) return;
    rc = tt_gpu_buffer(g, 64 * 4, TT_GPU_STORAGE, "out", &b, &st);
    CHECK_MSG(rc == TT_OK, "%s: buffer: %s", when, st.msg);
    if (rc) return;
    tt_gpu_binding bd = {b, 0, 0};
    rc = tt_gpu_group_create(g, k, 1, &bd, &grp, &st);
    if (rc == TT_OK) rc = tt_gpu_begin(g, &st);
    if (rc == TT_OK) {
        tt_gpu_dispatch(g, k, grp, 1, 1, 1);
        rc = tt_gpu_submit(g, &st);
    }
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = -1.0f;
    if (rc == TT_OK) rc = tt_gpu_read_sync(g, b, 0, sizeof x, x, &st);
    CHECK_MSG(rc == TT_OK, "%s: run: %s", when, st.msg);
    int bad = 0;
    for (int i = 0; i < 64; i++) bad += x[i] != 3.0f * (float)i + 1.0f;
    CHECK_MSG(bad == 0, "%s: %d wrong outputs", when, bad);
    tt_gpu_buffer_free(g, b);
}

TT_TEST(shader_compile_errors) {
    tt_status st;
    tt_gpu_kernel k = 7;
    int rc = tt_gpu_kernel_create(G, UNRESOLVED, "main", 1, K_RW, "unresolved_kernel", &k, &st);
    CHECK(rc == TT_EDEVICE);
    CHECK(k == -1);
    CHECK_LINE(st, "unresolved_kernel", "error", "no_such_value");
    /* the first line only: no source excerpt, no Dawn call context */
    CHECK_MSG(!strstr(st.msg, "+ 1.0") && !strstr(st.msg, "While"), "[%s]", st.msg);
    printf("  compile error: %s\n", st.msg);
    rc = tt_gpu_kernel_create(G, SYNTAX, "main", 1, K_RW, "syntax_kernel", &k, &st);
    CHECK(rc == TT_EDEVICE);
    CHECK_LINE(st, "syntax_kernel", "error");
    check_usable(G, "after compile errors");
    /* the test hook breaks a kernel that compiles without it, by label */
    setenv("TT_WEBGPU_FAULT_SHADER", "victim", 1);
    rc = tt_gpu_kernel_create(G, GOOD, "main", 1, K_RW, "victim", &k, &st);
    CHECK(rc == TT_EDEVICE);
    CHECK_LINE(st, "victim", "error");
    rc = tt_gpu_kernel_create(G, GOOD, "main", 1, K_RW, "bystander", &k, &st);
    CHECK_MSG(rc == TT_OK, "other labels compile: %s", st.msg);
    unsetenv("TT_WEBGPU_FAULT_SHADER");
    rc = tt_gpu_kernel_create(G, GOOD, "main", 1, K_RW, "victim", &k, &st);
    CHECK_MSG(rc == TT_OK, "without the hook it compiles: %s", st.msg);
    check_usable(G, "after the shader hook");
}

TT_TEST(missing_entry_point) {
    tt_status st;
    tt_gpu_kernel k;
    int rc = tt_gpu_kernel_create(G, GOOD, "no_such_entry", 1, K_RW, "entry_kernel", &k, &st);
    CHECK(rc == TT_EDEVICE);
    CHECK_LINE(st, "entry_kernel", "no_such_entry");
    check_usable(G, "after a missing entry point");
}

TT_TEST(buffer_limits) {
    tt_status st;
    const tt_gpu_info *in = tt_gpu_get_info(G);
    tt_gpu_buf b = 7;
    CHECK(in->max_buffer > 0);
    int rc = tt_gpu_buffer(G, in->max_buffer + 1, TT_GPU_STORAGE, "huge", &b, &st);
    CHECK(rc == TT_ENOMEM);
    CHECK(b == -1);
    CHECK_LINE(st, "huge", "maxBufferSize");
    rc = tt_gpu_buffer(G, UINT64_MAX, TT_GPU_READBACK, "wraps", &b, &st); /* rounding up must not wrap to 0 */
    CHECK(rc == TT_ENOMEM);
    CHECK_LINE(st, "wraps", "maxBufferSize");
    check_usable(G, "after oversized buffers");
    /* the implementation's own refusal, through the error scope; nothing allocated */
    setenv("TT_WEBGPU_FAULT_OOM", "victim", 1);
    const int usages[3] = {TT_GPU_STORAGE, TT_GPU_UNIFORM, TT_GPU_READBACK};
    for (int i = 0; i < 3; i++) {
        b = 7;
        rc = tt_gpu_buffer(G, 256, usages[i], "victim", &b, &st);
        CHECK(rc == TT_ENOMEM || rc == TT_EDEVICE);
        CHECK(b == -1);
        CHECK_LINE(st, "cannot create buffer victim");
        CHECK_MSG(!strstr(st.msg, "While"), "[%s]", st.msg);
    }
    printf("  rejected buffer: %s\n", st.msg);
    rc = tt_gpu_buffer(G, 256, TT_GPU_STORAGE, "bystander", &b, &st);
    CHECK_MSG(rc == TT_OK, "other labels allocate: %s", st.msg);
    unsetenv("TT_WEBGPU_FAULT_OOM");
    rc = tt_gpu_check(G, &st);
    CHECK_MSG(rc == TT_OK, "a scoped error is not left behind: %s", st.msg);
    check_usable(G, "after a rejected buffer");
}

/* open with TT_WEBGPU_REQUIRE_FEATURES=req (and HIDE=hide); returns rc */
static int open_with(const char *req, const char *hide, int want_ts, tt_gpu **g, tt_status *st) {
    if (req) setenv("TT_WEBGPU_REQUIRE_FEATURES", req, 1);
    if (hide) setenv("TT_WEBGPU_HIDE_FEATURES", hide, 1);
    tt_gpu_options o;
    memset(&o, 0, sizeof o);
    o.want_timestamps = want_ts;
    *g = NULL;
    int rc = tt_gpu_open(&o, g, st);
    unsetenv("TT_WEBGPU_REQUIRE_FEATURES");
    unsetenv("TT_WEBGPU_HIDE_FEATURES");
    return rc;
}

TT_TEST(required_features) {
    tt_status st;
    tt_gpu *g;
    const tt_gpu_info *in = tt_gpu_get_info(G);
    /* what the adapter has, as the device info reports it */
    int has_ts = 0;
    if (open_with(NULL, NULL, 1, &g, &st) == TT_OK) {
        has_ts = tt_gpu_get_info(g)->has_timestamps;
        tt_gpu_close(g);
    }
    const char *names[4] = {"timestamp-query", "shader-f16", "subgroups", "subgroup-matrix"};
    const int has[4] = {has_ts, in->has_f16, in->has_subgroups, in->has_subgroup_matrix};
    int lacking = 0;
    for (int i = 0; i < 4; i++) {
        int rc = open_with(names[i], NULL, 0, &g, &st);
        if (has[i]) {
            CHECK_MSG(rc == TT_OK, "requiring %s, which the adapter has: %s", names[i], st.msg);
        } else {
            lacking++;
            CHECK_MSG(rc == TT_EUNSUP, "requiring %s, which the adapter lacks: rc %d", names[i], rc);
            CHECK(g == NULL);
            if (rc) CHECK_LINE(st, "lacks feature", names[i], in->name);
            if (rc) printf("  %s\n", st.msg);
        }
        if (rc == TT_OK) tt_gpu_close(g);
    }
    if (!lacking) printf("  note: this adapter has every feature we know; only hidden ones are tested\n");
    /* hidden: the same path on every adapter */
    int rc = open_with("subgroups,timestamp-query", "timestamp-query", 0, &g, &st);
    CHECK(rc == TT_EUNSUP);
    CHECK_LINE(st, "lacks feature timestamp-query", in->name);
    if (rc == TT_OK) tt_gpu_close(g);
    rc = open_with("subgroups,bogus-feature", NULL, 0, &g, &st);
    CHECK(rc == TT_EINVAL);
    CHECK_LINE(st, "bogus-feature");
    if (rc == TT_OK) tt_gpu_close(g);
    /* timestamps asked for (optional) on an adapter without them: the device
     * opens, without timestamps, and says why when they are used */
    rc = open_with(NULL, "timestamp-query", 1, &g, &st);
    CHECK_MSG(rc == TT_OK, "optional timestamps: %s", st.msg);
    if (rc == TT_OK) {
        CHECK(tt_gpu_get_info(g)->has_timestamps == 0);
        rc = tt_gpu_timestamps_init(g, 8, &st);
        CHECK(rc == TT_EUNSUP);
        CHECK_LINE(st, "timestamp-query");
        check_usable(g, "without timestamps");
        tt_gpu_close(g);
    }
}

/* Records one invalid dispatch (bad = 0: over the workgroup-count limit,
 * 1: a bind group of another layout) on a fresh device: submit fails with a
 * one-line validation error, and so does everything after. */
static void uncaptured_case(int bad) {
    tt_status st;
    tt_gpu *g;
    if (open_with(NULL, NULL, 0, &g, &st) != TT_OK) {
        CHECK_MSG(0, "second device: %s", st.msg);
        return;
    }
    tt_gpu_kernel k1, k2;
    tt_gpu_buf a, y;
    tt_gpu_group g1, g2;
    int rc = tt_gpu_kernel_create(g, GOOD, "main", 1, K_RW, "good", &k1, &st);
    if (rc == TT_OK) rc = tt_gpu_kernel_create(g, TWICE, "main", 2, K_R_RW, "twice", &k2, &st);
    if (rc == TT_OK) rc = tt_gpu_buffer(g, 256, TT_GPU_STORAGE, "a", &a, &st);
    if (rc == TT_OK) rc = tt_gpu_buffer(g, 256, TT_GPU_STORAGE, "y", &y, &st);
    tt_gpu_binding b1 = {a, 0, 0}, b2[2] = {{a, 0, 0}, {y, 0, 0}};
    if (rc == TT_OK) rc = tt_gpu_group_create(g, k1, 1, &b1, &g1, &st);
    if (rc == TT_OK) rc = tt_gpu_group_create(g, k2, 2, b2, &g2, &st);
    if (rc == TT_OK) rc = tt_gpu_begin(g, &st);
    CHECK_MSG(rc == TT_OK, "setup: %s", st.msg);
    if (rc) {
        tt_gpu_close(g);
        return;
    }
    tt_gpu_dispatch(g, k1, g1, 1, 1, 1); /* a valid one first */
    if (bad == 0) tt_gpu_dispatch(g, k1, g1, tt_gpu_get_info(g)->max_wg_per_dim + 1, 1, 1);
    else tt_gpu_dispatch(g, k1, g2, 1, 1, 1);
    rc = tt_gpu_submit(g, &st);
    CHECK_MSG(rc == TT_EDEVICE, "invalid dispatch %d: submit rc %d", bad, rc);
    CHECK_LINE(st, "validation error");
    printf("  uncaptured: %s\n", st.msg);
    char first[sizeof st.msg];
    snprintf(first, sizeof first, "%s", st.msg);
    /* sticky: every later call reports the same error */
    rc = tt_gpu_check(g, &st);
    CHECK(rc == TT_EDEVICE && strcmp(st.msg, first) == 0);
    float x[4];
    rc = tt_gpu_read_sync(g, a, 0, sizeof x, x, &st);
    CHECK(rc == TT_EDEVICE && strcmp(st.msg, first) == 0);
    rc = tt_gpu_begin(g, &st);
    CHECK(rc == TT_EDEVICE);
    tt_gpu_close(g);
}

TT_TEST(uncaptured_errors_are_reported) {
    uncaptured_case(0);
    uncaptured_case(1);
}

int main(void) {
    unsetenv("TT_WEBGPU_FAULT_SHADER");
    unsetenv("TT_WEBGPU_FAULT_OOM");
    unsetenv("TT_WEBGPU_REQUIRE_FEATURES");
    unsetenv("TT_WEBGPU_HIDE_FEATURES");
    G = tt_gtest_open();
    printf("adapter: %s\n", tt_gpu_get_info(G)->name);
    RUN(shader_compile_errors);
    RUN(missing_entry_point);
    RUN(buffer_limits);
    RUN(required_features);
    RUN(uncaptured_errors_are_reported);
    tt_gpu_close(G);
    return tt_test_summary();
}
