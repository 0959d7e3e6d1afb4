/* plot.c — loss curve CSV and SVG (plot.h). */
#define _POSIX_C_SOURCE 200809L
#include "plot.h"

#include "fileio.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- growing string ---- */
typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
}

static int write_atomic(const char *path, const char *data, size_t n, tt_status *st) {
    return tt_write_atomic_buf(path, data, n, st);
}

int tt_plot_csv(const char *path, const tt_curve *c, tt_status *st) {
    sbuf b = {0};
    sb_printf(&b, "step,train_loss,val_loss\n");
    int64_t j = 0;
    /* validation entries at step 0 (before training) get their own row */
    while (j < c->n_val && c->val_step[j] <= 0) {
        sb_printf(&b, "0,,%.6g\n", c->val[j]);
        j++;
    }
    for (int64_t i = 0; i < c->n_train; i++) {
        int64_t step = i + 1;
        sb_printf(&b, "%lld,%.6g,", (long long)step, c->train[i]);
        /* the last validation run after this step (one per step at most in practice) */
        float v = NAN;
        while (j < c->n_val && c->val_step[j] <= step) {
            if (c->val_step[j] == step) v = c->val[j];
            j++;
        }
        if (!isnan(v)) sb_printf(&b, "%.6g", v);
        sb_printf(&b, "\n");
    }
    if (b.oom) { free(b.p); return tt_fail(st, TT_ENOMEM, "out of memory (loss CSV)"); }
    int rc = write_atomic(path, b.p, b.n, st);
    free(b.p);
    return rc;
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving ~n ticks over span. */
static double nice_step(double span, int n) {
    if (!(span > 0)) return 1.0;
    double raw = span / n, p = pow(10.0, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

static void fmt_num(char *out, size_t cap, double x, double step) {
    if (fabs(x) < step * 1e-6) x = 0.0;
    if (step >= 1.0 && fabs(x) < 1e15) {
        /* k / M suffixes only when every tick is a whole number of them */
        if (step >= 1e6 && fmod(step, 1e6) == 0) snprintf(out, cap, "%gM", x / 1e6);
        else if (step >= 1e4 && fmod(step, 1e3) == 0) snprintf(out, cap, "%gk", x / 1e3);
        else snprintf(out, cap, "%.0f", x);
    } else {
        int dec = (int)ceil(-log10(step));
        if (dec < 0) dec = 0;
        if (dec > 6) dec = 6;
        snprintf(out, cap, "%.*f", dec, x);
    }
}

static void xml_escape(sbuf *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': sb_printf(b, "&lt;"); break;
        case '>': sb_printf(b, "&gt;"); break;
        case '&': sb_printf(b, "&amp;"); break;
        case '"': sb_printf(b, "&quot;"); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') sb_printf(b, "%c", *s);
        }
    }
}

#define W 800.0
#define H 450.0
#define ML 70.0
#define MR 24.0
#define MT 44.0
#define MB 56.0
#define MAXPTS 1200

char *tt_plot_svg_string(const tt_curve *c) {
    const double base = log(256.0);
    /* x range: 0 .. last step */
    double xmax = (double)c->n_train;
    for (int64_t j = 0; j < c->n_val; j++)
        if ((double)c->val_step[j] > xmax) xmax = (double)c->val_step[j];
    if (xmax < 1) xmax = 1;
    /* y range over finite values, with the baseline; outliers above 2*ln256 clipped */
    double ymin = base, ymax = base;
    for (int64_t i = 0; i < c->n_train; i++)
        if (isfinite(c->train[i])) { ymin = fmin(ymin, c->train[i]); ymax = fmax(ymax, c->train[i]); }
    for (int64_t j = 0; j < c->n_val; j++)
        if (isfinite(c->val[j])) { ymin = fmin(ymin, c->val[j]); ymax = fmax(ymax, c->val[j]); }
    ymax = fmin(ymax, 2.0 * base);
    if (ymin < 0) ymin = 0;
    double pad = (ymax - ymin) * 0.05 + 1e-3;
    ymin = fmax(0.0, ymin - pad);
    ymax += pad;
    double ystep = nice_step(ymax - ymin, 6), xstep = nice_step(xmax, 8);
    ymin = floor(ymin / ystep) * ystep;
    ymax = ceil(ymax / ystep) * ystep;
    if (xstep < 1) xstep = 1;
    xmax = ceil(xmax / xstep) * xstep;

    const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(x) (ML + (x) / xmax * pw)
#define PY(y) (MT + (1.0 - (fmin(fmax((y), ymin), ymax) - ymin) / (ymax - ymin)) * ph)

    sbuf b = {0};
    sb_printf(&b,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
              "font-family=\"sans-serif\" font-size=\"12\">\n"
              "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
              W, H, W, H);
    sb_printf(&b, "<text x=\"%.1f\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">", ML + pw / 2);
    xml_escape(&b, c->title && *c->title ? c->title : "tinytrain loss");
    sb_printf(&b, "</text>\n");
    /* grid + ticks */
    sb_printf(&b, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (double y = ymin; y <= ymax + ystep * 1e-6; y += ystep)
        sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ML, PY(y), ML + pw, PY(y));
    for (double x = 0; x <= xmax + xstep * 1e-6; x += xstep)
        sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PX(x), MT, PX(x), MT + ph);
    sb_printf(&b, "</g>\n<g fill=\"#333\">\n");
    char num[64];
    for (double y = ymin; y <= ymax + ystep * 1e-6; y += ystep) {
        fmt_num(num, sizeof num, y, ystep);
        sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ML - 8, PY(y) + 4, num);
    }
    for (double x = 0; x <= xmax + xstep * 1e-6; x += xstep) {
        fmt_num(num, sizeof num, x, xstep);
        sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", PX(x), MT + ph + 18, num);
    }
    sb_printf(&b,
              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n"
              "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">loss (nats per byte)</text>\n"
              "</g>\n",
              ML + pw / 2, H - 12, MT + ph / 2);
    /* axes */
    sb_printf(&b, "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\" stroke-width=\"1.2\"/>\n", ML, MT,
              MT + ph, ML + pw);
    /* baseline */
    sb_printf(&b,
              "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#999\" stroke-width=\"1\" stroke-dasharray=\"6 4\"/>\n"
              "<text x=\"%.1f\" y=\"%.2f\" fill=\"#777\">uniform bytes, ln 256 = %.3f</text>\n",
              ML, PY(base), ML + pw, PY(base), ML + 40, PY(base) - 5, base);
    /* train line: bucket means when there are many steps; NaN/inf break the line */
    int64_t per = c->n_train > MAXPTS ? (c->n_train + MAXPTS - 1) / MAXPTS : 1;
    sb_printf(&b, "<path fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.4\" stroke-linejoin=\"round\" d=\"");
    int pen = 0;
    for (int64_t i = 0; i < c->n_train; i += per) {
        double sum = 0;
        int64_t k = 0, hi = TT_MIN(c->n_train, i + per);
        int bad = 0;
        for (int64_t q = i; q < hi; q++) {
            if (!isfinite(c->train[q])) bad = 1;
            sum += c->train[q];
            k++;
        }
        if (bad || k == 0) { pen = 0; continue; }
        double x = (double)(i + hi) / 2.0 + 0.5; /* centre of steps i+1 .. hi */
        sb_printf(&b, "%s%.1f %.1f ", pen ? "L" : "M", PX(x), PY(sum / k));
        pen = 1;
    }
    sb_printf(&b, "\"/>\n");
    /* validation line with markers */
    if (c->n_val > 0) {
        sb_printf(&b, "<path fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"2\" d=\"");
        pen = 0;
        for (int64_t j = 0; j < c->n_val; j++) {
            if (!isfinite(c->val[j])) { pen = 0; continue; }
            sb_printf(&b, "%s%.1f %.1f ", pen ? "L" : "M", PX((double)c->val_step[j]), PY(c->val[j]));
            pen = 1;
        }
        sb_printf(&b, "\"/>\n<g fill=\"#ff7f0e\">\n");
        for (int64_t j = 0; j < c->n_val; j++)
            if (isfinite(c->val[j]))
                sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>\n", PX((double)c->val_step[j]), PY(c->val[j]));
        sb_printf(&b, "</g>\n");
    }
    /* legend */
    double lx = ML + pw - 150, ly = MT + 10;
    sb_printf(&b,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"142\" height=\"%d\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n"
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\" stroke-width=\"2\"/>"
              "<text x=\"%.1f\" y=\"%.1f\">train loss</text>\n",
              lx, ly, c->n_val > 0 ? 44 : 24, lx + 8, ly + 13, lx + 32, ly + 13, lx + 38, ly + 17);
    if (c->n_val > 0) {
        float best = INFINITY;
        for (int64_t j = 0; j < c->n_val; j++)
            if (c->val[j] < best) best = c->val[j];
        sb_printf(&b,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ff7f0e\" stroke-width=\"2\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\">val loss (best %.3f)</text>\n",
                  lx + 8, ly + 33, lx + 32, ly + 33, lx + 38, ly + 37, best);
    }
    sb_printf(&b, "</svg>\n");
#undef PX
#undef PY
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}

int tt_plot_svg(const char *path, const tt_curve *c, tt_status *st) {
    char *s = tt_plot_svg_string(c);
    if (!s) return tt_fail(st, TT_ENOMEM, "out of memory (loss plot)");
    int rc = write_atomic(path, s, strlen(s), st);
    free(s);
    return rc;
}
