/* device_dawn_ops.c — the device layer's work over Dawn (device.h, after
 * tt_gpu_open of device_dawn.c): buffers, kernels and bind groups, each
 * created inside error scopes; recording compute passes, copies and clears;
 * submission; read-back by buffer mapping; timestamp queries. The state and
 * the waits are device_dawn.h's. Test hooks (TT_WEBGPU_FAULT_SHADER,
 * TT_WEBGPU_FAULT_OOM) and the bounds-check hook are described in
 * device_dawn.c. Not built for Emscripten. */
#ifndef __EMSCRIPTEN__

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_dawn.h"
#include "hooks.h"

/* a kernel is being created: count it if instrumented (its WGSL declares the
 * counters), learn the file table from its source */
static void bc_note_kernel(bcheck *bc, const char *wgsl, const char *label) {
    if (!strstr(wgsl, "tt_bc_count")) return;
    bc->n_kernels++;
    const char *name = label ? label : "?";
    int seen = 0;
    for (int i = 0; i < bc->n_names && !seen; i++) seen = strcmp(bc->names[i], name) == 0;
    if (!seen && bc->n_names < TT_BC_NAMES) snprintf(bc->names[bc->n_names++], sizeof bc->names[0], "%s", name);
    for (const char *p = strstr(wgsl, "//!bounds_file "); p; p = strstr(p + 1, "//!bounds_file ")) {
        int n = 0;
        char file[40];
        if (sscanf(p + 15, "%d %39s", &n, file) == 2 && n > 0 && n < TT_BC_FILES && !bc->files[n][0])
            snprintf(bc->files[n], sizeof bc->files[n], "%s", file);
    }
}

/* ---- error scopes around object creation --------------------------------- */
static void scope_push(tt_gpu *g) {
    g->f.wgpuDevicePushErrorScope(g->dev, WGPUErrorFilter_OutOfMemory);
    g->f.wgpuDevicePushErrorScope(g->dev, WGPUErrorFilter_Validation);
}

/* Pops both scopes; returns TT_OK or the first error with "what: message". */
static int scope_pop(tt_gpu *g, const char *what, tt_status *st) {
    int rc = TT_OK;
    for (int i = 0; i < 2; i++) {
        WGPUPopErrorScopeCallbackInfo ci;
        memset(&ci, 0, sizeof ci);
        ci.mode = WGPUCallbackMode_AllowProcessEvents;
        ci.callback = tt_dawn_on_pop;
        ci.userdata1 = g;
        g->req_done = 0;
        g->req_msg[0] = 0;
        WGPUFuture f = g->f.wgpuDevicePopErrorScope(g->dev, ci);
        tt_dawn_wait_future(g, f, &g->req_done);
        if (rc == TT_OK && g->req_done && g->req_status != WGPUErrorType_NoError && g->req_status != -1) {
            int oom = g->req_status == WGPUErrorType_OutOfMemory;
            rc = tt_fail(st, oom ? TT_ENOMEM : TT_EDEVICE, "%s: %s%s", what, oom ? "out of device memory: " : "",
                         g->req_msg);
        }
    }
    if (rc == TT_OK && g->err_code) rc = tt_fail(st, g->err_code, "%s", g->err);
    return rc;
}

/* ---- buffers ------------------------------------------------------------- */
int tt_gpu_buffer(tt_gpu *g, uint64_t bytes, int usage, const char *label, tt_gpu_buf *out, tt_status *st) {
    *out = -1;
    if (bytes == 0) bytes = 4;
    if (bytes > g->info.max_buffer) /* before rounding up, which could wrap */
        return tt_fail(st, TT_ENOMEM, "webgpu: buffer %s of %.1f MiB exceeds this adapter's maxBufferSize (%.1f MiB)",
                       label ? label : "", bytes / 1048576.0, g->info.max_buffer / 1048576.0);
    bytes = (bytes + 15) & ~(uint64_t)15; /* whole-buffer bindings as array<vec4<f32>> */
    const char *oom = tt_hook_get(TT_HOOK_FAULT_OOM); /* test hook: see the header */
    if (oom && label && strcmp(oom, label) == 0 && g->info.max_buffer < UINT64_MAX - 64)
        bytes = (g->info.max_buffer + 64) & ~(uint64_t)15; /* the implementation must refuse it */
    else if (bytes > g->info.max_buffer)
        return tt_fail(st, TT_ENOMEM, "webgpu: buffer %s of %.1f MiB exceeds this adapter's maxBufferSize (%.1f MiB)",
                       label ? label : "", bytes / 1048576.0, g->info.max_buffer / 1048576.0);
    if (tt_gpu_grow((void **)&g->bufs, &g->cap_bufs, g->n_bufs, sizeof *g->bufs, 64))
        return tt_fail(st, TT_ENOMEM, "out of memory (gpu buffers)");
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = tt_dawn_sv(label);
    d.size = bytes;
    if (usage & TT_GPU_READBACK) d.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    else if (usage & TT_GPU_UNIFORM) d.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
    else d.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    scope_push(g);
    WGPUBuffer b = g->f.wgpuDeviceCreateBuffer(g->dev, &d);
    char what[160];
    snprintf(what, sizeof what, "webgpu: cannot create buffer %s (%.1f MiB)", label ? label : "", bytes / 1048576.0);
    int rc = scope_pop(g, what, st);
    if (rc || !b) {
        if (b) g->f.wgpuBufferRelease(b);
        return rc ? rc : tt_fail(st, TT_EDEVICE, "%s", what);
    }
    gbuf *gb = &g->bufs[g->n_bufs];
    memset(gb, 0, sizeof *gb);
    gb->b = b;
    gb->size = bytes;
    gb->usage = usage;
    *out = g->n_bufs++;
    return TT_OK;
}

void tt_gpu_buffer_free(tt_gpu *g, tt_gpu_buf h) {
    if (!g || h < 0 || h >= g->n_bufs || !g->bufs[h].b) return;
    gbuf *b = &g->bufs[h];
    if (b->map_state == 1) tt_dawn_wait_while(g, b->map_future, (volatile int *)&b->map_state, 1);
    if (b->map_state == 2) g->f.wgpuBufferUnmap(b->b);
    g->f.wgpuBufferDestroy(b->b);
    g->f.wgpuBufferRelease(b->b);
    b->b = NULL;
}

int tt_gpu_write(tt_gpu *g, tt_gpu_buf h, uint64_t offset, const void *data, uint64_t bytes, tt_status *st) {
    if (h < 0 || h >= g->n_bufs || !g->bufs[h].b) return tt_fail(st, TT_EINVAL, "webgpu: bad buffer handle");
    if ((offset | bytes) & 3) return tt_fail(st, TT_EINVAL, "webgpu: write offset/size not a multiple of 4");
    if (offset + bytes > g->bufs[h].size) return tt_fail(st, TT_EINVAL, "webgpu: write past the end of a buffer");
    if (bytes) g->f.wgpuQueueWriteBuffer(g->queue, g->bufs[h].b, offset, data, (size_t)bytes);
    return tt_gpu_check(g, st);
}

/* ---- kernels ------------------------------------------------------------- */
int tt_gpu_kernel_create(tt_gpu *g, const char *wgsl, const char *entry, int n_bind, const uint8_t *kinds,
                         const char *label, tt_gpu_kernel *out, tt_status *st) {
    *out = -1;
    if (n_bind < 0 || n_bind > 16) return tt_fail(st, TT_EINVAL, "webgpu: too many bindings");
    if (tt_gpu_grow((void **)&g->kerns, &g->cap_kerns, g->n_kerns, sizeof *g->kerns, 32))
        return tt_fail(st, TT_ENOMEM, "out of memory (gpu kernels)");
    WGPUBindGroupLayoutEntry e[17];
    memset(e, 0, sizeof e);
    for (int i = 0; i < n_bind; i++) {
        e[i].binding = (uint32_t)i;
        e[i].visibility = WGPUShaderStage_Compute;
        e[i].buffer.type = kinds[i] == TT_GPU_BIND_UNIFORM ? WGPUBufferBindingType_Uniform :
                           kinds[i] == TT_GPU_BIND_READ    ? WGPUBufferBindingType_ReadOnlyStorage :
                                                             WGPUBufferBindingType_Storage;
    }
    if (g->bc) { /* bounds-check hook: the counters at @31 */
        e[n_bind].binding = TT_BC_BINDING;
        e[n_bind].visibility = WGPUShaderStage_Compute;
        e[n_bind].buffer.type = WGPUBufferBindingType_Storage;
    }
    char what[160];
    snprintf(what, sizeof what, "webgpu: cannot compile kernel %s (entry %s)", label ? label : "", entry);
    char *broken = NULL; /* test hook TT_WEBGPU_FAULT_SHADER: see the header */
    const char *fs = tt_hook_get(TT_HOOK_FAULT_SHADER);
    if (fs && (strcmp(fs, "*") == 0 || (label && strcmp(fs, label) == 0))) {
        static const char tail[] = "\nfn tt_fault_hook( {\n";
        size_t n = strlen(wgsl);
        broken = malloc(n + sizeof tail);
        if (!broken) return tt_fail(st, TT_ENOMEM, "out of memory (kernel source)");
        memcpy(broken, wgsl, n);
        memcpy(broken + n, tail, sizeof tail);
        wgsl = broken;
    }
    scope_push(g);
    WGPUBindGroupLayoutDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.label = tt_dawn_sv(label);
    bd.entryCount = (size_t)n_bind + (g->bc ? 1 : 0);
    bd.entries = e;
    WGPUBindGroupLayout bgl = g->f.wgpuDeviceCreateBindGroupLayout(g->dev, &bd);
    WGPUShaderSourceWGSL src;
    memset(&src, 0, sizeof src);
    src.chain.sType = WGPUSType_ShaderSourceWGSL;
    src.code = tt_dawn_sv(wgsl);
    WGPUShaderModuleDescriptor sd;
    memset(&sd, 0, sizeof sd);
    sd.nextInChain = &src.chain;
    sd.label = tt_dawn_sv(label);
    WGPUShaderModule sm = g->f.wgpuDeviceCreateShaderModule(g->dev, &sd);
    WGPUPipelineLayoutDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.bindGroupLayoutCount = 1;
    pd.bindGroupLayouts = &bgl;
    WGPUPipelineLayout pl = g->f.wgpuDeviceCreatePipelineLayout(g->dev, &pd);
    WGPUComputePipelineDescriptor cd;
    memset(&cd, 0, sizeof cd);
    cd.label = tt_dawn_sv(label);
    cd.layout = pl;
    cd.compute.module = sm;
    cd.compute.entryPoint = tt_dawn_sv(entry);
    WGPUComputePipeline p = g->f.wgpuDeviceCreateComputePipeline(g->dev, &cd);
    int rc = scope_pop(g, what, st);
    free(broken);
    if (sm) g->f.wgpuShaderModuleRelease(sm);
    if (pl) g->f.wgpuPipelineLayoutRelease(pl);
    if (rc || !p || !bgl) {
        if (p) g->f.wgpuComputePipelineRelease(p);
        if (bgl) g->f.wgpuBindGroupLayoutRelease(bgl);
        return rc ? rc : tt_fail(st, TT_EDEVICE, "%s: creation failed", what);
    }
    if (g->bc) bc_note_kernel(g->bc, wgsl, label);
    gkern *k = &g->kerns[g->n_kerns];
    k->p = p;
    k->bgl = bgl;
    k->n_bind = n_bind;
    *out = g->n_kerns++;
    return TT_OK;
}

int tt_gpu_group_create(tt_gpu *g, tt_gpu_kernel kh, int n, const tt_gpu_binding *b, tt_gpu_group *out,
                        tt_status *st) {
    *out = -1;
    if (kh < 0 || kh >= g->n_kerns) return tt_fail(st, TT_EINVAL, "webgpu: bad kernel handle");
    gkern *k = &g->kerns[kh];
    if (n != k->n_bind || n > 16) return tt_fail(st, TT_EINVAL, "webgpu: bind group needs %d bindings (got %d)", k->n_bind, n);
    if (tt_gpu_grow((void **)&g->groups, &g->cap_groups, g->n_groups, sizeof *g->groups, 128))
        return tt_fail(st, TT_ENOMEM, "out of memory (gpu bind groups)");
    WGPUBindGroupEntry e[17];
    memset(e, 0, sizeof e);
    for (int i = 0; i < n; i++) {
        if (b[i].buf < 0 || b[i].buf >= g->n_bufs || !g->bufs[b[i].buf].b)
            return tt_fail(st, TT_EINVAL, "webgpu: bad buffer handle in binding %d", i);
        gbuf *gb = &g->bufs[b[i].buf];
        e[i].binding = (uint32_t)i;
        e[i].buffer = gb->b;
        e[i].offset = b[i].offset;
        e[i].size = b[i].size ? b[i].size : gb->size - b[i].offset;
    }
    if (g->bc) { /* bounds-check hook: the counters at @31 */
        e[n].binding = TT_BC_BINDING;
        e[n].buffer = g->bufs[g->bc->buf].b;
        e[n].size = g->bufs[g->bc->buf].size;
    }
    WGPUBindGroupDescriptor d;
    memset(&d, 0, sizeof d);
    d.layout = k->bgl;
    d.entryCount = (size_t)n + (g->bc ? 1 : 0);
    d.entries = e;
    scope_push(g);
    WGPUBindGroup grp = g->f.wgpuDeviceCreateBindGroup(g->dev, &d);
    int rc = scope_pop(g, "webgpu: bind group", st);
    if (rc || !grp) {
        if (grp) g->f.wgpuBindGroupRelease(grp);
        return rc ? rc : tt_fail(st, TT_EDEVICE, "webgpu: bind group creation failed");
    }
    g->groups[g->n_groups] = grp;
    *out = g->n_groups++;
    return TT_OK;
}

/* ---- recording ----------------------------------------------------------- */
int tt_gpu_begin(tt_gpu *g, tt_status *st) {
    if (g->enc) return tt_fail(st, TT_EINVAL, "webgpu: begin while recording");
    TT_CHECK(tt_gpu_check(g, st));
    g->enc = g->f.wgpuDeviceCreateCommandEncoder(g->dev, NULL);
    if (!g->enc) return tt_fail(st, TT_EDEVICE, "webgpu: cannot create a command encoder");
    g->cur_pipe = NULL;
    return TT_OK;
}

static void end_pass(tt_gpu *g) {
    if (!g->pass) return;
    g->f.wgpuComputePassEncoderEnd(g->pass);
    g->f.wgpuComputePassEncoderRelease(g->pass);
    g->pass = NULL;
    g->cur_pipe = NULL;
}

static void ensure_pass(tt_gpu *g) {
    if (g->pass) return;
    WGPUComputePassDescriptor d;
    memset(&d, 0, sizeof d);
    if (g->ts_pending >= 0 && g->qset) {
        memset(&g->tsw, 0, sizeof g->tsw);
        g->tsw.querySet = g->qset;
        g->tsw.beginningOfPassWriteIndex = (uint32_t)g->ts_pending;
        g->tsw.endOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED;
        d.timestampWrites = &g->tsw;
        g->ts_pending = -1;
    }
    g->pass = g->f.wgpuCommandEncoderBeginComputePass(g->enc, &d);
}

void tt_gpu_dispatch(tt_gpu *g, tt_gpu_kernel k, tt_gpu_group grp, uint32_t x, uint32_t y, uint32_t z) {
    if (!g->enc || x == 0 || y == 0 || z == 0) return;
    ensure_pass(g);
    WGPUComputePipeline p = g->kerns[k].p;
    if (p != g->cur_pipe) {
        g->f.wgpuComputePassEncoderSetPipeline(g->pass, p);
        g->cur_pipe = p;
    }
    g->f.wgpuComputePassEncoderSetBindGroup(g->pass, 0, g->groups[grp], 0, NULL);
    g->f.wgpuComputePassEncoderDispatchWorkgroups(g->pass, x, y, z);
}

void tt_gpu_copy(tt_gpu *g, tt_gpu_buf src, uint64_t src_off, tt_gpu_buf dst, uint64_t dst_off, uint64_t bytes) {
    if (!g->enc || bytes == 0) return;
    end_pass(g);
    g->f.wgpuCommandEncoderCopyBufferToBuffer(g->enc, g->bufs[src].b, src_off, g->bufs[dst].b, dst_off, bytes);
}

void tt_gpu_clear(tt_gpu *g, tt_gpu_buf b, uint64_t off, uint64_t bytes) {
    if (!g->enc || bytes == 0) return;
    end_pass(g);
    g->f.wgpuCommandEncoderClearBuffer(g->enc, g->bufs[b].b, off, bytes);
}

int tt_gpu_submit(tt_gpu *g, tt_status *st) {
    if (!g->enc) return tt_fail(st, TT_EINVAL, "webgpu: submit without begin");
    end_pass(g);
    WGPUCommandBuffer cb = g->f.wgpuCommandEncoderFinish(g->enc, NULL);
    g->f.wgpuCommandEncoderRelease(g->enc);
    g->enc = NULL;
    if (!cb) return tt_fail(st, TT_EDEVICE, "webgpu: command encoding failed");
    g->f.wgpuQueueSubmit(g->queue, 1, &cb);
    g->f.wgpuCommandBufferRelease(cb);
    return tt_gpu_check(g, st);
}

/* ---- readback ------------------------------------------------------------ */
int tt_gpu_read_start(tt_gpu *g, tt_gpu_buf h, uint64_t offset, uint64_t bytes, tt_status *st) {
    if (h < 0 || h >= g->n_bufs || !(g->bufs[h].usage & TT_GPU_READBACK))
        return tt_fail(st, TT_EINVAL, "webgpu: read_start needs a READBACK buffer");
    gbuf *b = &g->bufs[h];
    if (b->map_state != 0) return tt_fail(st, TT_EINVAL, "webgpu: readback buffer already mapping");
    if ((offset & 7) || (bytes & 3) || offset + bytes > b->size)
        return tt_fail(st, TT_EINVAL, "webgpu: bad readback range");
    WGPUBufferMapCallbackInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.mode = WGPUCallbackMode_AllowProcessEvents;
    ci.callback = tt_dawn_on_map;
    ci.userdata1 = b;
    b->map_state = 1;
    b->map_off = offset;
    b->map_size = bytes;
    b->map_msg[0] = 0;
    b->map_future = g->f.wgpuBufferMapAsync(b->b, WGPUMapMode_Read, (size_t)offset, (size_t)bytes, ci);
    return TT_OK;
}

int tt_gpu_read_pending(const tt_gpu *g, tt_gpu_buf h) {
    return h >= 0 && h < g->n_bufs && g->bufs[h].map_state != 0;
}

int tt_gpu_read_finish(tt_gpu *g, tt_gpu_buf h, void *dst, tt_status *st) {
    if (h < 0 || h >= g->n_bufs) return tt_fail(st, TT_EINVAL, "webgpu: bad buffer handle");
    gbuf *b = &g->bufs[h];
    if (b->map_state == 0) return tt_fail(st, TT_EINVAL, "webgpu: read_finish without read_start");
    /* the callback writes map_state from 1 to 2/3 */
    volatile int *state = (volatile int *)&b->map_state;
    tt_dawn_wait_while(g, b->map_future, state, 1);
    if (*state == 1) {
        /* device lost while waiting */
        b->map_state = 0;
        return tt_fail(st, TT_EDEVICE, "%s", g->err[0] ? g->err : "webgpu: device lost during readback");
    }
    if (*state == 3) {
        b->map_state = 0;
        if (g->err_code) return tt_fail(st, g->err_code, "%s", g->err);
        return tt_fail(st, TT_EDEVICE, "webgpu: readback failed: %s", b->map_msg);
    }
    const void *p = g->f.wgpuBufferGetConstMappedRange(b->b, (size_t)b->map_off, (size_t)b->map_size);
    int rc = TT_OK;
    if (!p) rc = tt_fail(st, TT_EDEVICE, "webgpu: mapped range unavailable");
    else if (dst) memcpy(dst, p, (size_t)b->map_size);
    g->f.wgpuBufferUnmap(b->b);
    b->map_state = 0;
    if (rc == TT_OK) rc = tt_gpu_check(g, st);
    return rc;
}

/* ---- timestamps ---------------------------------------------------------- */
int tt_gpu_timestamps_init(tt_gpu *g, int n, tt_status *st) {
    if (!g->info.has_timestamps) return tt_fail(st, TT_EUNSUP, "webgpu: adapter has no timestamp-query");
    if (g->qset) return TT_OK;
    WGPUQuerySetDescriptor d;
    memset(&d, 0, sizeof d);
    d.type = WGPUQueryType_Timestamp;
    d.count = (uint32_t)n;
    scope_push(g);
    g->qset = g->f.wgpuDeviceCreateQuerySet(g->dev, &d);
    int rc = scope_pop(g, "webgpu: timestamp query set", st);
    if (rc) return rc;
    g->n_ts = n;
    return TT_OK;
}

void tt_gpu_timestamp(tt_gpu *g, int i) {
    if (!g->qset || i < 0 || i >= g->n_ts) return;
    end_pass(g);
    g->ts_pending = i;
    /* an empty pass records the timestamp even if nothing follows */
    ensure_pass(g);
}

void tt_gpu_timestamps_resolve(tt_gpu *g, int n, tt_gpu_buf staging) {
    if (!g->qset || !g->enc || n <= 0) return;
    end_pass(g);
    /* resolve needs a QueryResolve buffer: we use a private one per call */
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.size = (uint64_t)n * 8;
    d.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
    WGPUBuffer rb = g->f.wgpuDeviceCreateBuffer(g->dev, &d);
    g->f.wgpuCommandEncoderResolveQuerySet(g->enc, g->qset, 0, (uint32_t)n, rb, 0);
    g->f.wgpuCommandEncoderCopyBufferToBuffer(g->enc, rb, 0, g->bufs[staging].b, 0, (uint64_t)n * 8);
    g->f.wgpuBufferRelease(rb); /* kept alive by the encoder */
}

#endif /* __EMSCRIPTEN__ */
