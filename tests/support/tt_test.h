/* tt_test.h — the tiny test harness every tests/test_*.c uses.
 *   TT_TEST(name) { ... CHECK(cond); CHECK_CLOSE(a, b, rtol, atol); ... }
 *   int main(void) { RUN(name); ...; return tt_test_summary(); }
 * A failed CHECK prints file:line and the expression and marks the test
 * failed (the test function continues). tt_test_summary prints
 * "N passed, N failed" and returns non-zero if anything failed. */
#ifndef TT_TEST_H
#define TT_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern int tt_test_failed_checks;
extern int tt_test_passed, tt_test_failed;

#define TT_TEST(name) static void name(void)
#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            tt_test_failed_checks++;                                                \
        }                                                                           \
    } while (0)
#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            tt_test_failed_checks++;                                                 \
        }                                                                            \
    } while (0)
/* |a-b| <= atol + rtol*|b| */
#define CHECK_CLOSE(a, b, rtol, atol)                                                                 \
    do {                                                                                              \
        double a_ = (double)(a), b_ = (double)(b);                                                    \
        if (!(fabs(a_ - b_) <= (atol) + (rtol) * fabs(b_))) {                                         \
            fprintf(stderr, "%s:%d: CHECK_CLOSE failed: %s=%.9g vs %s=%.9g\n", __FILE__, __LINE__, #a, \
                    a_, #b, b_);                                                                      \
            tt_test_failed_checks++;                                                                  \
        }                                                                                             \
    } while (0)
#define RUN(name) tt_test_run(#name, name)

void tt_test_run(const char *name, void (*fn)(void));
int tt_test_summary(void);

/* Fill with random values in [lo, hi) from a fixed seed (never zeros). */
void tt_test_fill(float *x, size_t n, uint64_t seed, float lo, float hi);
/* Poison a buffer with NaNs before a kernel writes it. */
void tt_test_poison(float *x, size_t n);
/* Max relative error max|a-b| / max(max|b|, tiny) (a float vs b double). */
double tt_test_max_rel_err(const float *a, const double *b, size_t n);
/* Path to a file in the source tree (TT_SOURCE_DIR env or "."). Static buffer. */
const char *tt_test_src_path(const char *rel);
/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp). Static buffer. */
const char *tt_test_tmpdir(void);

#endif
