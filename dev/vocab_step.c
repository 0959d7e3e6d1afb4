/* vocab_step.c — dev harness (not a test, not in ctest): the WebGPU
 * training step of a model of any vocabulary and activation, e.g. GPT-2
 * 124M (vocab 50257, gelu_new) at batch 8 x 1024, whose head and
 * cross-entropy run in chunks of rows (the logits of all 8192 rows would be
 * 1.6 GB). Random init and tokens; a few warm-up steps, then the median of
 * `steps` synchronous steps (step, then step_result), the device memory of
 * the plan, the loss of the first and last step, and the phase split
 * (forward / backward / optimizer, GPU timestamps; with the head in chunks
 * its forward counts in the backward).
 *
 *   build/dev_vocab_step L C NH T B V ACT [steps=N] [lora=R]
 *
 * ACT: gelu | gelu_new. e.g. GPT-2 at batch 8, and the same with the
 * vocabulary padded to 50304 (a multiple of 64, as nanoGPT pads it) to see
 * what the odd vocabulary costs:
 *   build/dev_vocab_step 12 768 12 1024 8 50257 gelu_new
 *   build/dev_vocab_step 12 768 12 1024 8 50304 gelu_new */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "model.h"
#include "rng.h"
#include "tt.h"

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: %s L C NH T B V gelu|gelu_new [steps=N] [lora=R]\n", argv[0]);
        return 2;
    }
    tt_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_layer = atoi(argv[1]), cfg.d_model = atoi(argv[2]), cfg.n_head = atoi(argv[3]);
    cfg.ctx = atoi(argv[4]), cfg.batch = atoi(argv[5]), cfg.vocab = atoi(argv[6]);
    cfg.act = strcmp(argv[7], "gelu_new") == 0 ? TT_ACT_GELU_TANH : TT_ACT_GELU;
    int steps = 20;
    for (int i = 8; i < argc; i++) {
        if (strncmp(argv[i], "steps=", 6) == 0) steps = atoi(argv[i] + 6);
        else if (strncmp(argv[i], "lora=", 5) == 0) cfg.lora_rank = atoi(argv[i] + 5), cfg.lora_alpha = 8.0f, cfg.lora_targets = TT_LORA_ALL;
    }
    if (steps < 1) steps = 1;
    tt_status st;
    tt_backend *be = NULL;
    tt_backend_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.timestamps = 1;
    double t0 = tt_now() * 1e3;
    if (tt_backend_webgpu_create(&cfg, &opts, &be, &st)) {
        fprintf(stderr, "webgpu: %s\n", st.msg);
        return 1;
    }
    printf("%s: L %d C %d NH %d T %d B %d vocab %d %s%s: device %.1f MiB, created in %.0f ms\n", be->desc.device,
           cfg.n_layer, cfg.d_model, cfg.n_head, cfg.ctx, cfg.batch, cfg.vocab, tt_act_name(cfg.act),
           cfg.lora_rank ? " + LoRA" : "", be->desc.device_bytes / 1048576.0, tt_now() * 1e3 - t0);
    float *p = malloc(be->layout.total * sizeof *p);
    tt_model_init_params(&be->cfg, &be->layout, 1, p, NULL);
    int rc = be->vt->set_state(be, p, NULL, NULL, &st);
    free(p);
    const size_t ntok = (size_t)cfg.batch * (cfg.ctx + 1);
    tt_token *tok = malloc(ntok * sizeof *tok);
    double *ms = malloc((size_t)steps * sizeof *ms);
    float first = 0, loss = 0, norm = 0;
    const int warm = 3;
    for (int k = 0; rc == TT_OK && k < warm + steps; k++) {
        for (size_t i = 0; i < ntok; i++)
            tok[i] = (tt_token)tt_rand_below(7 + (uint64_t)k, TT_STREAM_TEST, i, (uint64_t)cfg.vocab);
        tt_optim_args o;
        memset(&o, 0, sizeof o);
        o.lr = 1e-4f, o.beta1 = 0.9f, o.beta2 = 0.95f, o.eps = 1e-8f, o.weight_decay = 0.1f, o.clip = 1.0f;
        o.bc1 = 0.1f, o.bc2 = 0.05f, o.step = k, o.seed = 1;
        double s = tt_now() * 1e3;
        rc = be->vt->step(be, tok, 1, &o, &st);
        if (rc == TT_OK) rc = be->vt->step_result(be, &loss, &norm, &st);
        if (k == 0) first = loss;
        if (k >= warm) ms[k - warm] = tt_now() * 1e3 - s;
    }
    if (rc) {
        fprintf(stderr, "webgpu step: %s\n", st.msg);
        return 1;
    }
    qsort(ms, (size_t)steps, sizeof *ms, cmpd);
    double ph[3] = {0, 0, 0};
    int has_ph = be->vt->phase_times && be->vt->phase_times(be, ph, &st) == TT_OK;
    printf("  %d steps: median %.2f ms/step (min %.2f, max %.2f); loss %.4f -> %.4f, grad norm %.4f\n", steps,
           ms[steps / 2], ms[0], ms[steps - 1], first, loss, norm);
    if (has_ph) printf("  last step on the GPU: forward %.2f ms, backward %.2f ms, optimizer %.2f ms\n", ph[0], ph[1], ph[2]);
    free(tok), free(ms);
    tt_backend_destroy(be);
    return 0;
}
