/* backend_webgpu.h — the WebGPU training backend's own state and the calls
 * between its files (private to them: above the backends only backend.h and
 * webgpu_profile.h are seen). The backend is one plan and one recorded
 * schedule, built once at creation; a step only replays it. Its files, in
 * the order they call (each only the ones before it) and the part of the
 * state each owns:
 *   plan.c      the buffer plan (wplan): parameter chunks, every buffer, the
 *               decay masks and grad-norm parts, the preflight (plan_bytes)
 *   schedule.c  the recorded sites (wrec) of one micro-batch (forward,
 *               backward, plain and with dropout, the LoRA sites) and of the
 *               optimizer, from the plan
 *   step.c      running the schedule (wrun): step, its results, eval,
 *               gradients, inspect, the GPU timestamps (phase split), the
 *               fault hook
 *   profile.c   per-kernel timing of the schedule
 *   backend.c   the tt_backend interface: the vtable, creation (device, test
 *               hooks, plan, schedule), destruction, parameter and moment
 *               transfer, the extras of webgpu_profile.h
 * Shared C for native (Dawn) and browser device layers: it only talks to
 * device.h, through gpu_ops.h. */
#ifndef TT_BACKEND_WEBGPU_H
#define TT_BACKEND_WEBGPU_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "gpu_ops.h"
#include "webgpu_profile.h"

/* the activations of one layer; q, k, v follow each other in one buffer
 * (offsets 0, BT*C, 2*BT*C) where it fits one binding, so their three
 * projections run as one batched matmul (plan.c), else one buffer each */
typedef struct {
    tt_gpu_buf ln1, st1, y, att, res2, ln2, st2, h, g;
    tt_gref q, k, v;
} wl_acts;

/* A chunk of the parameter-sized storage: parameters [g0, g0 + n) of the
 * layout, stored from buffer position pad in its own params, grads, m, v
 * buffers (and its own decay mask, bit i = parameter g0 + i). Chunks start
 * only at "units" (tensors 2u, 2u+1 of the layout: wte+wpe, each LayerNorm's
 * weight+bias, each matrix and its bias), the tensors kernel sites need in one
 * buffer (embedding: wte and wpe; LayerNorm: w and b, dw and db; the folded
 * bias gradient: dW then db). pad = g0 % 4 keeps every tensor's buffer
 * offset congruent mod 4 to its layout offset, so every site picks the same
 * (vec4 or not) kernel as in one buffer: splitting changes no arithmetic. */
typedef struct {
    size_t g0, n;
    uint32_t pad;
    int u0, u1;             /* units [u0, u1) */
    size_t t0, tn;          /* its trainable parameters [t0, t0 + tn) (all of it without LoRA; the adapters) */
    uint32_t part0, n_part; /* its grad-norm parts (tt_gop_adamw_chunks) */
    tt_gpu_buf p, g, m, v, mask;
} wchunk;

/* the recorded sites of one micro-batch: its forward, then its backward */
typedef struct {
    tt_gsite *fwd, *bwd;
    int n_fwd, n_bwd;
} wsched;

/* The plan (plan.c writes it at creation; the schedule and the step read
 * it): the shapes and every device buffer. */
typedef struct {
    int B, T, C, NH, L, V;
    size_t P;
    wchunk *ch;             /* parameter storage chunks (1 unless split) */
    int n_ch;
    tt_gpu_buf *pset, *gset; /* ch[i].p, ch[i].g as arrays (schedule.c's PR) */
    uint32_t n_part;        /* grad-norm parts: a function of the layout only, not of the chunking */
    tt_gpu_buf parts, tok, stats, part_cs, part_opt;
    tt_gpu_buf *res; /* L+1 residual streams */
    wl_acts *la;
    tt_gpu_buf lnf, stf, logits, losses;
    /* The head and cross-entropy: one product over the B*T rows whose
     * logits (B*T*V floats) fit WGPU_HEAD_LOGITS_BYTES and one binding
     * (head_rows = 0: the plain schedule, logits in the forward), else in
     * chunks of head_rows rows (tt_gop_head_crossentropy; logits holds one
     * chunk): each chunk's forward and backward run at the start of the
     * backward, and eval runs the forward chunks alone (wrec.evh).
     * head_force: the test hook TT_WEBGPU_HEAD_ROWS (chunks of that many rows).
     * head_ldv: the chunks' logits row stride, V rounded up to a multiple
     * of 4 (internal: the rows past wte read are wpe's, their gradient 0). */
    int head_rows, head_force, head_ldv;
    tt_gpu_buf dres, dtmp, dg;
    tt_gref dq, dk, dv; /* one buffer "dqkv" at 0, BT*C, 2*BT*C where it fits one binding (plan.c) */
    tt_gpu_buf lora_t, lora_dt, lora_prod; /* LoRA: x A of every (layer, target), its gradient, t^T dout */
    size_t lora_slot;                      /* elements of one x A slot (rows * R, rounded up to 4) */
    tt_gpu_buf staging[2], stage_eval;
    /* TT_PRECISION_F16: the loss scaler's state [scale, clean steps, 0, 0]
     * (f32; amp_update.wgsl), -1 without */
    tt_gpu_buf lscale;
    size_t tok_words, bucket_off, pos_off;
    int dry;           /* preflight: count bytes, allocate nothing */
    double plan_bytes; /* device memory of the plan */
    uint64_t bind_cap; /* a smaller binding limit than the adapter's (tt_gops.bind_cap, test hook), 0 none */
} wplan;

/* The recorded sites (schedule.c writes them at creation, or the dropout
 * schedule at the first step that drops; the step replays them). */
typedef struct {
    wsched plain;           /* the schedule of steps without dropout, eval, loss_and_grad */
    wsched dropout;         /* the dropout schedule (fwd NULL until planned) */
    int cap_fwd, cap_bwd;   /* sites each forward, backward array holds */
    tt_gsite *evh;          /* chunked head (plan.head_rows): eval's head chunks and loss sum, after the forward */
    int n_evh;
    tt_gsite *opt;          /* the optimizer: grad norm, clip, AdamW */
    int n_opt;
    tt_dropout_key *dkeys;  /* (L+1)*4 keys of a micro-batch */
    uint32_t *dwords;       /* their upload: 4 + 2 * (L+1)*4 words */
    int biasfold;      /* bias grads folded into the dW matmuls: 2 where it pays (dw_db), 1 always, 0 never (test hook TT_WEBGPU_BIASFOLD) */
} wrec;

/* The run (step.c): staging slots in flight, results, the simulated fault,
 * the phase split. */
typedef struct {
    int cur, last, pending[2];
    int res_ok[2];          /* res_loss/res_norm of a staging slot hold its step's result */
    float res_loss[2], res_norm[2];
    float res_scale[2], res_good[2], res_skipped[2]; /* TT_PRECISION_F16: the loss scaler after that step
                                                       * (stats[2..4]) */
    int read_slot;          /* the staging slot step_result / step_result_prev read last */
    int64_t n_steps;        /* steps submitted */
    /* test hook TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=N: the N-th step() seeds
     * an infinite loss gradient (an overflow the loss scaler must skip) */
    int64_t ls_fault_at;
    uint32_t *tokhost;      /* the token upload (plan.tok_words) */
    /* test hook TT_WEBGPU_FAULT_AT_STEP=N: the N-th step() of this backend
     * (1-based) reports a device error; TT_WEBGPU_FAULT_KIND=lost (default:
     * the device is gone, every later call fails too), error (only that
     * step fails before anything is submitted; the device stays usable) or
     * validation (a real WebGPU validation error: that step records one
     * dispatch over the adapter's workgroup-count limit, which the device
     * reports as an uncaptured error at submit; the device layer keeps it) */
    int64_t fault_at;
    int fault_lost;
    int fault_validation;
    int faulted; /* 1: simulated lost device */
    /* phase split (opt-in, tt_backend_opts.timestamps and an adapter with
     * timestamp-query): GPU timestamps at the start of the forward, backward
     * and optimizer passes of each micro-batch (slot 3i, 3i+1, 3i+2) and one
     * after the optimizer (3n), resolved into ts_stage[slot] with the stats.
     * Adds pass boundaries and one small query-resolve buffer per step, so
     * it stays off unless asked for. */
    int ts;                 /* timestamps recorded */
    const char *ts_why;     /* why phase_times is unavailable */
    char ts_why_buf[256];
    tt_gpu_buf ts_stage[2];
    int ts_n[2];            /* slots recorded by the step in readback slot i (0: none) */
    int ts_pending[2];
    uint64_t ts_host[64];
    double phase_ms[3];
    int has_phase;
} wrun;

/* The backend: the device and its site core, and the parts each layer owns. */
typedef struct {
    tt_gpu *g;
    tt_gops ops;
    wplan plan;
    wrec rec;
    wrun run;
} wgpu_impl;

#define WGPU_HEAD_LOGITS_BYTES (128ull << 20) /* the head's logits above this run in chunks of rows */
#define WGPU_TS_SLOTS 64 /* up to (64-1)/3 = 21 micro-batches per step are timed */

static inline wgpu_impl *IMPL(tt_backend *be) { return (wgpu_impl *)be->impl; }

static inline uint64_t tt_wgpu_chunk_bytes(const wchunk *c) { return ((uint64_t)c->pad + c->n) * 4; }

/* after a simulated device loss (TT_WEBGPU_FAULT_AT_STEP) every call fails,
 * as every call on a lost device does */
static inline int tt_wgpu_fault_check(const wgpu_impl *w, tt_status *st) {
    if (w->run.faulted) return tt_fail(st, TT_EDEVICE, "webgpu device lost (simulated by TT_WEBGPU_FAULT_AT_STEP)");
    return TT_OK;
}

/* The files call one way, each only the ones above it here (and gpu_ops.h,
 * device.h): plan.c < schedule.c < step.c < profile.c < backend.c, which
 * drives them all (tests/tools/include_layers.py checks it).
 *
 * plan.c: the buffer plan of cfg (layout lo) into w->plan; w->plan.dry: only
 * sizes and limits (plan_bytes); else the buffers are created */
int tt_wgpu_alloc_buffers(wgpu_impl *w, const tt_model_config *cfg, const tt_layout *lo, tt_status *st);
tt_gref tt_wgpu_param_at(const wgpu_impl *w, const tt_gpu_buf *set, size_t off); /* layout offset off in set */
/* the preflight: device bytes of the plan of cfg on gpu's device, nothing allocated */
int tt_wgpu_plan_bytes(const wgpu_impl *gpu, const tt_model_config *cfg, uint64_t *bytes, tt_status *st);

/* schedule.c: the recorded sites into w->rec, from the plan */
int tt_wgpu_plan_schedule(tt_backend *be, tt_status *st); /* the plain schedule and the optimizer */
int tt_wgpu_plan_dropout(tt_backend *be, tt_status *st);  /* the dropout schedule, its keys */
int tt_wgpu_upload_drop_keys(tt_backend *be, const tt_optim_args *opt, int n_micro, int micro, tt_status *st);

/* step.c: the vtable's step functions (w->run), and the readback of slot i */
int tt_wgpu_step(tt_backend *be, const tt_token *tokens, int n_micro, const tt_optim_args *opt, tt_status *st);
int tt_wgpu_step_result(tt_backend *be, float *loss, float *grad_norm, tt_status *st);
int tt_wgpu_step_result_prev(tt_backend *be, float *loss, float *grad_norm, tt_status *st);
int tt_wgpu_eval(tt_backend *be, const tt_token *tokens, int B, float *loss, tt_status *st);
int tt_wgpu_loss_and_grad(tt_backend *be, const tt_token *tokens, float *loss, float *grads, tt_status *st);
int tt_wgpu_phase_times(tt_backend *be, double ms[3], tt_status *st);
int tt_wgpu_inspect(tt_backend *be, const tt_token *tokens, int T, float *resid, float *q, float *k, tt_status *st);
int tt_wgpu_finish_pending(wgpu_impl *w, int i, tt_status *st);

/* profile.c: per-kernel timing of the schedule (tt_webgpu_profile of
 * webgpu_profile.h, in backend.c, checks the backend's kind) */
int tt_wgpu_profile(wgpu_impl *w, int reps, int detail, tt_webgpu_prof *out, int max, int *n, tt_status *st);

/* backend.c: be's implementation, NULL if be is not a webgpu backend */
wgpu_impl *tt_wgpu_of(const tt_backend *be);

#endif
