/* wgsl_compose.c — writes the f16 tier's subgroup-matrix kernels (attention, matmul)
 * as the device gets them (gpu_ops.h tt_gops_kernel_text under attention.c's
 * prefixes, tt_gop_attention_sgmat_prefix) for an adapter with 16 x 16 x 16
 * f16 subgroup matrices, subgroups of 32 and 48 KiB of workgroup memory (an
 * NVIDIA GPU under Dawn): head sizes 16 to 128 where the plan fits, dk/dv
 * with and without KV1, one file each, DIR/<kernel>_hs<N>[_kv1].wgsl, and
 * each in its dropout variant at head size 64, DIR/<kernel>_hs64_drop.wgsl; and
 * matmul_sgmat (matmul.c's prefix, tt_gop_matmul_sgmat_prefix) for each
 * transpose of op(A), op(B), DIR/matmul_sgmat_<nn|tn|nt|tt>.wgsl. For
 * tests/webgpu/test_webgpu_sgmat_compile.sh, which compiles them on lavapipe
 * with the matrix builtins stubbed. Prints the number of files; exit 1 with
 * one line on an error. Usage: wgsl_compose DIR (the test hook
 * TT_WEBGPU_WGSL_DIR: the kernel files from there instead of the embedded). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gpu_ops.h"

/* kernel `name` under prefix pf, whole, into path: 0, or 1 with one line */
static int write_kernel(const char *name, const char *pf, const char *path) {
    char *src;
    tt_status st;
    tt_status_clear(&st);
    if (tt_gops_kernel_text(name, pf, 1, &src, &st)) {
        fprintf(stderr, "wgsl_compose: %s\n", st.msg);
        return 1;
    }
    FILE *f = fopen(path, "wb");
    int ok = f && fputs(src, f) >= 0;
    if (f && fclose(f)) ok = 0;
    free(src);
    if (!ok) fprintf(stderr, "wgsl_compose: cannot write %s\n", path);
    return !ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: wgsl_compose DIR\n");
        return 2;
    }
    tt_gpu_info nv;
    memset(&nv, 0, sizeof nv);
    nv.max_wg_storage = 49152;
    nv.max_invocations = 1024;
    nv.sgmat_m = nv.sgmat_n = nv.sgmat_k = 16;
    nv.subgroup_min = nv.subgroup_max = 32;
    static const int hss[] = {16, 32, 48, 64, 128};
    int n = 0;
    for (int which = 0; which < 3; which++)
        for (size_t h = 0; h < sizeof hss / sizeof *hss; h++) {
            char base[640], pf[704];
            if (!tt_gop_attention_sgmat_prefix(which, hss[h], &nv, base, sizeof base)) continue;
            for (int kv1 = 0; kv1 <= (which == 2); kv1++) {
                snprintf(pf, sizeof pf, "%s%s", base,
                         which != 2 ? "" : kv1 ? "const KV1: bool = true;\n" : "const KV1: bool = false;\n");
                const char *name = tt_gop_attention_sgmat_name(which);
                char path[1024];
                snprintf(path, sizeof path, "%s/%s_hs%d%s.wgsl", argv[1], name, hss[h], kv1 ? "_kv1" : "");
                if (write_kernel(name, pf, path)) return 1;
                n++;
            }
        }
    /* the dropout variants at head size 64 (the keys buffer after the
     * kernel's bindings, as attention.c's sites bind it) */
    for (int which = 0; which < 3; which++) {
        char base[640], pf[768], path[1024];
        if (!tt_gop_attention_sgmat_prefix(which, 64, &nv, base, sizeof base)) {
            fprintf(stderr, "wgsl_compose: the attention kernels at head size 64 do not fit the adapter\n");
            return 1;
        }
        if (which == 2) strncat(base, "const KV1: bool = false;\n", sizeof base - strlen(base) - 1);
        tt_gops_drop_prefix((uint32_t)tt_gop_attention_sgmat_buffers(which) + 1, base, pf, sizeof pf);
        const char *name = tt_gop_attention_sgmat_name(which);
        snprintf(path, sizeof path, "%s/%s_hs64_drop.wgsl", argv[1], name);
        if (write_kernel(name, pf, path)) return 1;
        n++;
    }
    /* the subgroup-matrix matmul, each transpose of op(A), op(B) */
    for (int t = 0; t < 4; t++) {
        char pf[768], path[1024];
        if (!tt_gop_matmul_sgmat_prefix(&nv, t & 1, t >> 1, pf, sizeof pf)) {
            fprintf(stderr, "wgsl_compose: matmul_sgmat does not fit the adapter\n");
            return 1;
        }
        snprintf(path, sizeof path, "%s/matmul_sgmat_%s%s.wgsl", argv[1], t & 1 ? "t" : "n", t >> 1 ? "t" : "n");
        if (write_kernel("matmul_sgmat", pf, path)) return 1;
        n++;
    }
    printf("%d kernels\n", n);
    return 0;
}
