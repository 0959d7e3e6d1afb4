/* backend.c — the WebGPU training backend's tt_backend interface
 * (tt_backend_webgpu_create): the vtable, creation (device, test hooks,
 * the buffer plan of plan.c, the schedule of schedule.c), destruction,
 * parameter and moment transfer, and the extras reached by name. The
 * backend's state and its other files: backend_webgpu.h. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_webgpu.h"
#include "hooks.h"
#include "webgpu_profile.h"

static const tt_backend_vtable wgpu_vt;

wgpu_impl *tt_wgpu_of(const tt_backend *be) {
    return be && be->vt == &wgpu_vt ? (wgpu_impl *)be->impl : NULL;
}

static void wgpu_destroy(tt_backend *be) {
    if (!be) return;
    wgpu_impl *w = IMPL(be);
    if (w) {
        tt_gops_free(&w->ops);
        if (w->g) tt_gpu_close(w->g);
        free(w->plan.res);
        free(w->plan.la);
        free(w->rec.plain.fwd);
        free(w->rec.plain.bwd);
        free(w->rec.dropout.fwd);
        free(w->rec.dropout.bwd);
        free(w->rec.dkeys);
        free(w->rec.dwords);
        free(w->rec.opt);
        free(w->rec.evh);
        free(w->run.tokhost);
        free(w->plan.ch);
        free(w->plan.pset);
        free(w->plan.gset);
        free(w);
    }
    tt_layout_free(&be->layout);
    free(be);
}

/* m, v cover the trainable range from train0 (backend.h); a chunk with
 * moments lies wholly inside it (plan.c starts a new chunk where the frozen
 * base ends) */
static int wgpu_set_state(tt_backend *be, const float *params, const float *m, const float *v, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    TT_CHECK(tt_wgpu_fault_check(w, st));
    const size_t t0 = tt_layout_train0(&be->layout);
    for (int i = 0; i < w->plan.n_ch; i++) {
        const wchunk *c = &w->plan.ch[i];
        const uint64_t off = (uint64_t)c->pad * 4, bytes = (uint64_t)c->n * 4;
        TT_CHECK(tt_gpu_write(w->g, c->p, off, params + c->g0, bytes, st));
        if (!c->tn) continue; /* frozen: no moments */
        if (m) TT_CHECK(tt_gpu_write(w->g, c->m, off, m + (c->g0 - t0), bytes, st));
        if (v) TT_CHECK(tt_gpu_write(w->g, c->v, off, v + (c->g0 - t0), bytes, st));
    }
    if (!m || !v) {
        TT_CHECK(tt_gpu_begin(w->g, st));
        for (int i = 0; i < w->plan.n_ch; i++) {
            if (!w->plan.ch[i].tn) continue;
            if (!m) tt_gpu_clear(w->g, w->plan.ch[i].m, 0, tt_wgpu_chunk_bytes(&w->plan.ch[i]));
            if (!v) tt_gpu_clear(w->g, w->plan.ch[i].v, 0, tt_wgpu_chunk_bytes(&w->plan.ch[i]));
        }
        TT_CHECK(tt_gpu_submit(w->g, st));
    }
    return TT_OK;
}

static int wgpu_get_state(tt_backend *be, float *params, float *m, float *v, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    TT_CHECK(tt_wgpu_fault_check(w, st));
    const size_t t0 = tt_layout_train0(&be->layout);
    for (int i = 0; i < w->plan.n_ch; i++) {
        const wchunk *c = &w->plan.ch[i];
        const uint64_t off = (uint64_t)c->pad * 4, bytes = (uint64_t)c->n * 4;
        if (params) TT_CHECK(tt_gpu_read_sync(w->g, c->p, off, bytes, params + c->g0, st));
        if (!c->tn) continue; /* frozen: no moments */
        if (m) TT_CHECK(tt_gpu_read_sync(w->g, c->m, off, bytes, m + (c->g0 - t0), st));
        if (v) TT_CHECK(tt_gpu_read_sync(w->g, c->v, off, bytes, v + (c->g0 - t0), st));
    }
    return TT_OK;
}

const void *tt_webgpu_info(const tt_backend *be) {
    const wgpu_impl *w = tt_wgpu_of(be);
    return w ? tt_gpu_get_info(w->g) : NULL;
}

/* webgpu_profile.h */
int tt_webgpu_param_chunks(const tt_backend *be, size_t *starts, int max) {
    const wgpu_impl *w = tt_wgpu_of(be);
    if (!w) return 0;
    for (int i = 0; starts && i < w->plan.n_ch && i < max; i++) starts[i] = w->plan.ch[i].g0;
    return w->plan.n_ch;
}

/* webgpu_profile.h: the profile of plan.c's schedule (profile.c) */
int tt_webgpu_profile(tt_backend *be, int reps, int detail, tt_webgpu_prof *out, int max, int *n, tt_status *st) {
    *n = 0;
    wgpu_impl *w = tt_wgpu_of(be);
    if (!w) return tt_fail(st, TT_EINVAL, "profile: not a webgpu backend");
    return tt_wgpu_profile(w, reps, detail, out, max, n, st);
}

/* the vtable's plan_bytes: plan.c's preflight on this backend's device */
static int wgpu_plan_bytes(tt_backend *be, const tt_model_config *cfg, uint64_t *bytes, tt_status *st) {
    const wgpu_impl *w = tt_wgpu_of(be);
    *bytes = 0;
    if (!w) return tt_fail(st, TT_EINVAL, "fits: not a webgpu backend");
    return tt_wgpu_plan_bytes(w, cfg, bytes, st);
}

/* the loss scaler (backend.h tt_loss_scaler) of a TT_PRECISION_F16 backend */
static int ls_set(tt_backend *be, float scale, int64_t good, int64_t skipped, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!w->ops.amp_on) return tt_fail(st, TT_EINVAL, "webgpu: no loss scaler (precision f32)");
    if (!(scale > 0.0f) || !isfinite(scale) || good < 0 || good >= TT_LOSS_SCALE_INTERVAL || skipped < 0 ||
        skipped > TT_LOSS_SCALE_MAX_SKIPPED)
        return tt_fail(st, TT_EINVAL, "loss scale %g with %lld clean and %lld skipped steps is out of range", scale,
                       (long long)good, (long long)skipped);
    float v[4] = {scale, (float)good, (float)skipped, 0.0f};
    return tt_gpu_write(w->g, w->plan.lscale, 0, v, sizeof v, st);
}

static int ls_get(tt_backend *be, float *scale, int64_t *good, int64_t *skipped, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!w->ops.amp_on) return tt_fail(st, TT_EINVAL, "webgpu: no loss scaler (precision f32)");
    float v[4];
    TT_CHECK(tt_gpu_read_sync(w->g, w->plan.lscale, 0, sizeof v, v, st));
    *scale = v[0];
    *good = (int64_t)v[1];
    *skipped = (int64_t)v[2];
    return TT_OK;
}

static void ls_last(tt_backend *be, float *scale, int64_t *good, int64_t *skipped) {
    wgpu_impl *w = IMPL(be);
    *scale = w->run.res_scale[w->run.read_slot];
    *good = (int64_t)w->run.res_good[w->run.read_slot];
    *skipped = (int64_t)w->run.res_skipped[w->run.read_slot];
}

static const tt_loss_scaler wgpu_scaler = {ls_set, ls_get, ls_last};

static void *wgpu_get_proc(tt_backend *be, const char *name) {
    if (strcmp(name, "webgpu.profile") == 0) return (void *)tt_webgpu_profile;
    if (strcmp(name, "loss_scaler") == 0 && IMPL(be)->ops.amp_on) return (void *)&wgpu_scaler;
    return NULL;
}

static const tt_backend_vtable wgpu_vt = {
    wgpu_destroy,        wgpu_set_state,  wgpu_get_state,        tt_wgpu_step,
    tt_wgpu_step_result, tt_wgpu_eval,    tt_wgpu_loss_and_grad, tt_wgpu_step_result_prev,
    tt_wgpu_phase_times, wgpu_plan_bytes, wgpu_get_proc,         tt_wgpu_inspect,
};

int tt_backend_webgpu_create(const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out, tt_status *st) {
    *out = NULL;
    TT_CHECK(tt_config_validate(cfg, st));
    tt_backend *be = calloc(1, sizeof *be);
    wgpu_impl *w = calloc(1, sizeof *w);
    if (!be || !w) {
        free(be);
        free(w);
        return tt_fail(st, TT_ENOMEM, "out of memory (webgpu backend)");
    }
    be->vt = &wgpu_vt;
    be->cfg = *cfg;
    be->impl = w;
    int rc = tt_layout_build(cfg, &be->layout, st);
    if (rc) {
        free(w);
        free(be);
        return rc;
    }
    w->plan.B = cfg->batch;
    w->plan.T = cfg->ctx;
    w->plan.C = cfg->d_model;
    w->plan.NH = cfg->n_head;
    w->plan.L = cfg->n_layer;
    w->plan.V = cfg->vocab;
    w->plan.P = be->layout.total;
    {
        const char *e = tt_hook_get(TT_HOOK_BIASFOLD);
        w->rec.biasfold = e ? (atoi(e) != 0) : 2;
        e = tt_hook_get(TT_HOOK_HEAD_ROWS);
        w->plan.head_force = e ? atoi(e) : 0;
        e = tt_hook_get(TT_HOOK_FAULT_AT_STEP);
        w->run.fault_at = e ? atoll(e) : 0;
        e = tt_hook_get(TT_HOOK_FAULT_KIND);
        w->run.fault_validation = e && strcmp(e, "validation") == 0;
        w->run.fault_lost = !(e && (strcmp(e, "error") == 0 || w->run.fault_validation));
    }
    tt_gpu_options go;
    memset(&go, 0, sizeof go);
    {
        go.want_timestamps = opts && opts->timestamps;
    }
    rc = tt_gpu_open(&go, &w->g, st);
    if (rc == TT_OK) {
        const tt_gpu_info *in = tt_gpu_get_info(w->g);
        be->desc.kind = TT_BACKEND_WEBGPU;
        be->desc.name = "webgpu";
        be->desc.is_software = in->is_cpu;
        snprintf(be->desc.device, sizeof be->desc.device, "%.100s (%.15s)", in->name, in->backend);
        char sgs[48] = "no subgroups", sgm[48] = "no subgroup-matrix";
        if (in->sgmat_m) snprintf(sgm, sizeof sgm, "subgroup-matrix (f16 %ux%ux%u)", in->sgmat_m, in->sgmat_n, in->sgmat_k);
        else if (in->has_subgroup_matrix) snprintf(sgm, sizeof sgm, "subgroup-matrix");
        if (in->has_subgroups) snprintf(sgs, sizeof sgs, "subgroups (size %u..%u)", in->subgroup_min, in->subgroup_max);
        snprintf(be->desc.detail, sizeof be->desc.detail,
                 "%s, %s, %s; storage binding up to %.0f MiB; bounds clamps and workgroup zero-fill %s", sgs,
                 in->has_f16 ? "shader-f16" : "no shader-f16",
                 sgm,
                 in->max_storage_binding / 1048576.0, in->robust ? "on" : "off (TT_WEBGPU_ROBUST=1 turns it on)");
        rc = tt_gops_init(&w->ops, w->g, st);
        w->plan.bind_cap = w->ops.bind_cap; /* test hook TT_WEBGPU_MAX_BINDING_MIB, read by tt_gops_init */
        if (rc == TT_OK && opts && opts->precision == TT_PRECISION_F16) {
            if (!in->has_f16)
                rc = tt_fail(st, TT_EUNSUP,
                             "--precision f16 needs the WebGPU feature shader-f16, which adapter %.100s lacks: use "
                             "--precision f32 (or a WebGPU that offers shader-f16: the web app in Chrome)",
                             in->name);
            else w->ops.f16 = 1;
        }
    }
    if (rc == TT_OK) {
        w->plan.res = calloc((size_t)w->plan.L + 1, sizeof *w->plan.res);
        w->plan.la = calloc((size_t)w->plan.L, sizeof *w->plan.la);
        w->run.tokhost =
            calloc((size_t)w->plan.B * (w->plan.T + 1) + (size_t)w->plan.V + 1 + (size_t)w->plan.B * w->plan.T,
                   sizeof *w->run.tokhost);
        if (!w->plan.res || !w->plan.la || !w->run.tokhost) rc = tt_fail(st, TT_ENOMEM, "out of memory (webgpu plan)");
    }
    if (rc == TT_OK) {
        w->plan.dry = 1;
        rc = tt_wgpu_alloc_buffers(w, cfg, &be->layout, st);
        w->plan.dry = 0;
    }
    if (rc == TT_OK) rc = tt_wgpu_alloc_buffers(w, cfg, &be->layout, st);
    if (rc == TT_OK && w->ops.f16) { /* the loss scaler: kernels planned from here on read it */
        w->ops.amp = w->plan.lscale;
        w->ops.amp_on = 1;
        rc = ls_set(be, TT_LOSS_SCALE_INIT, 0, 0, st);
        const char *e = tt_hook_get(TT_HOOK_LOSS_SCALE_FAULT_AT_STEP);
        w->run.ls_fault_at = e ? atoll(e) : 0;
    }
    if (rc == TT_OK) {
        be->desc.device_bytes = (uint64_t)w->plan.plan_bytes + 3 * 16; /* + the three 16-byte readback buffers */
        be->desc.host_bytes =
            (uint64_t)((size_t)w->plan.B * (w->plan.T + 1) + (size_t)w->plan.V + 1 + (size_t)w->plan.B * w->plan.T) * 4;
        w->run.ts_why =
            "webgpu: phase split needs GPU timestamps; created without timestamps (bench --phases asks for them; "
            "they add pass boundaries to the step)";
    }
    if (rc == TT_OK && go.want_timestamps) {
        tt_status ts_st;
        tt_status_clear(&ts_st);
        if (!tt_gpu_get_info(w->g)->has_timestamps) {
            snprintf(w->run.ts_why_buf, sizeof w->run.ts_why_buf,
                     "webgpu: adapter %.100s lacks feature timestamp-query (asked for by --phases), so "
                     "no phase split",
                     tt_gpu_get_info(w->g)->name);
            w->run.ts_why = w->run.ts_why_buf;
        } else if (tt_gpu_timestamps_init(w->g, WGPU_TS_SLOTS, &ts_st) == TT_OK &&
                   tt_gpu_buffer(w->g, WGPU_TS_SLOTS * 8, TT_GPU_READBACK, "timestamp-readback", &w->run.ts_stage[0],
                                 &ts_st) == TT_OK &&
                   tt_gpu_buffer(w->g, WGPU_TS_SLOTS * 8, TT_GPU_READBACK, "timestamp-readback", &w->run.ts_stage[1],
                                 &ts_st) == TT_OK) {
            w->run.ts = 1;
            be->desc.device_bytes += 2 * WGPU_TS_SLOTS * 8;
        } else {
            snprintf(w->run.ts_why_buf, sizeof w->run.ts_why_buf,
                     "webgpu: GPU timestamps failed (%.180s), so no phase split", ts_st.msg);
            w->run.ts_why = w->run.ts_why_buf;
        }
    }
    if (rc == TT_OK) rc = tt_wgpu_plan_schedule(be, st);
    if (rc == TT_OK && opts && opts->dropout) rc = tt_wgpu_plan_dropout(be, st);
    if (rc == TT_OK) /* + kernel-argument uniforms, the split-K and attention dS scratch and the f16 tier's operand
                      * copies of gpu_ops, sized by plan() */
        be->desc.device_bytes += (uint64_t)w->ops.n_ubufs * w->ops.slot_bytes * w->ops.slots_per_buf +
                                 sizeof(tt_gstep) + (uint64_t)w->ops.split_elems * 4 + (uint64_t)w->ops.ds_elems * 4 +
                                 (uint64_t)w->ops.h16_elems * 2;
    if (rc == TT_OK) rc = tt_gpu_check(w->g, st);
    if (rc) {
        wgpu_destroy(be);
        return rc;
    }
    *out = be;
    return TT_OK;
}
