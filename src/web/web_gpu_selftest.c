/* web_gpu_selftest.c — a self-test of the GPU device layer (device.h) as the
 * WebGPU module sees it in the browser (device_web.c + .js), independent of
 * the training kernels: buffers and writes at offsets, uniform arguments,
 * bind groups with offset/size sub-ranges, several pipelines in one pass,
 * clear and copy between passes, readback of a sub-range, a second submit
 * that reuses everything, and a shader compile error that must come back as
 * an error (not silence). Every result is compared with the same arithmetic
 * done here in C. Exported as tt_web_gpu_selftest (gpu module only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#else
#define EMSCRIPTEN_KEEPALIVE
#endif

#include "webgpu/device.h"
#include "rng.h"

#define N 1000 /* not a multiple of the workgroup size */

static const char *K_AXPB =
    "struct U { scale: f32, bias: f32, n: u32, pad: u32 }\n"
    "@group(0) @binding(0) var<uniform> u: U;\n"
    "@group(0) @binding(1) var<storage, read> x: array<f32>;\n"
    "@group(0) @binding(2) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "  if (id.x < u.n) { y[id.x] = x[id.x] * u.scale + u.bias; }\n"
    "}\n";
static const char *K_ADDIDX =
    "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "  if (id.x < arrayLength(&y)) { y[id.x] = y[id.x] + f32(id.x % 7u); }\n"
    "}\n";
static const char *K_BROKEN = "@compute @workgroup_size(1) fn main() { let x: f32 = nope; }\n";

static int fail(char *msg, int cap, const char *what, const tt_status *st) {
    snprintf(msg, (size_t)cap, "%s%s%s", what, st && st->msg[0] ? ": " : "", st ? st->msg : "");
    return 1;
}

/* Returns 0 when every check passes; otherwise 1 and a one-line reason. */
EMSCRIPTEN_KEEPALIVE int tt_web_gpu_selftest(char *msg, int cap) {
    tt_status st;
    tt_status_clear(&st);
    tt_gpu *g = NULL;
    tt_gpu_options opt;
    memset(&opt, 0, sizeof opt);
    if (tt_gpu_open(&opt, &g, &st)) return fail(msg, cap, "open", &st);
    int bad = 1;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *want = malloc(N * sizeof *want);
    if (!x || !y || !want) {
        snprintf(msg, (size_t)cap, "out of memory");
        goto out;
    }
    for (int i = 0; i < N; i++) x[i] = tt_rand_normal(7, TT_STREAM_TEST, (uint64_t)i);

    tt_gpu_buf bx, by, bu, rb;
    /* x lives at byte offset 256 of its buffer (a bound sub-range) */
    if (tt_gpu_buffer(g, 256 + N * 4, TT_GPU_STORAGE, "selftest-x", &bx, &st) ||
        tt_gpu_buffer(g, N * 4, TT_GPU_STORAGE, "selftest-y", &by, &st) ||
        tt_gpu_buffer(g, 512, TT_GPU_UNIFORM, "selftest-u", &bu, &st) ||
        tt_gpu_buffer(g, N * 4, TT_GPU_READBACK, "selftest-rb", &rb, &st)) {
        fail(msg, cap, "buffers", &st);
        goto out;
    }
    struct { float scale, bias; uint32_t n, pad; } u0 = {2.5f, -0.75f, N, 0}, u1 = {-1.0f, 3.0f, N / 2, 0};
    if (tt_gpu_write(g, bx, 256, x, N * 4, &st) || tt_gpu_write(g, bu, 0, &u0, sizeof u0, &st) ||
        tt_gpu_write(g, bu, 256, &u1, sizeof u1, &st)) {
        fail(msg, cap, "write", &st);
        goto out;
    }
    static const uint8_t k1kinds[3] = {TT_GPU_BIND_UNIFORM, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    static const uint8_t k2kinds[1] = {TT_GPU_BIND_RW};
    tt_gpu_kernel k1, k2;
    if (tt_gpu_kernel_create(g, K_AXPB, "main", 3, k1kinds, "selftest-axpb", &k1, &st) ||
        tt_gpu_kernel_create(g, K_ADDIDX, "main", 1, k2kinds, "selftest-addidx", &k2, &st)) {
        fail(msg, cap, "kernels", &st);
        goto out;
    }
    tt_gpu_binding b0[3] = {{bu, 0, 16}, {bx, 256, N * 4}, {by, 0, 0}};
    tt_gpu_binding b1[3] = {{bu, 256, 16}, {bx, 256, N * 4}, {by, 0, 0}};
    tt_gpu_binding b2[1] = {{by, 0, 0}};
    tt_gpu_group g0, g1, g2;
    if (tt_gpu_group_create(g, k1, 3, b0, &g0, &st) || tt_gpu_group_create(g, k1, 3, b1, &g1, &st) ||
        tt_gpu_group_create(g, k2, 1, b2, &g2, &st) || tt_gpu_check(g, &st)) {
        fail(msg, cap, "bind groups", &st);
        goto out;
    }

    /* pass 1: y = 2.5 x - 0.75 ; y += i % 7 ; y[0..N/2) = -x + 3 (second group, other uniform
     * offset) ; clear y[10..20) ; copy to readback ; read [0, N) */
    if (tt_gpu_begin(g, &st)) {
        fail(msg, cap, "begin", &st);
        goto out;
    }
    tt_gpu_dispatch(g, k1, g0, (N + 63) / 64, 1, 1);
    tt_gpu_dispatch(g, k2, g2, (N + 63) / 64, 1, 1);
    tt_gpu_dispatch(g, k1, g1, (N + 63) / 64, 1, 1);
    tt_gpu_clear(g, by, 40, 40);
    tt_gpu_copy(g, by, 0, rb, 0, N * 4);
    if (tt_gpu_submit(g, &st) || tt_gpu_read_start(g, rb, 0, N * 4, &st)) {
        fail(msg, cap, "submit", &st);
        goto out;
    }
    if (!tt_gpu_read_pending(g, rb)) {
        snprintf(msg, (size_t)cap, "read_pending is 0 after read_start");
        goto out;
    }
    if (tt_gpu_read_finish(g, rb, y, &st)) {
        fail(msg, cap, "read_finish", &st);
        goto out;
    }
    for (int i = 0; i < N; i++) {
        float v = x[i] * 2.5f + -0.75f;
        v = v + (float)(i % 7);
        if (i < N / 2) v = x[i] * -1.0f + 3.0f;
        if (i >= 10 && i < 20) v = 0.0f;
        want[i] = v;
    }
    for (int i = 0; i < N; i++)
        if (!(fabsf(y[i] - want[i]) <= 1e-6f * (1.0f + fabsf(want[i])))) {
            snprintf(msg, (size_t)cap, "pass 1: y[%d] = %.9g, want %.9g", i, y[i], want[i]);
            goto out;
        }

    /* pass 2: new x, reuse everything; read back a sub-range at an offset */
    for (int i = 0; i < N; i++) x[i] = (float)i * 0.25f;
    if (tt_gpu_write(g, bx, 256, x, N * 4, &st) || tt_gpu_begin(g, &st)) {
        fail(msg, cap, "pass 2 setup", &st);
        goto out;
    }
    tt_gpu_dispatch(g, k1, g0, (N + 63) / 64, 1, 1);
    tt_gpu_copy(g, by, 400, rb, 0, 800);
    if (tt_gpu_submit(g, &st) || tt_gpu_read_start(g, rb, 0, 800, &st) || tt_gpu_read_finish(g, rb, y, &st)) {
        fail(msg, cap, "pass 2", &st);
        goto out;
    }
    for (int i = 0; i < 200; i++) {
        float w = (float)(i + 100) * 0.25f * 2.5f + -0.75f;
        if (!(fabsf(y[i] - w) <= 1e-6f * (1.0f + fabsf(w)))) {
            snprintf(msg, (size_t)cap, "pass 2: y[%d] = %.9g, want %.9g", i + 100, y[i], w);
            goto out;
        }
    }

    /* a broken shader must be reported */
    tt_gpu_kernel kb;
    static const uint8_t nokinds[1] = {0};
    int rc = tt_gpu_kernel_create(g, K_BROKEN, "main", 0, nokinds, "selftest-broken", &kb, &st);
    if (rc == TT_OK) rc = tt_gpu_check(g, &st);
    if (rc == TT_OK) {
        snprintf(msg, (size_t)cap, "a shader compile error was not reported");
        goto out;
    }
    if (!strstr(st.msg, "selftest-broken")) {
        snprintf(msg, (size_t)cap, "compile error without the kernel's name: %s", st.msg);
        goto out;
    }
    snprintf(msg, (size_t)cap, "ok: %s", tt_gpu_get_info(g)->name);
    bad = 0;
out:
    free(x);
    free(y);
    free(want);
    tt_gpu_close(g);
    return bad;
}
