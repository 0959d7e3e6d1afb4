/* gpu_ops.c — planning of WGSL kernel sites (see gpu_ops.h): kernel source
 * composition (C-generated constants + common.wgsl + kernel), a pipeline
 * cache, the uniform-argument arena, bind groups, grid shapes. Plus
 * tt_gpu_read_sync, generic over the device layer.
 *
 * Debugging / test hook: env TT_WEBGPU_WGSL_DIR=DIR makes the kernels'
 * sources DIR/NAME.wgsl (common.wgsl, the kernel, its //!include), read when
 * a pipeline is created, instead of the copies embedded at build time: runs
 * edited or instrumented kernels without a rebuild (tests/webgpu/test_webgpu_bounds.sh
 * runs the output of tests/tools/wgsl_bounds.py so). A missing or unreadable
 * file is one error line naming it. */
#include "gpu_ops.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgsl.h"

/* pipeline cache entry: key = "name|prefix" (the whole prefix: a key cut
 * short would hand one kernel's pipeline to another whose constants differ
 * only past the cut) */
#define KEY_CAP 640
struct tt_gops_kent {
    char key[KEY_CAP];
    tt_gpu_kernel k;
};

#define WG_ELEM 256u /* elementwise / reduction workgroup size */
#define WG_XENT 64u  /* softmax + cross-entropy rows (V = 256: 4 per thread) */

/* LayerNorm: one workgroup per row, about 4 columns per thread */
static uint32_t wg_ln(int C) {
    uint32_t w = 32;
    while (w < 256 && w * 4 < (uint32_t)C) w *= 2;
    return w;
}
#define ARENA_SLOTS 512u

int tt_gops_init(tt_gops *o, tt_gpu *g, tt_status *st) {
    memset(o, 0, sizeof *o);
    o->g = g;
    o->info = tt_gpu_get_info(g);
    uint32_t al = o->info->min_uniform_align ? o->info->min_uniform_align : 256;
    o->slot_bytes = al > 64 ? al : 64;
    o->slots_per_buf = ARENA_SLOTS;
    o->used = ARENA_SLOTS; /* first site allocates */
    const char *t = getenv("TT_WEBGPU_TILE");
    if (t) o->tile = atoi(t);
    /* //!unroll blocks unrolled on GPUs; on CPU adapters (lavapipe) a loop:
     * LLVM needs twice as long over the unrolled matmul tiles (a cold
     * test_webgpu_ops: 10.5 vs 5.2 min). Env TT_WEBGPU_UNROLL=0/1 forces either. */
    o->unroll = !o->info->is_cpu;
    t = getenv("TT_WEBGPU_UNROLL");
    if (t && *t) o->unroll = atoi(t) != 0;
    t = getenv("TT_WEBGPU_SPLITK");
    if (t) o->splitk = atoi(t);
    t = getenv("TT_WEBGPU_MMPOLICY");
    if (t && strcmp(t, "old") == 0) o->policy = 1;
    o->split_epi = 1;
    t = getenv("TT_WEBGPU_SPLITK_EPI");
    if (t && atoi(t) == 0) o->split_epi = 0;
    t = getenv("TT_WEBGPU_ATT_LANES");
    if (t && atoi(t) > 0) o->att_lanes = (uint32_t)atoi(t);
    t = getenv("TT_WEBGPU_ATTN");
    /* attention kernels: mt (default since the H200 A/B of docs/BENCHMARKS.md:
     * gpt2 408 -> 271 ms/step), rows (attn_*: LANES threads per row), tiled */
    o->att_mt = 1;
    if (t && strcmp(t, "tiled") == 0) o->att_tiled = 1, o->att_mt = 0;
    if (t && strcmp(t, "rows") == 0) o->att_mt = 0;
    t = getenv("TT_WEBGPU_ATTN_BWD"); /* mt backward variant (gpu_attn_m.c): unset/"default", or ds[TB] */
    if (t && *t && strcmp(t, "default") != 0) {
        char *end = NULL;
        if (strncmp(t, "ds", 2) != 0) return tt_fail(st, TT_EINVAL, "TT_WEBGPU_ATTN_BWD: unknown variant '%s'", t);
        o->att_bwd = 1;
        if (t[2]) o->att_bwd_tb = (uint32_t)strtoul(t + 2, &end, 10);
        if (t[2] && (*end || (o->att_bwd_tb != 4 && o->att_bwd_tb != 8 && o->att_bwd_tb != 16 && o->att_bwd_tb != 32)))
            return tt_fail(st, TT_EINVAL, "TT_WEBGPU_ATTN_BWD: '%s' (want ds, ds4, ds8, ds16 or ds32)", t);
    }
    t = getenv("TT_WEBGPU_MM_TARGET");
    if (t && atoi(t) > 0) o->mm_target = (uint32_t)atoi(t);
    t = getenv("TT_WEBGPU_MM_KMIN");
    if (t && atoi(t) >= 16) o->mm_kmin = (uint32_t)atoi(t);
    t = getenv("TT_WEBGPU_SUBGROUPS"); /* subgroups tier (row reductions; *_sg.wgsl), off by default */
    if (t && *t && strcmp(t, "0") != 0) {
        if (strcmp(t, "1") == 0) o->subgroups = 1;
        else if (strcmp(t, "tree") == 0) o->subgroups = 2;
        else return tt_fail(st, TT_EINVAL, "TT_WEBGPU_SUBGROUPS: '%.40s' is not 0, 1 or tree", t);
        if (!o->info->has_subgroups)
            return tt_fail(st, TT_EUNSUP,
                           "webgpu: TT_WEBGPU_SUBGROUPS=%s but adapter %.100s lacks the subgroups feature", t,
                           o->info->name);
    }
    {
        char msg[160];
        const char *mv = getenv("TT_WEBGPU_MMVAR");
        if (tt_gop_mm_var_parse(mv, &o->mm_var, msg, sizeof msg)) return tt_fail(st, TT_EINVAL, "%s", msg);
        if (!mv || !*mv) o->mm_var = TT_MMV_TUNED; /* unset: the tuned default (gpu_ops.h) */
    }
    return tt_gpu_buffer(g, sizeof(tt_gstep), TT_GPU_UNIFORM, "step-uniforms", &o->stepu, st);
}

void tt_gops_free(tt_gops *o) {
    free(o->cache);
    free(o->ubufs);
    memset(o, 0, sizeof *o);
}

int tt_gops_set_step(tt_gops *o, const tt_gstep *s, tt_status *st) {
    return tt_gpu_write(o->g, o->stepu, 0, s, sizeof *s, st);
}

void tt_gops_run(tt_gpu *g, const tt_gsite *s, int n) {
    for (int i = 0; i < n; i++) tt_gpu_dispatch(g, s[i].k, s[i].grp, s[i].x, s[i].y, s[i].z);
}

/* ---- kernels ------------------------------------------------------------- */
/* The source of NAME.wgsl: embedded, or DIR/NAME.wgsl under the hook
 * TT_WEBGPU_WGSL_DIR (see the header; *owned then holds the malloc'ed text,
 * to free). NULL with st set if it is missing. */
static const char *kernel_source(const char *name, const char *user, char **owned, tt_status *st) {
    *owned = NULL;
    const char *dir = getenv("TT_WEBGPU_WGSL_DIR");
    if (!dir || !*dir) {
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
    char *own[3] = {NULL, NULL, NULL}; /* sources read under TT_WEBGPU_WGSL_DIR */
    char *src = NULL;
    int rc = TT_EUNSUP;
    const char *common = kernel_source("common", NULL, &own[0], st);
    const char *body = common ? kernel_source(name, NULL, &own[1], st) : NULL;
    if (!common || !body) goto done;
    /* a kernel may share declarations with its family through lines
     * "//!include NAME" (NAME.wgsl, e.g. attn_m_common: the Args, bindings
     * and loaders of the attn_m* kernels), expanded here, one level deep */
    const char *inc = NULL;
    size_t n_inc = 0, inc_at = 0, inc_len = 0;
    const char *d = strstr(body, "\n//!include ");
    if (d) {
        const char *nm = d + 12;
        size_t nl = strcspn(nm, " \r\n");
        char iname[64];
        if (nl == 0 || nl >= sizeof iname) {
            rc = tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: bad //!include line", name);
            goto done;
        }
        memcpy(iname, nm, nl);
        iname[nl] = 0;
        inc = kernel_source(iname, name, &own[2], st);
        if (!inc) goto done;
        if (strstr(nm, "\n//!include ")) {
            rc = tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: one //!include per kernel", name);
            goto done;
        }
        n_inc = strlen(inc);
        inc_at = (size_t)(d + 1 - body);
        inc_len = 11 + nl;
    }
    size_t n = strlen(prefix) + strlen(common) + strlen(body) + n_inc + 4;
    src = malloc(n);
    if (!src) {
        rc = tt_fail(st, TT_ENOMEM, "out of memory (kernel source)");
        goto done;
    }
    if (inc) /* the body with its include line replaced by the included file */
        snprintf(src, n, "%s\n%s\n%.*s%s%s", prefix, common, (int)inc_at, body, inc, body + inc_at + inc_len);
    else snprintf(src, n, "%s\n%s\n%s", prefix, common, body);
    {
        char *un, msg[160];
        if (tt_wgsl_unroll(src, prefix, o->unroll, &un, msg, sizeof msg)) {
            rc = tt_fail(st, TT_EUNSUP, "webgpu: kernel %s: %s", name, msg);
            goto done;
        }
        if (un) free(src), src = un;
    }
    tt_gpu_kernel k;
    rc = tt_gpu_kernel_create(o->g, src, "main", n_bind, kinds, name, &k, st);
done:
    free(src);
    for (int i = 0; i < 3; i++) free(own[i]);
    if (rc) return rc;
    if (o->n_cache == o->cap_cache) {
        int cap = o->cap_cache ? o->cap_cache * 2 : 32;
        tt_gops_kent *nc = realloc(o->cache, (size_t)cap * sizeof *nc);
        if (!nc) return tt_fail(st, TT_ENOMEM, "out of memory (kernel cache)");
        o->cache = nc;
        o->cap_cache = cap;
    }
    snprintf(o->cache[o->n_cache].key, sizeof o->cache[0].key, "%s", key);
    o->cache[o->n_cache++].k = k;
    *out = k;
    return TT_OK;
}

/* "//!unroll VAR CONST" followed by a { block }: with unroll, the block
 * repeated CONST times, copy i opening with "let VAR = iu;"; without, the
 * loop "for (var VAR = 0u; VAR < CONST; VAR++) { block }" (CONST: a u32
 * constant of the prefix, 1..64). Tint does not unroll loops, and the
 * NVIDIA Vulkan compiler left matmul.wgsl's k loop rolled: unrolled, gpt2
 * ran 234.5 vs 243.7 ms/step on the H200 (docs/BENCHMARKS.md run 5). Braces
 * inside // comments are skipped. */
int tt_wgsl_unroll(const char *src, const char *prefix, int unroll, char **out, char *msg, size_t cap) {
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
         * its own (a copy adds at most 46, the loop header with a 31-character
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
            used += (size_t)snprintf(o + used, ocap - used, "{ let %s = %luu;%.*s}%s", var, i, (int)body, b + 1,
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
static int make_site(tt_gops *o, tt_gsite *s, const char *name, const char *prefix, const uint32_t args[16],
                     int use_step, int n_buf, const tt_gpu_buf *bufs, const uint8_t *buf_kinds, uint32_t x, uint32_t y,
                     uint32_t z, tt_status *st) {
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

int tt_gops_make_site(tt_gops *o, tt_gsite *s, const char *name, const char *prefix, const uint32_t args[16],
                      int use_step, int n_buf, const tt_gpu_buf *bufs, const uint8_t *buf_kinds, uint32_t x,
                      uint32_t y, uint32_t z, tt_status *st) {
    return make_site(o, s, name, prefix, args, use_step, n_buf, bufs, buf_kinds, x, y, z, st);
}

/* 1-D count of workgroups folded into x*y <= limits. */
static void grid1(const tt_gops *o, uint64_t nwg, uint32_t *x, uint32_t *y) {
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
static uint32_t stride_wgs(size_t n, uint32_t wg) {
    size_t w = (n + wg - 1) / wg;
    if (w > 32768) w = 32768;
    return (uint32_t)(w ? w : 1);
}

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int check_u32(size_t v, const char *what, tt_status *st) {
    if (v > 0xFFFFFFFFull) return tt_fail(st, TT_EUNSUP, "webgpu: %s too large for 32-bit indexing", what);
    return TT_OK;
}

/* ---- matmul ----------------------------------------------------------- */
static const char *wg_prefix(uint32_t wg, char *buf, size_t cap);
static int colsum_final(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref part, uint32_t W, uint32_t n_chunks,
                        tt_status *st);

/* The matmul launch plan: a pure function of the shape (and of the policy
 * switches, never of the adapter or of timings), so a given model trains
 * bit-identically on every GPU. Tiles are square, BM = BN in {128, 64, 32}
 * (128: 8x8 outputs per thread, 256 threads; 64: 4x4, 256 threads; 32: 4x4,
 * 64 threads). New policy (default): the largest tile giving >= target
 * workgroups (TT_MM_TARGET = 512, about four per SM of a 132-SM GPU), where
 * a product that may be split counts its K slices too (slices of >=
 * TT_MM_KMIN = 128, at most 16; partial products are added in slice order
 * by a second site, which also applies any epilogue): so a big-K product
 * keeps the efficient large tile and gains workgroups from split-K. When no
 * tile reaches the target: the 32 tile with the most slices allowed. Old policy (TT_WEBGPU_MMPOLICY=old): the
 * first version's rule (128 only for big grids, split-K only on GPUs). */
#define MM_MAXSPLIT 16u

static uint32_t mm_wgs(int M, int N, int t) { return (uint32_t)((M + t - 1) / t) * (uint32_t)((N + t - 1) / t); }

void tt_gop_matmul_plan(const tt_gops *o, int M, int N, int K, int splittable, int *tile_out, uint32_t *splits_out,
                        uint32_t *kchunk_out) {
    int tile = o->tile;
    uint32_t splits = 1;
    if (o->policy == 1) {
        if (tile != 32 && tile != 64 && tile != 128) {
            uint64_t big_tiles = (uint64_t)((M + 127) / 128) * (uint64_t)((N + 127) / 128);
            tile = (!o->info->is_cpu && M >= 256 && N >= 256 && big_tiles >= 96) ? 128 : 64;
        }
        uint32_t g = mm_wgs(M, N, tile);
        if (splittable) {
            if (o->splitk > 0) splits = (uint32_t)o->splitk;
            else if (!o->info->is_cpu && g < 132 && K >= 1024) {
                splits = (264 + g - 1) / g;
                if (splits > 8) splits = 8;
                if (splits > (uint32_t)K / 512) splits = (uint32_t)K / 512;
            }
        }
    } else {
        uint32_t target = o->mm_target ? o->mm_target : TT_MM_TARGET;
        static const int tiles[3] = {128, 64, 32};
        uint32_t kmin = o->mm_kmin ? o->mm_kmin : TT_MM_KMIN;
        uint32_t maxs = splittable ? (uint32_t)K / kmin : 1;
        if (maxs > MM_MAXSPLIT) maxs = MM_MAXSPLIT;
        /* the split-K scratch (slices x M x N floats) stays within 128 MiB,
         * the binding size every WebGPU adapter offers: a shape-only rule (a
         * safety net: with target 512 and the 128 tile it never binds) */
        uint64_t cap = TT_MM_SCRATCH_FLOATS / ((uint64_t)M * (uint64_t)N);
        if (maxs > cap) maxs = (uint32_t)cap;
        if (maxs < 2) maxs = 1;
        if (tile == 32 || tile == 64 || tile == 128) { /* forced tile */
            uint32_t g = mm_wgs(M, N, tile);
            if (g < target) splits = (target + g - 1) / g;
        } else {
            tile = 0;
            for (int i = 0; i < 3 && !tile; i++) {
                uint32_t g = mm_wgs(M, N, tiles[i]), sp = g >= target ? 1 : (target + g - 1) / g;
                if (sp <= maxs) tile = tiles[i], splits = sp;
            }
            if (!tile) { /* not even the smallest tile with the most slices reaches the target */
                tile = 32;
                splits = maxs;
            }
        }
        if (splits > maxs) splits = maxs;
        if (splittable && o->splitk > 0) splits = (uint32_t)o->splitk;
    }
    uint32_t kchunk = (uint32_t)K;
    if (splits > 1) {
        kchunk = (((uint32_t)K + splits - 1) / splits + 15) / 16 * 16;
        splits = ((uint32_t)K + kchunk - 1) / kchunk;
    }
    if (splits < 2) {
        splits = 1;
        kchunk = (uint32_t)K;
    }
    *tile_out = tile;
    *splits_out = splits;
    *kchunk_out = kchunk;
}

/* matmul kernel variants (gpu_ops.h TT_MMV_*, matmul.wgsl's header) */
static const struct {
    const char *name;
    unsigned bit;
} mm_vars[] = {{"bk32", TT_MMV_BK32}, {"db", TT_MMV_DB}, {"swz", TT_MMV_SWZ}, {"t64x8", TT_MMV_T64X8},
               {"tuned", TT_MMV_TUNED}};
#define N_MM_VARS (int)(sizeof mm_vars / sizeof mm_vars[0])

int tt_gop_mm_var_parse(const char *s, unsigned *bits, char *msg, size_t cap) {
    *bits = 0;
    if (msg && cap) msg[0] = 0;
    if (!s || !*s || strcmp(s, "default") == 0) return 0;
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int i = 0; i < N_MM_VARS; i++)
            if (n == strlen(mm_vars[i].name) && strncmp(p, mm_vars[i].name, n) == 0) {
                *bits |= mm_vars[i].bit;
                found = 1;
            }
        if (!found) {
            if (msg && cap)
                snprintf(msg, cap, "TT_WEBGPU_MMVAR: unknown matmul variant '%.*s' in '%s' (known: bk32, db, swz, t64x8, "
                         "tuned, default; a comma list)", (int)(n < 40 ? n : 40), p, s);
            *bits = 0;
            return -1;
        }
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

const char *tt_gop_mm_var_str(unsigned bits, char *buf, size_t cap) {
    size_t used = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_MM_VARS; i++)
        if (bits & mm_vars[i].bit) {
            int w = snprintf(buf + used, cap > used ? cap - used : 0, "%s%s", used ? "," : "", mm_vars[i].name);
            if (w > 0) used += (size_t)w;
            if (used >= cap) break;
        }
    if (!used) snprintf(buf, cap, "default");
    return buf;
}

void tt_gop_mm_kcfg(unsigned bits, uint32_t wg_storage, int tile, tt_mm_kcfg *k) {
    uint32_t lim = wg_storage ? wg_storage : 16384;
    if (bits & TT_MMV_TUNED) bits |= tile < 128 ? (TT_MMV_DB | TT_MMV_SWZ) : 0u;
    k->tm = (tile == 128 || (tile == 64 && (bits & TT_MMV_T64X8))) ? 8 : 4;
    k->bk = (tile == 128 && (bits & TT_MMV_BK32)) ? 32 : 16;
    k->stages = (bits & TT_MMV_DB) ? 2 : 1;
    k->swz = (bits & TT_MMV_SWZ) ? 1 : 0;
    /* 2 tiles (A and B) of BK x tile floats per stage */
#define MM_BYTES(k) ((uint32_t)(k)->stages * (uint32_t)(k)->bk * 2u * (uint32_t)tile * 4u)
    if (MM_BYTES(k) > lim && k->bk == 32) k->bk = 16;
    if (MM_BYTES(k) > lim && k->stages == 2) k->stages = 1;
    k->bytes = MM_BYTES(k);
#undef MM_BYTES
    k->threads = (uint32_t)(tile / k->tm) * (uint32_t)(tile / k->tm);
}

int tt_gop_matmul(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                  int M, int N, int K, int trans_a, int trans_b, int accumulate, tt_status *st) {
    return tt_gop_matmul_ex(o, s, C, A, B, bias, R, M, N, K, trans_a, trans_b, accumulate, 0, st);
}

int tt_gop_matmul_ex(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                     int M, int N, int K, int trans_a, int trans_b, int accumulate, int ones_rows, tt_status *st) {
    if (M <= 0 || N <= 0 || K <= 0) return tt_fail(st, TT_EINVAL, "webgpu matmul: bad shape %dx%dx%d", M, N, K);
    if (ones_rows < 0 || ones_rows >= M)
        return tt_fail(st, TT_EINVAL, "webgpu matmul: %d ones rows out of range for M = %d", ones_rows, M);
    TT_CHECK(check_u32((size_t)M * N + C.off, "matmul output", st));
    const int am = M - ones_rows; /* rows of op(A) actually stored */
    int tile;
    uint32_t splits, kchunk;
    /* split-K: always for accumulating products without an epilogue (the
     * slices are added into C by colsum_final); under the new policy also
     * for the others (splitk_reduce applies bias, R, accumulate) unless
     * TT_WEBGPU_SPLITK_EPI=0 */
    const int plain = accumulate && !bias && !R;
    tt_gop_matmul_plan(o, M, N, K, plain || (o->policy == 0 && o->split_epi), &tile, &splits, &kchunk);
    tt_mm_kcfg kc;
    tt_gop_mm_kcfg(o->mm_var, o->info->max_wg_storage, tile, &kc);
    uint32_t lda = (uint32_t)(trans_a ? am : K), ldb = (uint32_t)(trans_b ? K : N);
    int vec = ((A.off | B.off | lda | ldb) & 3) == 0;
    /* split-K: z slices of K write partial products to scratch, a second
     * site adds them into C in slice order */
    uint32_t gx = (uint32_t)((N + tile - 1) / tile), gy = (uint32_t)((M + tile - 1) / tile);
    char prefix[400];
    snprintf(prefix, sizeof prefix,
             "const BM: u32 = %du;\nconst BN: u32 = %du;\nconst BK: u32 = %du;\nconst TM: u32 = %du;\n"
             "const TN: u32 = %du;\nconst TRANS_A: bool = %s;\nconst TRANS_B: bool = %s;\nconst VEC: bool = %s;\n"
             "const STAGES: u32 = %du;\nconst SWZ: bool = %s;\n",
             tile, tile, kc.bk, kc.tm, kc.tm, trans_a ? "true" : "false", trans_b ? "true" : "false",
             vec ? "true" : "false", kc.stages, kc.swz ? "true" : "false");
    tt_gref Cdst = C;
    if (splits > 1) {
        size_t need = (size_t)splits * M * N;
        TT_CHECK(check_u32(need, "split-k scratch", st));
        if (need > o->split_elems) {
            TT_CHECK(tt_gpu_buffer(o->g, (uint64_t)need * 4, TT_GPU_STORAGE, "split-k-scratch", &o->split_buf, st));
            o->split_elems = need;
        }
        Cdst.buf = o->split_buf;
        Cdst.off = 0;
    }
    uint32_t args[16] = {0};
    args[0] = (uint32_t)M;
    args[1] = (uint32_t)N;
    args[2] = (uint32_t)K;
    args[3] = lda;
    args[4] = ldb;
    args[5] = (uint32_t)N; /* ldc */
    args[6] = A.off;
    args[7] = B.off;
    args[8] = Cdst.off;
    args[9] = bias ? bias->off : 0;
    args[10] = R ? R->off : 0;
    args[11] = (accumulate ? 1u : 0u) | (bias ? 2u : 0u) | (R ? 4u : 0u);
    args[12] = kchunk;
    args[13] = (uint32_t)am;
    tt_gpu_buf bufs[7] = {A.buf, B.buf, Cdst.buf, bias ? bias->buf : A.buf, R ? R->buf : A.buf, A.buf, B.buf};
    static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                     TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ};
    uint8_t k2[7];
    memcpy(k2, kinds, sizeof k2);
    k2[2] = TT_GPU_BIND_RW;
    TT_CHECK(make_site(o, &s[0], "matmul", prefix, args, 0, 7, bufs, k2, gx, gy, splits, st));
    s[0].flops = 2.0 * M * N * K;
    snprintf(s[0].tag, sizeof s[0].tag, "%dx%dx%d t%d z%u%s%s", M, N, K, tile, splits, trans_a ? " TA" : "",
             trans_b ? " TB" : "");
    memset(&s[1], 0, sizeof s[1]);
    if (splits > 1 && plain) {
        tt_gref part = {o->split_buf, 0};
        TT_CHECK(colsum_final(o, &s[1], C, part, (uint32_t)(M * N), splits, st));
    } else if (splits > 1) {
        char pf[64];
        uint32_t W = (uint32_t)(M * N), x, y;
        uint32_t a2[16] = {W, splits, C.off, (uint32_t)N, bias ? bias->off : 0, R ? R->off : 0, args[11]};
        tt_gpu_buf b2[4] = {o->split_buf, bias ? bias->buf : o->split_buf, R ? R->buf : o->split_buf, C.buf};
        static const uint8_t k2s[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        grid1(o, ((uint64_t)W + WG_ELEM - 1) / WG_ELEM, &x, &y);
        TT_CHECK(make_site(o, &s[1], "splitk_reduce", wg_prefix(WG_ELEM, pf, sizeof pf), a2, 0, 4, b2, k2s, x, y, 1,
                           st));
    }
    return TT_OK;
}

/* ---- layernorm ----------------------------------------------------------- */
static const char *wg_prefix(uint32_t wg, char *buf, size_t cap) {
    snprintf(buf, cap, "const WG: u32 = %uu;\n", wg);
    return buf;
}

/* Row reductions (ln_fwd, ln_bwd_dx, xent, sumsq): the fp32 tree kernel
 * NAME, or under the subgroups tier (o->subgroups) its twin NAME_sg
 * (*_sg.wgsl), whose prefix starts with the enable directive (WGSL wants it
 * before any declaration). cap >= 96. */
#define RED_NAME(o, name) ((o)->subgroups ? name "_sg" : name)
static const char *red_prefix(const tt_gops *o, uint32_t wg, char *pf, size_t cap) {
    if (!o->subgroups) return wg_prefix(wg, pf, cap);
    snprintf(pf, cap, "enable subgroups;\nconst WG: u32 = %uu;\nconst SG_TREE: bool = %s;\n", wg,
             o->subgroups == 2 ? "true" : "false");
    return pf;
}

int tt_gop_layernorm_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref stats, tt_gref inp, tt_gref w, tt_gref b,
                             int rows, int C, tt_status *st) {
    if (w.buf != b.buf) return tt_fail(st, TT_EINVAL, "webgpu layernorm: w and b must share a buffer");
    if (stats.off != 0) return tt_fail(st, TT_EINVAL, "webgpu layernorm: stats must start its buffer");
    char pf[96];
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)C, inp.off, w.off, b.off, out.off};
    tt_gpu_buf bufs[4] = {inp.buf, w.buf, out.buf, stats.buf};
    static const uint8_t kinds[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_RW};
    uint32_t x, y;
    grid1(o, (uint64_t)rows, &x, &y);
    return make_site(o, s, RED_NAME(o, "ln_fwd"), red_prefix(o, wg_ln(C), pf, sizeof pf), args, 0, 4, bufs, kinds, x,
                     y, 1, st);
}

/* rows per chunk of stage 1 of the column sums: short serial chains (16
 * rows, up to 128 chunks) under the new policy; the old rule (32 rows, up to
 * 256 chunks) under TT_WEBGPU_MMPOLICY=old. */
static uint32_t colsum_chunk_p(int rows, int policy) {
    if (policy == 1) {
        uint32_t c = (uint32_t)((rows + 255) / 256);
        return c < 32 ? 32 : c;
    }
    uint32_t c = (uint32_t)((rows + 127) / 128);
    return c < 16 ? 16 : c;
}
#define colsum_chunk(rows) colsum_chunk_p(rows, o->policy)

size_t tt_gop_colsum_part_elems(int rows, int N) {
    size_t best = 0;
    for (int p = 0; p < 2; p++) {
        uint32_t ch = colsum_chunk_p(rows, p);
        size_t e = (size_t)((rows + ch - 1) / ch) * (size_t)N;
        if (e > best) best = e;
    }
    return best;
}

static int colsum_final(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref part, uint32_t W, uint32_t n_chunks,
                        tt_status *st) {
    char pf[96];
    uint32_t args[16] = {W, n_chunks, out.off};
    tt_gpu_buf bufs[2] = {part.buf, out.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    if (part.off != 0) return tt_fail(st, TT_EINVAL, "webgpu: reduction scratch must start its buffer");
    /* lanes per column: about 4 chunks per lane, at most 16 lanes */
    uint32_t lanes = 1;
    while (lanes < 16 && lanes * 4 < n_chunks) lanes *= 2;
    uint32_t cw = WG_ELEM / lanes, x, y;
    grid1(o, ((uint64_t)W + cw - 1) / cw, &x, &y);
    snprintf(pf, sizeof pf, "const WG: u32 = %uu;\nconst LANES: u32 = %uu;\n", WG_ELEM, lanes);
    return make_site(o, s, "colsum_final", pf, args, 0, 2, bufs, kinds, x, y, 1, st);
}

int tt_gop_layernorm_backward(tt_gops *o, tt_gsite *s, tt_gref dinp, tt_gref dwb, tt_gref dout, tt_gref inp, tt_gref w,
                              tt_gref stats, tt_gref part, int rows, int C, int accum, tt_status *st) {
    char pf[96];
    uint32_t x, y;
    {
        uint32_t args[16] = {(uint32_t)rows, (uint32_t)C, dout.off, inp.off, w.off, dinp.off, accum ? 1u : 0u};
        tt_gpu_buf bufs[5] = {dout.buf, inp.buf, w.buf, stats.buf, dinp.buf};
        static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_RW};
        grid1(o, (uint64_t)rows, &x, &y);
        TT_CHECK(make_site(o, &s[0], RED_NAME(o, "ln_bwd_dx"), red_prefix(o, wg_ln(C), pf, sizeof pf), args, 0, 5, bufs,
                           kinds, x, y, 1, st));
    }
    uint32_t ch = colsum_chunk(rows), nch = ((uint32_t)rows + ch - 1) / ch;
    {
        uint32_t args[16] = {(uint32_t)rows, (uint32_t)C, dout.off, inp.off, ch};
        tt_gpu_buf bufs[4] = {dout.buf, inp.buf, stats.buf, part.buf};
        static const uint8_t kinds[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(make_site(o, &s[1], "ln_bwd_dwdb", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 4, bufs, kinds,
                           ((uint32_t)C + WG_ELEM - 1) / WG_ELEM, nch, 1, st));
    }
    return colsum_final(o, &s[2], dwb, part, 2u * (uint32_t)C, nch, st);
}

int tt_gop_bias_backward(tt_gops *o, tt_gsite *s, tt_gref db, tt_gref dout, tt_gref part, int rows, int N,
                         tt_status *st) {
    char pf[64];
    uint32_t ch = colsum_chunk(rows), nch = ((uint32_t)rows + ch - 1) / ch;
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)N, dout.off, ch};
    tt_gpu_buf bufs[2] = {dout.buf, part.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    TT_CHECK(make_site(o, &s[0], "colsum", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 2, bufs, kinds,
                       ((uint32_t)N + WG_ELEM - 1) / WG_ELEM, nch, 1, st));
    return colsum_final(o, &s[1], db, part, (uint32_t)N, nch, st);
}

/* ---- gelu ---------------------------------------------------------------- */
int tt_gop_gelu_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref inp, size_t n, tt_status *st) {
    char pf[64];
    TT_CHECK(check_u32(n, "gelu", st));
    uint32_t args[16] = {(uint32_t)n, inp.off, out.off};
    tt_gpu_buf bufs[2] = {inp.buf, out.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return make_site(o, s, "gelu_fwd", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 2, bufs, kinds,
                     stride_wgs(n, WG_ELEM), 1, 1, st);
}

int tt_gop_gelu_backward(tt_gops *o, tt_gsite *s, tt_gref d, tt_gref inp, size_t n, tt_status *st) {
    char pf[64];
    TT_CHECK(check_u32(n, "gelu", st));
    uint32_t args[16] = {(uint32_t)n, inp.off, d.off};
    tt_gpu_buf bufs[2] = {inp.buf, d.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return make_site(o, s, "gelu_bwd", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 2, bufs, kinds,
                     stride_wgs(n, WG_ELEM), 1, 1, st);
}

/* ---- attention ----------------------------------------------------------- */
/* Attention launch shape: LANES threads per row (query row in attn_fwd and
 * attn_bwd_dq, key row in attn_bwd_dkdv) splitting the other side's rows of
 * each tile, BR rows per workgroup (BR * LANES = 64 threads when split), key
 * tiles of BC rows. LANES = 4 by default (4x the threads of one thread per
 * row: B*NH*T rows alone do not fill a big GPU), env TT_WEBGPU_ATT_LANES
 * (1, 2, 4, 8; 1 = the first version's one thread per row, BR = 64). The
 * tiles must fit the adapter's workgroup storage: BC is halved, then LANES
 * dropped to 1, until they do. */
typedef struct {
    uint32_t br, bc, lanes;
} att_shape;

static int att_plan(const tt_gops *o, int C, int NH, att_shape *sh, char *pf, size_t cap, tt_status *st) {
    int hs = C / NH;
    if (hs > 256) return tt_fail(st, TT_EUNSUP, "webgpu attention: head size %d > 256 not supported", hs);
    int bc = 1024 / hs;
    if (bc > 64) bc = 64;
    if (bc < 4) bc = 4;
    int p = 1;
    while (p * 2 <= bc) p *= 2;
    uint32_t lanes = o->att_lanes ? o->att_lanes : 4;
    if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8) lanes = 4;
    uint32_t budget = o->info->max_wg_storage ? o->info->max_wg_storage : 16384;
    uint32_t BC = (uint32_t)p, BR, XO;
    for (;;) {
        BR = lanes > 1 ? 64 / lanes : 64;
        XO = 1;
        if (lanes > 1) {
            uint32_t x1 = BR * 2 * (uint32_t)hs, x2 = BR * ((uint32_t)hs + 2);
            XO = x1 > x2 ? x1 : x2;
        }
        uint32_t bytes = 4 * (2 * BC * ((uint32_t)hs + 1) + 2 * BC + (lanes > 1 ? XO : 1));
        if (bytes <= budget) break;
        if (BC > 4) BC /= 2;
        else if (lanes > 1) lanes = 1, BC = (uint32_t)p;
        else return tt_fail(st, TT_EUNSUP, "webgpu attention: head size %d needs more workgroup memory than the adapter has", hs);
    }
    sh->br = BR, sh->bc = BC, sh->lanes = lanes;
    snprintf(pf, cap, "const HS: u32 = %du;\nconst BR: u32 = %uu;\nconst BC: u32 = %uu;\nconst LANES: u32 = %uu;\nconst XO: u32 = %uu;\n",
             hs, BR, BC, lanes, XO);
    return TT_OK;
}

/* ---- tiled attention (opt-in: TT_WEBGPU_ATTN=tiled) ------------------------
 * FlashAttention-2 style kernels attn_t_fwd, attn_t_bwd_dq (also writes D),
 * attn_t_bwd_dkdv: BR rows per block (query rows; key rows in dkdv), BC rows
 * per streamed tile, register micro-tiles of RPT rows x (BC/TPR or
 * HS/TPR) columns per thread, (BR/RPT)*TPR threads. (BR, BC) per kernel: the
 * first of a fixed list whose workgroup arrays fit the adapter's
 * maxComputeWorkgroupStorageSize (floats; KS = HS + 1, PS = BC + 1):
 *   fwd  BR*KS + BC*KS + BR*PS
 *   dq   2*BR*KS + 2*BC*KS + BR*PS + 2*BR
 *   dkdv 2*BR*KS + 2*BC*KS + 2*BR*PS + 2*BC
 * then RPT = min(4, BR), TPR = min(8, BC). A pure function of (head size,
 * storage limit, invocation limit). */
static int att_tiled_plan(const tt_gops *o, int which, int hs, uint32_t *br_out, uint32_t *bc_out, char *pf,
                          size_t cap, tt_status *st) {
    static const uint32_t cand[][2] = {{64, 32}, {64, 16}, {32, 32}, {32, 16}, {16, 16}, {16, 8},
                                       {8, 8},   {8, 4},   {4, 4},   {2, 2},   {1, 1}};
    if (hs < 1 || hs > 1024) return tt_fail(st, TT_EUNSUP, "webgpu attention (tiled): head size %d not supported", hs);
    uint32_t budget = o->info->max_wg_storage ? o->info->max_wg_storage : 16384;
    uint32_t maxinv = o->info->max_invocations ? o->info->max_invocations : 256;
    uint64_t ks = (uint64_t)hs + 1;
    for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
        uint64_t br = cand[c][0], bc = cand[c][1], ps = bc + 1, f;
        uint32_t rpt = br < 4 ? (uint32_t)br : 4, tpr = bc < 8 ? (uint32_t)bc : 8;
        if ((uint32_t)br / rpt * tpr > maxinv) continue;
        if (which == 0) f = br * ks + bc * ks + br * ps;
        else if (which == 1) f = 2 * br * ks + 2 * bc * ks + br * ps + 2 * br;
        else f = 2 * br * ks + 2 * bc * ks + 2 * br * ps + 2 * bc;
        if (4 * f > budget) continue;
        *br_out = (uint32_t)br;
        *bc_out = (uint32_t)bc;
        snprintf(pf, cap,
                 "const HS: u32 = %du;\nconst BR: u32 = %uu;\nconst BC: u32 = %uu;\nconst RPT: u32 = %uu;\n"
                 "const TPR: u32 = %uu;\n",
                 hs, (uint32_t)br, (uint32_t)bc, rpt, tpr);
        return TT_OK;
    }
    return tt_fail(st, TT_EUNSUP, "webgpu attention (tiled): head size %d needs more workgroup memory than the adapter has",
                   hs);
}

static int att_tiled_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v, int B,
                             int T, int C, int NH, tt_status *st) {
    char pf[200];
    uint32_t br, bc;
    TT_CHECK(att_tiled_plan(o, 0, C / NH, &br, &bc, pf, sizeof pf, st));
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH, f2u(1.0f / sqrtf((float)(C / NH)))};
    tt_gpu_buf bufs[5] = {q.buf, k.buf, v.buf, y.buf, stats.buf};
    static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW,
                                     TT_GPU_BIND_RW};
    TT_CHECK(make_site(o, s, "attn_t_fwd", pf, args, 0, 5, bufs, kinds, ((uint32_t)T + br - 1) / br, (uint32_t)NH,
                       (uint32_t)B, st));
    s->flops = 2.0 * B * T * (T + 1.0) * C;
    return TT_OK;
}

static int att_tiled_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                              tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, tt_status *st) {
    char pf[200];
    uint32_t br, bc;
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH, f2u(1.0f / sqrtf((float)(C / NH)))};
    TT_CHECK(att_tiled_plan(o, 1, C / NH, &br, &bc, pf, sizeof pf, st));
    {
        tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, y.buf, dy.buf, stats.buf, dq.buf};
        static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
        TT_CHECK(make_site(o, &s[0], "attn_t_bwd_dq", pf, args, 0, 7, bufs, kinds, ((uint32_t)T + br - 1) / br,
                           (uint32_t)NH, (uint32_t)B, st));
        s[0].flops = 2.0 * B * T * (T + 1.0) * C * 1.5;
    }
    TT_CHECK(att_tiled_plan(o, 2, C / NH, &br, &bc, pf, sizeof pf, st));
    tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, dy.buf, stats.buf, dk.buf, dv.buf};
    static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                     TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
    TT_CHECK(make_site(o, &s[1], "attn_t_bwd_dkdv", pf, args, 0, 7, bufs, kinds, ((uint32_t)T + br - 1) / br,
                       (uint32_t)NH, (uint32_t)B, st));
    s[1].flops = 2.0 * B * T * (T + 1.0) * C * 2.0;
    return TT_OK;
}

int tt_gop_attention_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                             int B, int T, int C, int NH, tt_status *st) {
    char pf[200];
    att_shape sh;
    if (q.off || k.off || v.off || y.off || stats.off)
        return tt_fail(st, TT_EINVAL, "webgpu attention: tensors must start their buffers");
    if (o->att_mt && tt_gop_attn_m_usable(o, C / NH))
        return tt_gop_attn_m_forward(o, s, y, stats, q, k, v, B, T, C, NH, st);
    if (o->att_tiled) return att_tiled_forward(o, s, y, stats, q, k, v, B, T, C, NH, st);
    TT_CHECK(att_plan(o, C, NH, &sh, pf, sizeof pf, st));
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH,
                         f2u(1.0f / sqrtf((float)(C / NH)))};
    tt_gpu_buf bufs[5] = {q.buf, k.buf, v.buf, y.buf, stats.buf};
    static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW,
                                     TT_GPU_BIND_RW};
    TT_CHECK(make_site(o, s, "attn_fwd", pf, args, 0, 5, bufs, kinds, ((uint32_t)T + sh.br - 1) / sh.br,
                       (uint32_t)NH, (uint32_t)B, st));
    s->flops = 2.0 * B * T * (T + 1.0) * C; /* causal: T(T+1)/2 pairs x 2 products x 2 flops x C */
    return TT_OK;
}

int tt_gop_attention_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                              tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH,
                              tt_status *st) {
    char pf[200];
    att_shape sh;
    if (q.off || k.off || v.off || y.off || dy.off || dq.off || dk.off || dv.off || stats.off)
        return tt_fail(st, TT_EINVAL, "webgpu attention: tensors must start their buffers");
    if (o->att_mt && tt_gop_attn_m_usable(o, C / NH))
        return tt_gop_attn_m_backward(o, s, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, st);
    if (o->att_tiled) return att_tiled_backward(o, s, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, st);
    TT_CHECK(att_plan(o, C, NH, &sh, pf, sizeof pf, st));
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH,
                         f2u(1.0f / sqrtf((float)(C / NH)))};
    uint32_t gx = ((uint32_t)T + sh.br - 1) / sh.br;
    {
        tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, y.buf, dy.buf, stats.buf, dq.buf};
        static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
        TT_CHECK(make_site(o, &s[0], "attn_bwd_dq", pf, args, 0, 7, bufs, kinds, gx, (uint32_t)NH, (uint32_t)B, st));
        s[0].flops = 2.0 * B * T * (T + 1.0) * C * 1.5;
    }
    tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, dy.buf, stats.buf, dk.buf, dv.buf};
    static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                     TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
    TT_CHECK(make_site(o, &s[1], "attn_bwd_dkdv", pf, args, 0, 7, bufs, kinds, gx, (uint32_t)NH, (uint32_t)B, st));
    s[1].flops = 2.0 * B * T * (T + 1.0) * C * 2.0;
    return TT_OK;
}

/* ---- embedding ----------------------------------------------------------- */
int tt_gop_embedding_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref tokens, tt_gref wte, tt_gref wpe, int B,
                             int T, int C, tt_status *st) {
    char pf[64];
    if (wte.buf != wpe.buf) return tt_fail(st, TT_EINVAL, "webgpu embedding: wte and wpe must share a buffer");
    if (tokens.off) return tt_fail(st, TT_EINVAL, "webgpu embedding: tokens must start their buffer");
    size_t n = (size_t)B * T * C;
    TT_CHECK(check_u32(n, "embedding", st));
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, wte.off, wpe.off, out.off};
    tt_gpu_buf bufs[3] = {tokens.buf, wte.buf, out.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return make_site(o, s, "embed_fwd", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 3, bufs, kinds,
                     stride_wgs(n, WG_ELEM), 1, 1, st);
}

int tt_gop_embedding_backward(tt_gops *o, tt_gsite *s, tt_gref dwte, tt_gref dwpe, tt_gref dout, tt_gpu_buf tok,
                              uint32_t bucket_off, uint32_t pos_off, int B, int T, int C, int V, tt_status *st) {
    char pf[64];
    if (dwte.buf != dwpe.buf) return tt_fail(st, TT_EINVAL, "webgpu embedding: dwte and dwpe must share a buffer");
    {
        uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, dwpe.off, dout.off};
        tt_gpu_buf bufs[2] = {dout.buf, dwpe.buf};
        static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(make_site(o, &s[0], "embed_bwd_wpe", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 2, bufs, kinds,
                           stride_wgs((size_t)T * C, WG_ELEM), 1, 1, st));
    }
    uint32_t args[16] = {(uint32_t)V, (uint32_t)C, dwte.off, bucket_off, pos_off, dout.off};
    tt_gpu_buf bufs[3] = {tok, dout.buf, dwte.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return make_site(o, &s[1], "embed_bwd_wte", wg_prefix(WG_ELEM, pf, sizeof pf), args, 0, 3, bufs, kinds,
                     stride_wgs((size_t)V * C, WG_ELEM), 1, 1, st);
}

void tt_gop_embedding_buckets(const uint32_t *tokens, int B, int T, int V, uint32_t *offsets, uint32_t *pos) {
    memset(offsets, 0, (size_t)(V + 1) * sizeof *offsets);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) offsets[tokens[(size_t)b * (T + 1) + t] + 1]++;
    for (int v = 0; v < V; v++) offsets[v + 1] += offsets[v];
    /* stable placement: a running cursor per token (reuses pos order) */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            uint32_t v = tokens[(size_t)b * (T + 1) + t];
            pos[offsets[v]++] = (uint32_t)(b * T + t);
        }
    /* offsets[v] now holds the end of bucket v: shift back */
    for (int v = V; v > 0; v--) offsets[v] = offsets[v - 1];
    offsets[0] = 0;
}

/* ---- loss ---------------------------------------------------------------- */
int tt_gop_crossentropy(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, int rows, int V,
                        int T, tt_status *st) {
    char pf[96];
    if (logits.off || losses.off || tokens.off)
        return tt_fail(st, TT_EINVAL, "webgpu crossentropy: tensors must start their buffers");
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)V, (uint32_t)T};
    tt_gpu_buf bufs[3] = {tokens.buf, logits.buf, losses.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_RW};
    uint32_t x, y;
    grid1(o, (uint64_t)rows, &x, &y);
    return make_site(o, s, RED_NAME(o, "xent"), red_prefix(o, WG_XENT, pf, sizeof pf), args, 1, 3, bufs, kinds, x, y, 1,
                     st);
}

int tt_gop_loss_reduce(tt_gops *o, tt_gsite *s, tt_gref stats, tt_gref losses, tt_status *st) {
    char pf[64];
    if (stats.off || losses.off) return tt_fail(st, TT_EINVAL, "webgpu loss: tensors must start their buffers");
    uint32_t args[16] = {0};
    tt_gpu_buf bufs[2] = {losses.buf, stats.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return make_site(o, s, "loss_reduce", wg_prefix(WG_ELEM, pf, sizeof pf), args, 1, 2, bufs, kinds, 1, 1, 1, st);
}

/* ---- optimizer ----------------------------------------------------------- */
static uint32_t adamw_nparts(size_t n) {
    size_t p = (n + WG_ELEM * 8 - 1) / (WG_ELEM * 8);
    if (p > 1024) p = 1024;
    return (uint32_t)(p ? p : 1);
}

size_t tt_gop_adamw_part_elems(size_t n) { return adamw_nparts(n); }

size_t tt_gop_norm_part_len(size_t n) {
    uint32_t np = adamw_nparts(n);
    return (n + np - 1) / np;
}

int tt_gop_adamw_chunks(tt_gops *o, tt_gsite *s, const tt_gop_pchunk *ch, int n_chunks, tt_gpu_buf desc,
                        uint32_t n_part, tt_gpu_buf part, tt_gpu_buf stats, tt_status *st) {
    char pf[96];
    for (int c = 0; c < n_chunks; c++) {
        if (ch[c].part0 + ch[c].n_part > n_part)
            return tt_fail(st, TT_EINVAL, "webgpu adamw: chunk %d's parts exceed the part table", c);
        uint32_t args[16] = {ch[c].part0};
        tt_gpu_buf bufs[3] = {desc, ch[c].grads, part};
        static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(make_site(o, &s[c], RED_NAME(o, "sumsq"), red_prefix(o, WG_ELEM, pf, sizeof pf), args, 0, 3, bufs,
                           kinds, ch[c].n_part ? ch[c].n_part : 1, 1, 1, st));
        if (!ch[c].n_part) s[c].x = 0; /* nothing to sum: an empty dispatch */
    }
    for (int c = 0; c < n_chunks; c++) {
        uint32_t np = adamw_nparts(ch[c].n);
        uint32_t per = (uint32_t)(((size_t)ch[c].n + np - 1) / np);
        uint32_t args[16] = {ch[c].n, per, n_part, ch[c].base, c == 0 ? 1u : 0u};
        tt_gpu_buf bufs[7] = {part, ch[c].mask, ch[c].params, ch[c].grads, ch[c].m, ch[c].v, stats};
        static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
        TT_CHECK(make_site(o, &s[n_chunks + c], "adamw", wg_prefix(WG_ELEM, pf, sizeof pf), args, 1, 7, bufs, kinds,
                           np, 1, 1, st));
    }
    return TT_OK;
}

int tt_gop_adamw(tt_gops *o, tt_gsite *s, tt_gpu_buf params, tt_gpu_buf grads, tt_gpu_buf m, tt_gpu_buf v,
                 tt_gpu_buf mask, tt_gpu_buf part, tt_gpu_buf stats, size_t n, tt_status *st) {
    TT_CHECK(check_u32(n, "parameter count", st));
    /* one chunk: parts of tt_gop_norm_part_len(n) elements from 0 */
    size_t per = tt_gop_norm_part_len(n);
    uint32_t np = (uint32_t)((n + per - 1) / per);
    uint32_t *d = malloc((size_t)np * 2 * sizeof *d);
    if (!d) return tt_fail(st, TT_ENOMEM, "out of memory (norm parts)");
    for (uint32_t p = 0; p < np; p++) {
        d[2 * p] = (uint32_t)(p * per);
        d[2 * p + 1] = (uint32_t)((p + 1) * per < n ? (p + 1) * per : n);
    }
    tt_gpu_buf db; /* lives as long as the device, as the sites' other objects */
    int rc = tt_gpu_buffer(o->g, (uint64_t)np * 8, TT_GPU_STORAGE, "norm-parts", &db, st);
    if (rc == TT_OK) rc = tt_gpu_write(o->g, db, 0, d, (uint64_t)np * 8, st);
    free(d);
    TT_CHECK(rc);
    tt_gop_pchunk c = {params, grads, m, v, mask, 0, (uint32_t)n, 0, np};
    return tt_gop_adamw_chunks(o, s, &c, 1, db, np, part, stats, st);
}

/* ---- generic synchronous read -------------------------------------------- */
int tt_gpu_read_sync(tt_gpu *g, tt_gpu_buf b, uint64_t offset, uint64_t bytes, void *dst, tt_status *st) {
    tt_gpu_buf rb;
    TT_CHECK(tt_gpu_buffer(g, bytes, TT_GPU_READBACK, "readback", &rb, st));
    int rc = tt_gpu_begin(g, st);
    if (rc == TT_OK) {
        tt_gpu_copy(g, b, offset, rb, 0, (bytes + 3) & ~(uint64_t)3);
        rc = tt_gpu_submit(g, st);
    }
    if (rc == TT_OK) rc = tt_gpu_read_start(g, rb, 0, (bytes + 3) & ~(uint64_t)3, st);
    if (rc == TT_OK) {
        /* bytes may not be a multiple of 4 for the caller; read into place */
        if (bytes & 3) {
            uint8_t *tmp = malloc((size_t)((bytes + 3) & ~(uint64_t)3));
            if (!tmp) rc = tt_fail(st, TT_ENOMEM, "out of memory (readback)");
            else {
                rc = tt_gpu_read_finish(g, rb, tmp, st);
                if (rc == TT_OK) memcpy(dst, tmp, (size_t)bytes);
                free(tmp);
            }
        } else {
            rc = tt_gpu_read_finish(g, rb, dst, st);
        }
    }
    tt_gpu_buffer_free(g, rb);
    return rc;
}
