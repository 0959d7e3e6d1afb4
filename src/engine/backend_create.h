/* backend_create.h — making a backend of a kind named at run time (the CLI's
 * --backend, the web app's choice): the one constructor over the per-kind
 * constructors of backend.h, and the probe model front-ends ask a kind with
 * about its device. Above both backends (src/cpu, src/webgpu). */
#ifndef TT_BACKEND_CREATE_H
#define TT_BACKEND_CREATE_H

#include <stddef.h>

#include "backend.h"

/* The one constructor: kind "cpu", "webgpu" or "auto" (WebGPU on a hardware
 * adapter, else the CPU; *notice, if non-NULL, gets why the CPU was chosen,
 * "" otherwise). Returns TT_EINVAL for an unknown kind, TT_EUNSUP with the
 * reason when "webgpu" is asked for and unavailable. */
int tt_backend_create(const char *kind, const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out,
                      char *notice, size_t notice_cap, tt_status *st);

/* The smallest model (one layer, d_model 32, ctx 16): what front-ends
 * create to ask a kind about its device (`tinytrain info`, the web app's
 * memory estimate) before choosing a real model. */
extern const tt_model_config tt_probe_config;

/* Rewrites st's message after a failed tt_backend_create(kind, ...) as the
 * one line front-ends print: "webgpu backend unavailable: REASON" or
 * "KIND backend: REASON". */
void tt_backend_fail_line(const char *kind, tt_status *st);

#endif
