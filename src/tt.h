/* tt.h — common definitions for every tinytrain module: status values,
 * error reporting, small helpers. Errors are values: a function that can fail
 * returns an int status (TT_OK = 0) and fills a tt_status with a one-line
 * message. User input never reaches abort() or assert(). */
#ifndef TT_H
#define TT_H

#include <stddef.h>
#include <stdint.h>

#define TT_VERSION "0.1.0"

enum {
    TT_OK = 0,
    TT_EINVAL = 1,   /* bad argument / bad user input */
    TT_EIO = 2,      /* file system error */
    TT_ENOMEM = 3,   /* allocation failed */
    TT_EFORMAT = 4,  /* malformed file */
    TT_EUNSUP = 5,   /* feature / backend not available */
    TT_EDEVICE = 6,  /* GPU device error */
    TT_EMISMATCH = 7, /* config mismatch (e.g. on resume) */
    TT_EBUSY = 8      /* a resource held by another process (a locked output folder) */
};

typedef struct {
    int code;
    char msg[512];
} tt_status;

/* Set st (if non-NULL) to code + printf-style message (one line: control
 * characters become '?'); returns code. */
int tt_fail(tt_status *st, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void tt_status_clear(tt_status *st);

/* Aligned allocation (64-byte) that reports failure via status. Free with tt_free. */
void *tt_alloc(size_t bytes, tt_status *st);
void *tt_calloc(size_t bytes, tt_status *st);
void tt_free(void *p);

/* Monotonic wall-clock seconds. */
double tt_now(void);

/* The CPU's model name ("model name", "Model" or "Hardware" of
 * /proc/cpuinfo; also under Node's raw file system), "" if unknown. For the
 * machine line of benchmark records. */
void tt_cpu_model_name(char *out, size_t cap);

#define TT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TT_CHECK(expr)              \
    do {                            \
        int tt_rc_ = (expr);        \
        if (tt_rc_) return tt_rc_;  \
    } while (0)

#endif
