/* config.h — model configuration, presets and the parameter layout.
 *
 * All parameters live in ONE contiguous float buffer, in this documented order
 * (matrices stored [in, out], the layout of Hugging Face GPT-2's Conv1D):
 *
 *   wte  (V, C)          token embedding, also the tied output head
 *   wpe  (ctx, C)        learned absolute position embedding
 *   for each layer l = 0 .. L-1:
 *     ln1.w (C)  ln1.b (C)
 *     q.w (C, C)  q.b (C)   k.w (C, C)  k.b (C)   v.w (C, C)  v.b (C)
 *     o.w (C, C)  o.b (C)
 *     ln2.w (C)  ln2.b (C)
 *     fc.w (C, 4C)  fc.b (4C)
 *     proj.w (4C, C)  proj.b (C)
 *   lnf.w (C)  lnf.b (C)
 *
 * No padding between tensors: the element count of the buffer is the honest
 * parameter count. Weight decay applies to matrices and embeddings (2-D
 * tensors) only. */
#ifndef TT_CONFIG_H
#define TT_CONFIG_H

#include "tt.h"

#define TT_VOCAB 256

typedef struct {
    int n_layer;
    int d_model;
    int n_head;
    int ctx;    /* maximum sequence length (T) */
    int batch;  /* sequences per micro-batch (B) */
    int vocab;  /* always TT_VOCAB for now */
} tt_model_config;

typedef struct {
    const char *name;
    tt_model_config cfg;
    int64_t n_params; /* exact count, asserted by tests */
} tt_preset;

extern const tt_preset tt_presets[];
extern const int tt_n_presets;

/* NULL if unknown. */
const tt_preset *tt_preset_find(const char *name);
/* Checks ranges (positive sizes, d_model % n_head == 0, ...). */
int tt_config_validate(const tt_model_config *c, tt_status *st);
int64_t tt_config_param_count(const tt_model_config *c);

/* Tensor kinds in layout order; the 16 per-layer kinds are contiguous. */
typedef enum {
    TT_WTE = 0,
    TT_WPE,
    TT_LN1W, TT_LN1B,
    TT_QW, TT_QB, TT_KW, TT_KB, TT_VALW, TT_VALB, TT_OW, TT_OB,
    TT_LN2W, TT_LN2B,
    TT_FCW, TT_FCB, TT_PROJW, TT_PROJB,
    TT_LNFW, TT_LNFB,
    TT_N_KINDS
} tt_tensor_kind;
#define TT_PER_LAYER 16 /* TT_LN1W .. TT_PROJB */

typedef struct {
    char name[48];     /* e.g. "h.3.attn.q.weight" (tinytrain's own names) */
    tt_tensor_kind kind;
    int layer;         /* -1 for non-layer tensors */
    int ndim;          /* 1 or 2 */
    int64_t shape[2];  /* shape[1] = 0 for 1-D */
    size_t offset;     /* element offset into the parameter buffer */
    size_t numel;
    int decay;         /* 1: AdamW weight decay applies */
} tt_tensor_info;

typedef struct {
    int n_tensors;
    tt_tensor_info *t; /* malloc'd, n_tensors entries, in buffer order */
    size_t total;      /* total elements */
} tt_layout;

int tt_layout_build(const tt_model_config *c, tt_layout *lo, tt_status *st);
void tt_layout_free(tt_layout *lo);
/* Index into lo->t of (kind, layer); layer ignored for non-layer kinds. */
int tt_layout_index(const tt_model_config *c, tt_tensor_kind kind, int layer);
/* Element offset of (kind, layer). */
size_t tt_layout_offset(const tt_layout *lo, const tt_model_config *c, tt_tensor_kind kind, int layer);

/* Bytes of host memory a CPU training run needs (params, grads, moments,
 * activations, scratch) — the estimate `tinytrain info` prints. */
double tt_config_train_bytes(const tt_model_config *c);
/* FLOPs of one training step (forward + backward) on B*T tokens, the count
 * used for GFLOP/s: 6 * matmul params * tokens + attention 12*L*B*T*T*C/2
 * (causal half) — see docs/BENCHMARKS.md. */
double tt_config_step_flops(const tt_model_config *c);

#endif
