/* tt_test.c — the test harness (see tt_test.h). */
#define _GNU_SOURCE
#include <stdint.h>
#include "tt_test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rng.h"

int tt_test_failed_checks = 0;
int tt_test_passed = 0, tt_test_failed = 0;

void tt_test_run(const char *name, void (*fn)(void)) {
    int before = tt_test_failed_checks;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    fn();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    if (tt_test_failed_checks == before) {
        tt_test_passed++;
        printf("ok   %-40s %.2fs\n", name, s);
    } else {
        tt_test_failed++;
        printf("FAIL %-40s %.2fs\n", name, s);
    }
    fflush(stdout);
}

int tt_test_summary(void) {
    printf("%d passed, %d failed\n", tt_test_passed, tt_test_failed);
    return tt_test_failed ? 1 : 0;
}

void tt_test_fill(float *x, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * tt_rand_uniform(seed, TT_STREAM_TEST, i);
}

void tt_test_poison(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

double tt_test_max_rel_err(const float *a, const double *b, size_t n) {
    double maxb = 1e-30, maxd = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(b[i]) > maxb) maxb = fabs(b[i]);
        double d = fabs((double)a[i] - b[i]);
        if (isnan(d) || isinf(d)) return INFINITY; /* NaN / inf never pass */
        if (d > maxd) maxd = d;
    }
    return maxd / maxb;
}

const char *tt_test_src_path(const char *rel) {
    static char buf[4096];
    const char *root = getenv("TT_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root && *root ? root : ".", rel);
    return buf;
}

const char *tt_test_tmpdir(void) {
    static char buf[4096];
    const char *t = getenv("TMPDIR");
    snprintf(buf, sizeof buf, "%s/tinytrain-test-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(buf)) return "/tmp";
    return buf;
}
