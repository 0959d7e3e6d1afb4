/* profile.h — the per-kernel profile of one training step, the same for
 * every front-end (`tinytrain profile`, the web API's tt_web_profile, which
 * the browser engine's --profile prints): the WebGPU backend's
 * "webgpu.profile" extra (webgpu_profile.h) asked for, its rows sorted by
 * time, and the one JSON form (schema tinytrain.profile/1). Above the
 * backends. */
#ifndef TT_PROFILE_H
#define TT_PROFILE_H

#include "backend.h"
#include "io/json.h"
#include "webgpu/webgpu_profile.h"

#define TT_PROFILE_MAX 256 /* most rows (kernels, or kernels x shapes) */

/* Times every dispatch site of be's step (webgpu_profile.h: each site run
 * reps times back to back, summed per kernel, per kernel and shape when
 * detail != 0) into rows[0..*n), slowest first. be must be a WebGPU
 * backend with its state set; its activations, gradients, parameters and
 * moments are clobbered (a throwaway backend, or the run ends after).
 * TT_EUNSUP for another backend. */
int tt_profile(tt_backend *be, int reps, int detail, tt_webgpu_prof *rows, int *n, tt_status *st);

/* The profile as text, one row per kernel (or kernel x shape): a title
 * line, the column heads, the rows (ms per step, share of the sum, GFLOP/s
 * where the kernel counts its work) and the sum of the sites. What
 * `tinytrain profile` prints and the JSON's "table". */
void tt_profile_table(tt_jw *j, const char *preset, const char *device, int precision, int reps,
                      const tt_webgpu_prof *rows, int n);

/* {"schema":"tinytrain.profile/1","preset","device","precision","reps",
 *  "sum_ms","kernels":[{"kernel","detail","sites","ms","gflop"}...],"table"}
 * (table: tt_profile_table's text, for front-ends that print it) */
void tt_profile_json(tt_jw *j, const char *preset, const char *device, int precision, int reps,
                     const tt_webgpu_prof *rows, int n);

#endif
