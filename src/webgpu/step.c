/* step.c — running the WebGPU backend's recorded schedule
 * (backend_webgpu.h, schedule.c): the training step, its results, eval,
 * loss_and_grad, inspect, and the GPU timestamps of the phase split.
 *
 * A step = one command buffer per micro-batch (tokens, and with dropout the
 * micro-batch's keys, are uploaded between them with queue.writeBuffer); the
 * last one also holds grad norm, clip, AdamW and the stats copy. step()
 * returns after the submit; step_result() waits for the mapping of the most
 * recent step's stats, step_result_prev() for the step before it (the
 * trainer submits step k+1, then reads step k: two readback slots, the GPU
 * never waits for the host). Nothing is allocated per step on the host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_webgpu.h"

/* every id of n tokens inside the vocabulary */
static int check_tokens(const wgpu_impl *w, const tt_token *tokens, size_t n, tt_status *st) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= (tt_token)w->plan.V)
            return tt_fail(st, TT_EINVAL, "token id %u is outside the model's vocabulary (0..%d)", (unsigned)tokens[i],
                           w->plan.V - 1);
    return TT_OK;
}

static int upload_tokens(wgpu_impl *w, const tt_token *tokens, int Brows, int buckets, tt_status *st) {
    size_t row = (size_t)w->plan.T + 1;
    size_t n = (size_t)Brows * row;
    TT_CHECK(check_tokens(w, tokens, n, st));
    for (size_t i = 0; i < n; i++) w->run.tokhost[i] = tokens[i];
    for (size_t i = n; i < (size_t)w->plan.B * row; i++) w->run.tokhost[i] = 0;
    size_t words = (size_t)w->plan.B * row;
    if (buckets) {
        tt_gop_embedding_buckets(w->run.tokhost, w->plan.B, w->plan.T, w->plan.V, w->run.tokhost + w->plan.bucket_off,
                                 w->run.tokhost + w->plan.pos_off);
        words = w->plan.tok_words;
    }
    return tt_gpu_write(w->g, w->plan.tok, 0, w->run.tokhost, words * 4, st);
}

/* the phase split of the step whose timestamps went to readback slot i */
static int finish_timestamps(wgpu_impl *w, int i, tt_status *st) {
    if (!w->run.ts_pending[i]) return TT_OK;
    int n = w->run.ts_n[i];
    w->run.ts_pending[i] = 0;
    TT_CHECK(tt_gpu_read_finish(w->g, w->run.ts_stage[i], w->run.ts_host, st));
    int nm = (n - 1) / 3, ok = 1;
    double ph[3] = {0, 0, 0};
    for (int j = 0; j < nm; j++) {
        const uint64_t *t = &w->run.ts_host[3 * j];
        if (t[1] < t[0] || t[2] < t[1] || t[3] < t[2]) ok = 0; /* unordered: no honest value */
        ph[0] += (double)(t[1] - t[0]) * 1e-6;
        ph[1] += (double)(t[2] - t[1]) * 1e-6;
    }
    ph[2] = (double)(w->run.ts_host[n - 1] - w->run.ts_host[n - 2]) * 1e-6;
    if (ok) {
        memcpy(w->run.phase_ms, ph, sizeof ph);
        w->run.has_phase = 1;
    }
    return TT_OK;
}

/* the stats (and timestamps) of the step in readback slot i, once read */
int tt_wgpu_finish_pending(wgpu_impl *w, int i, tt_status *st) {
    TT_CHECK(finish_timestamps(w, i, st));
    if (!w->run.pending[i]) return TT_OK;
    float s[8];
    w->run.pending[i] = 0;
    TT_CHECK(tt_gpu_read_finish(w->g, w->plan.staging[i], s, st));
    w->run.res_loss[i] = s[0];
    w->run.res_norm[i] = s[1];
    w->run.res_scale[i] = s[2]; /* the loss scaler after the step (0 without one) */
    w->run.res_good[i] = s[3];
    w->run.res_skipped[i] = s[4];
    w->run.res_ok[i] = 1;
    return TT_OK;
}

/* zero a chunk's gradients (a frozen chunk has none) */
static void clear_grads(wgpu_impl *w, const wchunk *c) {
    if (c->tn == c->n) tt_gpu_clear(w->g, c->g, 0, tt_wgpu_chunk_bytes(c));
    else if (c->tn) tt_gpu_clear(w->g, c->g, ((uint64_t)c->pad + (c->t0 - c->g0)) * 4, (uint64_t)c->tn * 4);
}

int tt_wgpu_step(tt_backend *be, const tt_token *tokens, int n_micro, const tt_optim_args *opt, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !opt) return tt_fail(st, TT_EINVAL, "step: tokens or optimizer arguments missing");
    if (n_micro < 1) return tt_fail(st, TT_EINVAL, "step: n_micro must be >= 1 (got %d)", n_micro);
    if (!(opt->bc1 > 0.0f) || !(opt->bc2 > 0.0f)) return tt_fail(st, TT_EINVAL, "step: bias corrections must be > 0");
    TT_CHECK(tt_dropout_check(&be->cfg, opt->dropout, st)); /* [0, 1), 32-bit mask indices */
    TT_CHECK(check_tokens(w, tokens, (size_t)n_micro * w->plan.B * (w->plan.T + 1), st)); /* before anything is submitted */
    TT_CHECK(tt_wgpu_fault_check(w, st));
    const int drop = opt->dropout > 0.0f;
    if (drop && !w->rec.dropout.fwd) TT_CHECK(tt_wgpu_plan_dropout(be, st));
    const wsched *sc = drop ? &w->rec.dropout : &w->rec.plain;
    const tt_gsite *sf = sc->fwd, *sb = sc->bwd;
    const int nf = sc->n_fwd, nb = sc->n_bwd;
    int bad_dispatch = 0;
    if (w->run.fault_at > 0 && w->run.n_steps + 1 == w->run.fault_at && w->run.fault_validation) {
        w->run.fault_at = 0;
        bad_dispatch = 1; /* fires once, in the first command buffer of this step */
    }
    if (w->run.fault_at > 0 &&
        w->run.n_steps + 1 == w->run.fault_at) { /* fires once, before anything of the step is submitted */
        w->run.fault_at = 0;
        w->run.faulted = w->run.fault_lost;
        return tt_fail(st, TT_EDEVICE, "webgpu %s (simulated by TT_WEBGPU_FAULT_AT_STEP=%lld)",
                       w->run.fault_lost ? "device lost" : "device error", (long long)(w->run.n_steps + 1));
    }
    const double BT = (double)w->plan.B * w->plan.T;
    int cur = w->run.cur;
    TT_CHECK(tt_wgpu_finish_pending(w, cur, st)); /* the step before the previous one: long done */
    w->run.res_ok[cur] = 0;
    tt_gstep sp;
    memset(&sp, 0, sizeof sp);
    sp.lr = opt->lr;
    sp.b1 = opt->beta1;
    sp.b2 = opt->beta2;
    sp.eps = opt->eps;
    sp.wd = opt->weight_decay;
    sp.clip = opt->clip;
    sp.bc1 = opt->bc1;
    sp.bc2 = opt->bc2;
    sp.grad_scale = (float)(1.0 / (BT * n_micro));
    sp.loss_scale = (float)(1.0 / (BT * n_micro));
    sp.valid_rows = (uint32_t)BT;
    sp.t = (uint32_t)(opt->step + 1);
    if (w->run.ls_fault_at > 0 && w->run.n_steps + 1 == w->run.ls_fault_at) { /* test hook: an overflow */
        w->run.ls_fault_at = 0;
        sp.grad_scale = INFINITY;
    }
    TT_CHECK(tt_gops_set_step(&w->ops, &sp, st));
    size_t mb = (size_t)w->plan.B * (w->plan.T + 1);
    const int ts = w->run.ts && 3 * n_micro + 1 <= WGPU_TS_SLOTS;
    for (int i = 0; i < n_micro; i++) {
        TT_CHECK(upload_tokens(w, tokens + (size_t)i * mb, w->plan.B, 1, st));
        if (drop) TT_CHECK(tt_wgpu_upload_drop_keys(be, opt, n_micro, i, st));
        TT_CHECK(tt_gpu_begin(w->g, st));
        if (i == 0) {
            for (int c = 0; c < w->plan.n_ch; c++) clear_grads(w, &w->plan.ch[c]);
            tt_gpu_clear(w->g, w->plan.stats, 0, 16);
        }
        if (ts) tt_gpu_timestamp(w->g, 3 * i);
        tt_gops_run(w->g, sf, nf);
        if (bad_dispatch && i == 0 && nf > 0) /* test hook: over maxComputeWorkgroupsPerDimension */
            tt_gpu_dispatch(w->g, sf[0].k, sf[0].grp, tt_gpu_get_info(w->g)->max_wg_per_dim + 1, 1, 1);
        if (ts) tt_gpu_timestamp(w->g, 3 * i + 1);
        tt_gops_run(w->g, sb, nb);
        if (ts) tt_gpu_timestamp(w->g, 3 * i + 2);
        if (i == n_micro - 1) {
            tt_gops_run(w->g, w->rec.opt, w->rec.n_opt);
            if (ts) {
                tt_gpu_timestamp(w->g, 3 * n_micro);
                tt_gpu_timestamps_resolve(w->g, 3 * n_micro + 1, w->run.ts_stage[cur]);
            }
            tt_gpu_copy(w->g, w->plan.stats, 0, w->plan.staging[cur], 0, 32);
        }
        TT_CHECK(tt_gpu_submit(w->g, st));
    }
    if (ts) {
        TT_CHECK(tt_gpu_read_start(w->g, w->run.ts_stage[cur], 0, (uint64_t)(3 * n_micro + 1) * 8, st));
        w->run.ts_n[cur] = 3 * n_micro + 1;
        w->run.ts_pending[cur] = 1;
    }
    TT_CHECK(tt_gpu_read_start(w->g, w->plan.staging[cur], 0, 32, st));
    w->run.pending[cur] = 1;
    w->run.last = cur;
    w->run.cur = cur ^ 1;
    w->run.n_steps++;
    return TT_OK;
}

int tt_wgpu_step_result(tt_backend *be, float *loss, float *grad_norm, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    TT_CHECK(tt_wgpu_fault_check(w, st));
    if (w->run.n_steps < 1) return tt_fail(st, TT_EINVAL, "webgpu: step_result before any step");
    TT_CHECK(tt_wgpu_finish_pending(w, w->run.last, st));
    if (!w->run.res_ok[w->run.last]) return tt_fail(st, TT_EINVAL, "webgpu: no result for the last step");
    w->run.read_slot = w->run.last;
    if (loss) *loss = w->run.res_loss[w->run.last];
    if (grad_norm) *grad_norm = w->run.res_norm[w->run.last];
    return TT_OK;
}

/* the step before the most recent one (its readback slot is the other one;
 * step() keeps it until the next step() reuses the slot) */
int tt_wgpu_step_result_prev(tt_backend *be, float *loss, float *grad_norm, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    int i = w->run.last ^ 1;
    TT_CHECK(tt_wgpu_fault_check(w, st));
    if (w->run.n_steps < 2) return tt_fail(st, TT_EINVAL, "webgpu: step_result_prev needs two steps");
    TT_CHECK(tt_wgpu_finish_pending(w, i, st));
    if (!w->run.res_ok[i]) return tt_fail(st, TT_EINVAL, "webgpu: no result for the previous step");
    w->run.read_slot = i;
    if (loss) *loss = w->run.res_loss[i];
    if (grad_norm) *grad_norm = w->run.res_norm[i];
    return TT_OK;
}

static int run_forward_only(tt_backend *be, const tt_token *tokens, int Brows, int with_backward, float *loss,
                            tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const double bt = (double)Brows * w->plan.T;
    TT_CHECK(tt_wgpu_fault_check(w, st));
    tt_gstep sp;
    memset(&sp, 0, sizeof sp);
    sp.grad_scale = with_backward ? (float)(1.0 / bt) : 0.0f;
    sp.loss_scale = (float)(1.0 / bt);
    sp.valid_rows = (uint32_t)bt;
    TT_CHECK(tt_gops_set_step(&w->ops, &sp, st));
    TT_CHECK(upload_tokens(w, tokens, Brows, with_backward, st));
    TT_CHECK(tt_gpu_begin(w->g, st));
    for (int c = 0; with_backward && c < w->plan.n_ch; c++) clear_grads(w, &w->plan.ch[c]);
    tt_gpu_clear(w->g, w->plan.stats, 0, 16);
    tt_gops_run(w->g, w->rec.plain.fwd, w->rec.plain.n_fwd);
    if (with_backward) tt_gops_run(w->g, w->rec.plain.bwd, w->rec.plain.n_bwd);
    else tt_gops_run(w->g, w->rec.evh, w->rec.n_evh); /* the chunked head's forward (none unless chunked) */
    tt_gpu_copy(w->g, w->plan.stats, 0, w->plan.stage_eval, 0, 16);
    TT_CHECK(tt_gpu_submit(w->g, st));
    float s[4];
    TT_CHECK(tt_gpu_read_start(w->g, w->plan.stage_eval, 0, 16, st));
    TT_CHECK(tt_gpu_read_finish(w->g, w->plan.stage_eval, s, st));
    *loss = s[0];
    return TT_OK;
}

int tt_wgpu_eval(tt_backend *be, const tt_token *tokens, int B, float *loss, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !loss) return tt_fail(st, TT_EINVAL, "eval: tokens or loss missing");
    if (B < 1 || B > w->plan.B) return tt_fail(st, TT_EINVAL, "eval batch %d out of range 1..%d", B, w->plan.B);
    return run_forward_only(be, tokens, B, 0, loss, st);
}

int tt_wgpu_loss_and_grad(tt_backend *be, const tt_token *tokens, float *loss, float *grads, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !loss || !grads) return tt_fail(st, TT_EINVAL, "loss_and_grad: missing argument");
    TT_CHECK(tt_wgpu_fault_check(w, st));
    TT_CHECK(run_forward_only(be, tokens, w->plan.B, 1, loss, st));
    for (int i = 0; i < w->plan.n_ch; i++) {
        const wchunk *c = &w->plan.ch[i];
        if (!c->tn) { /* frozen: no gradient buffer, zeros */
            memset(grads + c->g0, 0, c->n * sizeof *grads);
            continue;
        }
        TT_CHECK(tt_gpu_read_sync(w->g, c->g, (uint64_t)c->pad * 4, (uint64_t)c->n * 4, grads + c->g0, st));
    }
    if (w->ops.amp_on) { /* the loss scaler's gradients are scaled: the true ones */
        float ls[4];
        TT_CHECK(tt_gpu_read_sync(w->g, w->plan.lscale, 0, sizeof ls, ls, st));
        for (size_t i = 0; i < w->plan.P; i++) grads[i] /= ls[0];
    }
    return TT_OK;
}

int tt_wgpu_phase_times(tt_backend *be, double ms[3], tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!w->run.ts) return tt_fail(st, TT_EUNSUP, "%s", w->run.ts_why ? w->run.ts_why : "webgpu: no GPU timestamps");
    if (!w->run.has_phase) return tt_fail(st, TT_EINVAL, "webgpu: no timed step has been read back yet");
    memcpy(ms, w->run.phase_ms, sizeof w->run.phase_ms);
    return TT_OK;
}

/* backend.h inspect: the recorded forward on one sequence (row 0, padded
 * with zeros to ctx; the other rows of the batch zeros), then the first T
 * rows of the residual streams and of each layer's q and k read back */
int tt_wgpu_inspect(tt_backend *be, const tt_token *tokens, int T, float *resid, float *q, float *k, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !resid || !q || !k) return tt_fail(st, TT_EINVAL, "inspect: missing argument");
    if (T < 1 || T > w->plan.T) return tt_fail(st, TT_EINVAL, "inspect: %d tokens outside 1..%d", T, w->plan.T);
    tt_token *row = calloc((size_t)w->plan.T + 1, sizeof *row);
    if (!row) return tt_fail(st, TT_ENOMEM, "out of memory (inspect)");
    memcpy(row, tokens, (size_t)T * sizeof *row);
    float loss;
    int rc = run_forward_only(be, row, 1, 0, &loss, st);
    free(row);
    TT_CHECK(rc);
    const uint64_t bytes = (uint64_t)T * w->plan.C * 4, n = (uint64_t)T * w->plan.C;
    for (int l = 0; l <= w->plan.L; l++) TT_CHECK(tt_gpu_read_sync(w->g, w->plan.res[l], 0, bytes, resid + l * n, st));
    for (int l = 0; l < w->plan.L; l++) {
        const tt_gref *lq = &w->plan.la[l].q, *lk = &w->plan.la[l].k;
        TT_CHECK(tt_gpu_read_sync(w->g, lq->buf, (uint64_t)lq->off * 4, bytes, q + l * n, st));
        TT_CHECK(tt_gpu_read_sync(w->g, lk->buf, (uint64_t)lk->off * 4, bytes, k + l * n, st));
    }
    return TT_OK;
}
