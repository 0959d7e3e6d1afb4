/* tt.c — status helpers, aligned allocation, clock. */
#define _POSIX_C_SOURCE 200809L
#include "tt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int tt_fail(tt_status *st, int code, const char *fmt, ...) {
    if (st) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->msg, sizeof st->msg, fmt, ap);
        va_end(ap);
        /* one line whatever a file's names hold: control characters as '?' */
        for (char *p = st->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        st->code = code;
    }
    return code;
}

void tt_status_clear(tt_status *st) {
    if (st) {
        st->code = TT_OK;
        st->msg[0] = 0;
    }
}

void *tt_alloc(size_t bytes, tt_status *st) {
    void *p = NULL;
    size_t n = (bytes + 63) & ~(size_t)63;
    if (n == 0) n = 64;
    if (n < bytes || posix_memalign(&p, 64, n) != 0 || !p) {
        tt_fail(st, TT_ENOMEM, "out of memory allocating %.1f MiB", bytes / 1048576.0);
        return NULL;
    }
    return p;
}

void *tt_calloc(size_t bytes, tt_status *st) {
    void *p = tt_alloc(bytes, st);
    if (p) memset(p, 0, bytes);
    return p;
}

void tt_free(void *p) { free(p); }

double tt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* strip leading/trailing blanks in place */
static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

void tt_cpu_model_name(char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = 0;
        char *key = trim(line), *val = trim(colon + 1);
        if (strcmp(key, "model name") == 0 || strcmp(key, "Model") == 0 || strcmp(key, "Hardware") == 0) {
            snprintf(out, cap, "%s", val);
            break;
        }
    }
    fclose(f);
}
