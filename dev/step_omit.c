/* step_omit.c — dev harness (not a test, not in ctest): the in-step cost
 * of WebGPU dispatch sites, measured by omission. A whole training step
 * (sync: step then step_result, median of `steps`) with every site, then
 * with the sites whose "kernel tag" contains PATTERN dispatched as empty
 * grids (x = 0: no workgroups, the rest of the step unchanged), the
 * variants alternating over `rounds`; cost = full - omitted. Printed beside
 * the profile's time for the same sites (tt_webgpu_profile: each site run
 * alone, back to back; what `tinytrain profile` and
 * bench/matmul_vs_cublas.sh report), so a site that runs slower (or faster)
 * inside the step than alone shows up. The omitted steps compute garbage
 * (stale or NaN activations); only their time is used.
 *
 *   build/dev_step_omit L C NH T B [steps=N] [rounds=N] [reps=N] PATTERN...
 *
 * PATTERN: substrings of "kernel tag" (the profile's --detail rows), alternatives
 * separated by '|'. e.g. gpt2b8's q, k, v projections: dev_step_omit 12 768 12 1024 8 "x3 t128 z1 TB bias"
 * One line per pattern: sites, profile ms, in-step ms (full - omitted), ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "webgpu/backend_webgpu.h"
#include "model.h"
#include "rng.h"
#include "webgpu/webgpu_profile.h"

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* text contains one of pat's alternatives ("a|b|c") */
static int has(const char *text, const char *pat) {
    char alt[256];
    for (const char *p = pat;;) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n >= sizeof alt) n = sizeof alt - 1;
        memcpy(alt, p, n), alt[n] = 0;
        if (n && strstr(text, alt)) return 1;
        if (!e) return 0;
        p = e + 1;
    }
}

/* "kernel tag" of a site matches pat */
static int match(const tt_gsite *s, const char *pat) {
    char kt[160];
    snprintf(kt, sizeof kt, "%s %s", s->name ? s->name : "", s->tag);
    return s->name && has(kt, pat);
}

/* set x of every matching site of both lists to 0 (saved in *xs), or back */
static int omit(wgpu_impl *w, const char *pat, uint32_t *xs, int restore) {
    tt_gsite *lists[2] = {w->rec.plain.fwd, w->rec.plain.bwd};
    const int counts[2] = {w->rec.plain.n_fwd, w->rec.plain.n_bwd};
    int n = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            tt_gsite *s = &lists[l][i];
            if (!match(s, pat)) continue;
            if (restore) s->x = xs[n];
            else xs[n] = s->x, s->x = 0;
            n++;
        }
    return n;
}

static double median_step(tt_backend *be, tt_token *tok, size_t ntok, int steps, int seed, double *ms) {
    tt_status st;
    tt_optim_args o = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0.1f, 0.05f, 0.0f, 0, 0};
    float loss, gn;
    for (int k = 0; k < steps; k++) {
        for (size_t i = 0; i < ntok; i++)
            tok[i] = (tt_token)(97 + tt_rand_below((uint64_t)seed, TT_STREAM_TEST, (uint64_t)k * ntok + i, 26));
        double a = tt_now();
        if (be->vt->step(be, tok, 1, &o, &st) || be->vt->step_result(be, &loss, &gn, &st)) {
            fprintf(stderr, "dev_step_omit: step: %s\n", st.msg);
            exit(1);
        }
        ms[k] = (tt_now() - a) * 1e3;
    }
    qsort(ms, (size_t)steps, sizeof *ms, cmpd);
    return ms[steps / 2];
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: dev_step_omit L C NH T B [steps=N] [rounds=N] [reps=N] PATTERN...\n");
        return 2;
    }
    tt_model_config cfg = tt_preset_find("gpt2")->cfg;
    cfg.n_layer = atoi(argv[1]), cfg.d_model = atoi(argv[2]), cfg.n_head = atoi(argv[3]);
    cfg.ctx = atoi(argv[4]), cfg.batch = atoi(argv[5]);
    int steps = 10, rounds = 3, reps = 20, np = 0;
    const char **pats = calloc((size_t)argc, sizeof *pats);
    for (int i = 6; i < argc; i++) {
        if (strncmp(argv[i], "steps=", 6) == 0) steps = atoi(argv[i] + 6);
        else if (strncmp(argv[i], "rounds=", 7) == 0) rounds = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "reps=", 5) == 0) reps = atoi(argv[i] + 5);
        else pats[np++] = argv[i];
    }
    tt_status st;
    if (np == 0 || steps < 1 || rounds < 1 || reps < 1 || tt_config_validate(&cfg, &st)) {
        fprintf(stderr, "dev_step_omit: bad arguments (a model, steps/rounds/reps >= 1, at least one PATTERN)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    tt_backend *be;
    if (tt_backend_webgpu_create(&cfg, NULL, &be, &st)) {
        fprintf(stderr, "dev_step_omit: webgpu: %s\n", st.msg);
        return 1;
    }
    wgpu_impl *w = tt_wgpu_of(be);
    size_t P = be->layout.total, ntok = (size_t)cfg.batch * (cfg.ctx + 1);
    float *p = malloc(P * sizeof *p);
    tt_token *tok = malloc((ntok) * sizeof *tok);
    tt_model_init_params(&be->cfg, &be->layout, 1337, p, NULL);
    if (be->vt->set_state(be, p, NULL, NULL, &st)) {
        fprintf(stderr, "dev_step_omit: set_state: %s\n", st.msg);
        return 1;
    }
    double *ms = malloc((size_t)steps * sizeof *ms);
    uint32_t *xs = malloc(4096 * sizeof *xs);
    median_step(be, tok, ntok, 3, 7, ms); /* pipelines compiled, clocks up */
    /* the profile's times of each pattern's sites */
    tt_webgpu_prof *prof = malloc(512 * sizeof *prof);
    int npr = 0;
    if (tt_webgpu_profile(be, reps, 1, prof, 512, &npr, &st)) {
        fprintf(stderr, "dev_step_omit: profile: %s\n", st.msg);
        return 1;
    }
    printf("# %d layers, d %d, %d heads, ctx %d, batch %d; %d steps x %d rounds; profile reps %d\n", cfg.n_layer,
           cfg.d_model, cfg.n_head, cfg.ctx, cfg.batch, steps, rounds, reps);
    double *full = calloc((size_t)rounds, sizeof *full), *without = calloc((size_t)rounds * np, sizeof *without);
    for (int r = 0; r < rounds; r++) {
        full[r] = median_step(be, tok, ntok, steps, 100 + r, ms);
        for (int j = 0; j < np; j++) {
            int n = omit(w, pats[j], xs, 0);
            without[r * np + j] = median_step(be, tok, ntok, steps, 200 + r, ms);
            omit(w, pats[j], xs, 1);
            if (n == 0) fprintf(stderr, "dev_step_omit: no site matches '%s'\n", pats[j]);
        }
    }
    qsort(full, (size_t)rounds, sizeof *full, cmpd);
    printf("step with every site: median %.3f ms (rounds:", full[rounds / 2]);
    for (int r = 0; r < rounds; r++) printf(" %.3f", full[r]);
    printf(")\n%-36s %5s %11s %11s %7s\n", "pattern", "sites", "profile_ms", "instep_ms", "ratio");
    for (int j = 0; j < np; j++) {
        double pm = 0, *d = malloc((size_t)rounds * sizeof *d);
        int ns = 0;
        for (int i = 0; i < npr; i++) {
            char kt[160];
            snprintf(kt, sizeof kt, "%s %s", prof[i].kernel, prof[i].tag);
            if (has(kt, pats[j])) pm += prof[i].ms, ns += prof[i].sites;
        }
        for (int r = 0; r < rounds; r++) d[r] = without[r * np + j];
        qsort(d, (size_t)rounds, sizeof *d, cmpd);
        double in = full[rounds / 2] - d[rounds / 2];
        printf("%-36s %5d %11.3f %11.3f %7.3f\n", pats[j], ns, pm, in, pm > 0 ? in / pm : 0);
        free(d);
    }
    tt_backend_destroy(be);
    free(p), free(tok), free(ms), free(xs), free(prof), free(full), free(without), free(pats);
    return 0;
}
