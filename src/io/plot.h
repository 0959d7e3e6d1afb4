/* plot.h — the loss curve of a run as CSV (step,train_loss,val_loss) and as a
 * self-contained SVG line plot (axes, ticks, train and validation lines, the
 * ln(256) baseline of a uniform byte model). Both files are written
 * atomically (temp file + rename). */
#ifndef TT_PLOT_H
#define TT_PLOT_H

#include "tt.h"

typedef struct {
    const float *train;      /* train[i] = loss of step i+1 */
    int64_t n_train;
    const int64_t *val_step; /* validation after step val_step[j] */
    const float *val;
    int64_t n_val;
    const char *title;       /* may be NULL */
} tt_curve;

/* One row per step: "step,train_loss,val_loss" (val_loss empty when no
 * validation ran after that step); header line first. */
int tt_plot_csv(const char *path, const tt_curve *c, tt_status *st);
/* The SVG document as a malloc'd NUL-terminated string (NULL on OOM). */
char *tt_plot_svg_string(const tt_curve *c);
int tt_plot_svg(const char *path, const tt_curve *c, tt_status *st);

#endif
