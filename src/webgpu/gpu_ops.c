/* gpu_ops.c — the site core of the WebGPU op planners (gpu_ops.h): kernel
 * source composition (C-generated constants + common.wgsl + the kernel, its
 * //!include and //!unroll directives), the pipeline cache, the
 * uniform-argument arena, bind groups and grid shapes, the dropout keys
 * buffer. The op planners are src/webgpu/<op>.c.
 *
 * Dropout variants: a prefix that declares "const DROP_BIND: u32 = N;" (N:
 * the kernel's last binding, the keys buffer tt_gops.dropk) turns the
 * kernel's "//!drop " lines into code and appends dropout_common.wgsl (the
 * mask hash of src/rng.h and the keys binding). Without it those lines stay
 * comments: the kernel without dropout is the same text as before dropout
 * existed, so it compiles to the same code. Likewise a prefix that declares
 * "const DS_BIND: u32 = N;" turns the "//!ds " lines into code (the
 * dS-storing attention backward, attention.c), and "const AMP_BIND: u32 =
 * N;" the "//!amp " lines (the loss scaler of TT_PRECISION_F16: its state
 * buffer tt_gops.amp at binding N; crossentropy, adamw_update).
 *
 * Test hook TT_WEBGPU_WGSL_DIR=DIR (hooks.h) makes the kernels' sources
 * DIR/NAME.wgsl (common.wgsl, the kernel, its //!include), read when a
 * pipeline is created, instead of the copies embedded at build time
 * (tests/webgpu/test_webgpu_bounds.sh runs the output of
 * tests/tools/wgsl_bounds.py so). A missing or unreadable file is one error
 * line naming it. */
#include "gpu_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "wgsl.h"

/* pipeline cache entry: key = "name|unroll|prefix" (the whole prefix: a key
 * cut short would hand one kernel's pipeline to another whose constants
 * differ only past the cut) */
#define KEY_CAP 640
struct tt_gops_kent {
    char key[KEY_CAP];
    tt_gpu_kernel k;
};

#define ARENA_SLOTS 512u

int tt_gops_init(tt_gops *o, tt_gpu *g, tt_status *st) {
    memset(o, 0, sizeof *o);
    o->g = g;
    o->info = tt_gpu_get_info(g);
    uint32_t al = o->info->min_uniform_align ? o->info->min_uniform_align : 256;
    o->slot_bytes = al > 64 ? al : 64;
    o->slots_per_buf = ARENA_SLOTS;
    o->used = ARENA_SLOTS; /* first site allocates */
    /* //!unroll blocks unrolled on GPUs; on CPU adapters (lavapipe) a loop:
     * LLVM needs about twice as long to compile the unrolled matmul tiles */
    o->unroll = !o->info->is_cpu;
    const char *t = tt_hook_get(TT_HOOK_TILE);
    if (t) o->tile = atoi(t);
    t = tt_hook_get(TT_HOOK_UNROLL);
    if (t) o->unroll = atoi(t) != 0;
    t = tt_hook_get(TT_HOOK_SPLITK);
    if (t) o->splitk = atoi(t);
    t = tt_hook_get(TT_HOOK_ATTN_PF);
    if (t) o->attn_pf = atoi(t) != 0;
    t = tt_hook_get(TT_HOOK_ATTN_DS);
    if (t) o->attn_ds = atoi(t) != 0 ? 0 : -1;
    t = tt_hook_get(TT_HOOK_QKV_BATCH);
    if (t) o->qkv_unbatched = 3 & ~atoi(t);
    t = tt_hook_get(TT_HOOK_ATTN_SPLIT);
    if (t) o->attn_split = TT_ATTN_SPLIT_FORCED | (atoi(t) != 0);
    t = tt_hook_get(TT_HOOK_MAX_BINDING_MIB);
    if (t && atof(t) > 0) o->bind_cap = (uint64_t)(atof(t) * 1048576.0);
    return tt_gpu_buffer(g, sizeof(tt_gstep), TT_GPU_UNIFORM, "step-uniforms", &o->stepu, st);
}

void tt_gops_free(tt_gops *o) {
    free(o->cache);
    free(o->ubufs);
    memset(o, 0, sizeof *o);
}

int tt_gops_drop_init(tt_gops *o, uint32_t n_slots, tt_status *st) {
    if (o->dropk_slots >= n_slots) return TT_OK;
    if (o->dropk_slots) return tt_fail(st, TT_EINVAL, "webgpu: dropout keys buffer already sized for %u slots", o->dropk_slots);
    TT_CHECK(tt_gpu_buffer(o->g, 16 + 8 * (uint64_t)n_slots, TT_GPU_STORAGE, "dropout-keys", &o->dropk, st));
    o->dropk_slots = n_slots;
    return TT_OK;
}

int tt_gops_set_drop(tt_gops *o, float p, const tt_dropout_key *keys, uint32_t n_slots, uint32_t *scratch,
                     tt_status *st) {
    if (n_slots > o->dropk_slots) return tt_fail(st, TT_EINVAL, "webgpu: %u dropout keys for %u slots", n_slots, o->dropk_slots);
    scratch[0] = tt_dropout_threshold(p);
    scratch[1] = tt_gops_f2u(p > 0.0f ? 1.0f / (1.0f - p) : 1.0f);
    scratch[2] = scratch[3] = 0;
    for (uint32_t i = 0; i < n_slots; i++) {
        scratch[4 + 2 * i] = keys[i].k0;
        scratch[5 + 2 * i] = keys[i].k1;
    }
    return tt_gpu_write(o->g, o->dropk, 0, scratch, 16 + 8 * (uint64_t)n_slots, st);
}

int tt_gops_set_step(tt_gops *o, const tt_gstep *s, tt_status *st) {
    return tt_gpu_write(o->g, o->stepu, 0, s, sizeof *s, st);
}

/* A site of zero workgroups is a slot its op reserved and did not need (the
 * split-K reduce of a matmul that is not split): nothing to dispatch. */
void tt_gops_run(tt_gpu *g, const tt_gsite *s, int n) {
    for (int i = 0; i < n; i++)
        if (s[i].x) tt_gpu_dispatch(g, s[i].k, s[i].grp, s[i].x, s[i].y, s[i].z);
}

/* ---- kernels ------------------------------------------------------------- */
/* The source of NAME.wgsl: embedded, or DIR/NAME.wgsl under the hook
 * TT_WEBGPU_WGSL_DIR (see the header; *owned then holds the malloc'ed text,
 * to free). NULL with st set if it is missing. */
static const char *kernel_source(const char *name, const char *user, char **owned, tt_status *st) {
    *owned = NULL;
    const char *dir = tt_hook_get(TT_HOOK_WGSL_DIR);
    if (!dir) {
        const char *s = tt_wgsl_get(name);
        if (!s) {
            if (user) tt_fail(st, TT_EUNSUP, "webgpu: kernel %s includes %s.wgsl, which is not embedded", user, name);
            else tt_fail(st, TT_EUNSUP, "webgpu: kernel source %s.wgsl not embedded", name);
        }
        return s;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.wgsl", dir, name);
    FILE *f = fopen(path, "rb");
    long n = -1;
    char *buf = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        fclose(f);
        *owned = buf;
        return buf;
    }
    int err = errno;
    if (f) fclose(f);
    free(buf);
    tt_fail(st, TT_EUNSUP, "webgpu: TT_WEBGPU_WGSL_DIR: cannot read %s (%s)", path,
            !f ? strerror(err) : buf ? "read error" : "out of memory");
    return NULL;
}

#define MAX_INC 2 /* //!include lines of a kernel */

/* A kernel's WGSL as the device gets it (gpu_ops.h): prefix, common.wgsl,
 * the kernel with its includes, marker lines and //!unroll blocks expanded */
int tt_gops_kernel_text(const char *name, const char *prefix, int unroll, char **out, tt_status *st) {
    char *own[2 + MAX_INC + 1] = {NULL}; /* sources read under TT_WEBGPU_WGSL_DIR */
    char *src = NULL;
    int rc = TT_EUNSUP;
    const char *common = kernel_source("common", NULL, &own[0], st);
    const char *body = common ? kernel_source(name, NULL, &own[1], st) : NULL;
    if (!common || !body) goto done;
    /* a kernel may share declarations with its family through lines
     * "//!include NAME" (NAME.wgsl, e.g. attention_common: the Args,
     * bindings and loaders of the attention kernels; at most MAX_INC, in
     * the order the body names them), each expanded in place, one level
     * deep (an included file includes nothing) */
    const char *inc[MAX_INC];
    size_t n_inc = 0, inc_at[MAX_INC], inc_len[MAX_INC], inc_bytes = 0;
    for (const char *d = strstr(body, "\n//!include "); d; d = strstr(d + 1, "\n//!include ")) {
        const char *nm = d + 12;
        size_t nl = strcspn(nm, " \r\n");
        char iname[64];
        if (nl == 0 || nl >= sizeof iname || n_inc == MAX_INC) {
            rc = n_inc == MAX_INC ? tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: more than %d //!include lines", name, MAX_INC)
                                  : tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: bad //!include line", name);
            goto done;
        }
        memcpy(iname, nm, nl);
        iname[nl] = 0;
        inc[n_inc] = kernel_source(iname, name, &own[2 + n_inc], st);
        if (!inc[n_inc]) goto done;
        if (strstr(inc[n_inc], "\n//!include ") || !strncmp(inc[n_inc], "//!include ", 11)) {
            rc = tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: %s.wgsl includes another file (one level only)", name, iname);
            goto done;
        }
        inc_bytes += strlen(inc[n_inc]);
        inc_at[n_inc] = (size_t)(d + 1 - body);
        inc_len[n_inc++] = 11 + nl;
    }
    const int drop = strstr(prefix, "const DROP_BIND: u32 = ") != NULL;
    const char *dsn = drop ? kernel_source("dropout_common", name, &own[2 + MAX_INC], st) : NULL;
    if (drop && !dsn) goto done;
    size_t n = strlen(prefix) + strlen(common) + strlen(body) + inc_bytes + (dsn ? strlen(dsn) : 0) + 5;
    src = malloc(n);
    if (!src) {
        rc = tt_fail(st, TT_ENOMEM, "out of memory (kernel source)");
        goto done;
    }
    { /* the body with each include line replaced by the included file */
        size_t at = 0, used = (size_t)snprintf(src, n, "%s\n%s\n", prefix, common);
        for (size_t i = 0; i < n_inc; i++) {
            used += (size_t)snprintf(src + used, n - used, "%.*s%s", (int)(inc_at[i] - at), body + at, inc[i]);
            at = inc_at[i] + inc_len[i];
        }
        snprintf(src + used, n - used, "%s", body + at);
    }
    if (strstr(prefix, "const DS_BIND: u32 = ")) /* "//!ds " lines become code */
        for (char *m = strstr(src, "//!ds "); m; m = strstr(m + 6, "//!ds ")) memset(m, ' ', 6);
    if (strstr(prefix, "const AMP_BIND: u32 = ")) /* "//!amp " lines become code (the loss scaler) */
        for (char *m = strstr(src, "//!amp "); m; m = strstr(m + 7, "//!amp ")) memset(m, ' ', 7);
    if (dsn) { /* "//!drop " lines become code (blanked marker: same columns), the snippet follows */
        for (char *m = strstr(src, "//!drop "); m; m = strstr(m + 8, "//!drop ")) memset(m, ' ', 8);
        size_t used = strlen(src);
        snprintf(src + used, n - used, "\n%s", dsn);
    }
    {
        char *un, msg[160];
        if (tt_wgsl_unroll(src, prefix, unroll, &un, msg, sizeof msg)) {
            rc = tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: %s", name, msg);
            goto done;
        }
        if (un) free(src), src = un;
    }
    rc = TT_OK;
done:
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) free(own[i]);
    if (rc) {
        free(src);
        src = NULL;
    }
    *out = src;
    return rc;
}

static int get_kernel(tt_gops *o, const char *name, const char *prefix, int n_bind, const uint8_t *kinds,
                      tt_gpu_kernel *out, tt_status *st) {
    char key[KEY_CAP];
    if (snprintf(key, sizeof key, "%s|%d|%s", name, o->unroll, prefix) >= (int)sizeof key)
        return tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: constant prefix too long for the pipeline cache key", name);
    for (int i = 0; i < o->n_cache; i++)
        if (strcmp(o->cache[i].key, key) == 0) {
            *out = o->cache[i].k;
            return TT_OK;
        }
    char *src;
    TT_CHECK(tt_gops_kernel_text(name, prefix, o->unroll, &src, st));
    tt_gpu_kernel k;
    int rc = tt_gpu_kernel_create(o->g, src, "main", n_bind, kinds, name, &k, st);
    free(src);
    if (rc) return rc;
    if (tt_gpu_grow((void **)&o->cache, &o->cap_cache, o->n_cache, sizeof *o->cache, 32))
        return tt_fail(st, TT_ENOMEM, "out of memory (kernel cache)");
    snprintf(o->cache[o->n_cache].key, sizeof o->cache[0].key, "%s", key);
    o->cache[o->n_cache++].k = k;
    *out = k;
    return TT_OK;
}

/* "//!unroll VAR CONST" followed by a { block }: with unroll, the block
 * repeated CONST times, copy i opening with "const VAR = iu;" (a WGSL
 * constant: what is made of it and other constants is one too, as
 * robustness needs to know a subgroup-matrix load in bounds when the
 * shader is made); without, the loop "for (var VAR = 0u; VAR < CONST;
 * VAR++) { block }" (CONST: a u32 constant of the prefix, 1..64). Tint
 * does not unroll loops, and GPU compilers may leave matmul.wgsl's k loop
 * rolled (the gain: docs/BENCHMARKS.md). Braces inside // comments are
 * skipped. */
static int unroll_pass(const char *src, const char *prefix, int unroll, char **out, char *msg, size_t cap) {
    *out = NULL;
    if (msg && cap) msg[0] = 0;
    const char *d = strstr(src, "//!unroll ");
    if (!d) return 0;
    size_t len = strlen(src), ocap = len + 1, used = 0;
    char *o = NULL;
    const char *p = src;
    while (d) {
        char var[32], cname[32], pat[64], line[96];
        size_t ll = strcspn(d + 10, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(ll < 95 ? ll : 95), d + 10);
        if (sscanf(line, "%31s %31s", var, cname) != 2) {
            snprintf(msg, cap, "bad //!unroll line (want: //!unroll VAR CONST)");
            goto fail;
        }
        snprintf(pat, sizeof pat, "const %s: u32 = ", cname);
        const char *cv = strstr(prefix, pat);
        char *end = NULL;
        unsigned long n = cv ? strtoul(cv + strlen(pat), &end, 10) : 0;
        if (!cv || !end || *end != 'u' || n < 1 || n > 64) {
            snprintf(msg, cap, "//!unroll %s %s: %s is not a u32 constant 1..64 of the prefix", var, cname, cname);
            goto fail;
        }
        const char *b = d + strcspn(d, "\n");
        b += strspn(b, " \t\r\n");
        if (*b != '{') {
            snprintf(msg, cap, "//!unroll %s %s: not followed by a { block }", var, cname);
            goto fail;
        }
        const char *e = b + 1;
        int depth = 1;
        while (*e && depth) {
            if (e[0] == '/' && e[1] == '/') e += strcspn(e, "\n");
            else {
                depth += *e == '{' ? 1 : *e == '}' ? -1 : 0;
                e++;
            }
        }
        if (depth) {
            snprintf(msg, cap, "//!unroll %s %s: unbalanced braces", var, cname);
            goto fail;
        }
        /* e is past the closing brace; the body is (b, e - 1). Room for the
         * text before the directive, n + 1 times the body with 160 bytes of
         * its own (a copy adds at most 48, the loop header with a 31-character
         * VAR at most 123) and all of src again (the rest, whatever follows) */
        size_t body = (size_t)(e - 1 - (b + 1)), need = used + (size_t)(d - p) + (n + 1) * (body + 160) + len + 1;
        if (need > ocap || !o) {
            ocap = need > 2 * ocap ? need : 2 * ocap;
            char *no = realloc(o, ocap);
            if (!no) {
                snprintf(msg, cap, "out of memory (//!unroll)");
                goto fail;
            }
            o = no;
        }
        memcpy(o + used, p, (size_t)(d - p));
        used += (size_t)(d - p);
        if (!unroll) /* the same block as a loop */
            used += (size_t)snprintf(o + used, ocap - used, "for (var %s = 0u; %s < %luu; %s++) {%.*s}", var, var, n,
                                     var, (int)body, b + 1);
        for (unsigned long i = 0; unroll && i < n; i++)
            used += (size_t)snprintf(o + used, ocap - used, "{ const %s = %luu;%.*s}%s", var, i, (int)body, b + 1,
                                     i + 1 < n ? "\n" : "");
        p = e;
        d = strstr(p, "//!unroll ");
    }
    /* the rest fits: every allocation kept len + 1 bytes beyond the copies */
    memcpy(o + used, p, strlen(p) + 1);
    *out = o;
    return 0;
fail:
    free(o);
    return -1;
}

/* Nested blocks: a pass expands the outermost directives, each copy
 * carrying the inner ones, which the next pass expands (depth at most 4) */
int tt_wgsl_unroll(const char *src, const char *prefix, int unroll, char **out, char *msg, size_t cap) {
    *out = NULL;
    for (int depth = 0; depth < 4; depth++) {
        char *next;
        if (unroll_pass(*out ? *out : src, prefix, unroll, &next, msg, cap)) {
            free(*out);
            *out = NULL;
            return -1;
        }
        if (!next) return 0;
        free(*out);
        *out = next;
    }
    if (!strstr(*out, "//!unroll ")) return 0;
    free(*out);
    *out = NULL;
    snprintf(msg, cap, "//!unroll blocks nested deeper than 4");
    return -1;
}

/* A uniform slot holding 16 words of arguments. */
static int arena_slot(tt_gops *o, const uint32_t args[16], tt_gpu_binding *b, tt_status *st) {
    if (o->used == o->slots_per_buf) {
        tt_gpu_buf nb;
        TT_CHECK(tt_gpu_buffer(o->g, (uint64_t)o->slot_bytes * o->slots_per_buf, TT_GPU_UNIFORM, "kernel-args", &nb,
                               st));
        tt_gpu_buf *na = realloc(o->ubufs, (size_t)(o->n_ubufs + 1) * sizeof *na);
        if (!na) return tt_fail(st, TT_ENOMEM, "out of memory (uniform arena)");
        o->ubufs = na;
        o->ubufs[o->n_ubufs++] = nb;
        o->used = 0;
    }
    b->buf = o->ubufs[o->n_ubufs - 1];
    b->offset = (uint64_t)o->used * o->slot_bytes;
    b->size = 64;
    o->used++;
    return tt_gpu_write(o->g, b->buf, b->offset, args, 64, st);
}

/* Build a site: kernel (name, prefix), bindings = [args slot, (stepu)?, bufs...]. */
int tt_gops_make_site(tt_gops *o, tt_gsite *s, const char *name, const char *prefix, const uint32_t args[16],
                      int use_step, int n_buf, const tt_gpu_buf *bufs, const uint8_t *buf_kinds, uint32_t x,
                      uint32_t y, uint32_t z, tt_status *st) {
    uint8_t kinds[16];
    tt_gpu_binding b[16];
    int n = 0;
    /* every grid stays within maxComputeWorkgroupsPerDimension by
     * construction (grid-stride loops capped at 32768 workgroups, grid1's 2-D
     * fold, tiles); a shape that would still exceed it is refused here, at
     * planning time, instead of failing validation inside a step */
    uint32_t lim = o->info->max_wg_per_dim ? o->info->max_wg_per_dim : 65535;
    if (x > lim || y > lim || z > lim)
        return tt_fail(st, TT_EUNSUP, "webgpu %s: grid %ux%ux%u exceeds the adapter's %u workgroups per dimension", name,
                       x, y, z, lim);
    kinds[n] = TT_GPU_BIND_UNIFORM;
    TT_CHECK(arena_slot(o, args, &b[n], st));
    n++;
    if (use_step) {
        kinds[n] = TT_GPU_BIND_UNIFORM;
        b[n].buf = o->stepu;
        b[n].offset = 0;
        b[n].size = sizeof(tt_gstep);
        n++;
    }
    for (int i = 0; i < n_buf; i++, n++) {
        kinds[n] = buf_kinds[i];
        b[n].buf = bufs[i];
        b[n].offset = 0;
        b[n].size = 0;
    }
    TT_CHECK(get_kernel(o, name, prefix, n, kinds, &s->k, st));
    TT_CHECK(tt_gpu_group_create(o->g, s->k, n, b, &s->grp, st));
    s->x = x;
    s->y = y;
    s->z = z;
    s->name = name;
    s->flops = 0;
    s->tag[0] = 0;
    o->n_sites++;
    return TT_OK;
}

/* 1-D count of workgroups folded into x*y <= limits. */
void tt_gops_grid1(const tt_gops *o, uint64_t nwg, uint32_t *x, uint32_t *y) {
    uint64_t lim = o->info->max_wg_per_dim ? o->info->max_wg_per_dim : 65535;
    if (nwg == 0) nwg = 1;
    if (nwg <= lim) {
        *x = (uint32_t)nwg;
        *y = 1;
        return;
    }
    uint64_t yy = (nwg + lim - 1) / lim;
    *y = (uint32_t)yy;
    *x = (uint32_t)((nwg + yy - 1) / yy);
}

/* grid-stride kernels: enough workgroups to cover n, capped */
uint64_t tt_gops_binding_limit(const tt_gops *o) {
    uint64_t lim = o->info->max_storage_binding ? o->info->max_storage_binding : (128ull << 20);
    if (o->info->max_buffer && o->info->max_buffer < lim) lim = o->info->max_buffer;
    if (o->bind_cap && o->bind_cap < lim) lim = o->bind_cap;
    return lim;
}

uint32_t tt_gops_stride_wgs(size_t n, uint32_t wg) {
    size_t w = (n + wg - 1) / wg;
    if (w > 32768) w = 32768;
    return (uint32_t)(w ? w : 1);
}

uint32_t tt_gops_f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

int tt_gops_check_u32(size_t v, const char *what, tt_status *st) {
    if (v > 0xFFFFFFFFull) return tt_fail(st, TT_EUNSUP, "webgpu: %s too large for 32-bit indexing", what);
    return TT_OK;
}

const char *tt_gops_wg_prefix(uint32_t wg, char *buf, size_t cap) {
    snprintf(buf, cap, "const WG: u32 = %uu;\n", wg);
    return buf;
}
