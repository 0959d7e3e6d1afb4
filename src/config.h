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
 *   LoRA adapters, only when lora_rank R > 0: for each layer l, for each
 *   target t in TT_LORA_ORDER that lora_targets selects:
 *     lora_a (in_t, R)  lora_b (R, out_t)
 *   with (in, out) = (C, 3C) for c_attn (q|k|v side by side: columns
 *   [0,C) add to q, [C,2C) to k, [2C,3C) to v), (C, C) for attn.c_proj,
 *   (C, 4C) for mlp.c_fc, (4C, C) for mlp.c_proj.
 *   A LoRA model computes  out = x W + b + (alpha / R) * (x A) B  for each
 *   targeted projection; its base tensors are frozen (trainable = 0: no
 *   gradient, no AdamW update, not in the gradient norm) and only the
 *   adapters train (no weight decay). lora_a is drawn N(0, 1/sqrt(in)) from
 *   the init stream of its tensor index, lora_b starts at zero.
 *
 * No padding between tensors: the element count of the buffer is the honest
 * parameter count. Weight decay applies to matrices and embeddings (2-D
 * tensors) only. */
#ifndef TT_CONFIG_H
#define TT_CONFIG_H

#include "tt.h"

#define TT_VOCAB 256 /* the byte-level vocabulary (tinytrain's own models) */

/* A token id as it travels from the data to the backends: any vocabulary
 * up to TT_TOK_MAX_VOCAB (a model's and a tokenizer's limit). */
typedef uint32_t tt_token;
#define TT_TOK_MAX_VOCAB (1 << 24)

/* The MLP's GELU: the exact erf form (tinytrain's own models, PyTorch's
 * "gelu") or the tanh approximation (GPT-2's "gelu_new"). */
typedef enum { TT_ACT_GELU = 0, TT_ACT_GELU_TANH = 1 } tt_act;
/* LayerNorm epsilon when the config's ln_eps is 0 (tinytrain's and GPT-2's). */
#define TT_LN_EPS_DEFAULT 1e-5f

typedef struct {
    int n_layer;
    int d_model;
    int n_head;
    int ctx;    /* maximum sequence length (T) */
    int batch;  /* sequences per micro-batch (B) */
    int vocab;  /* token ids 0..vocab-1, 1..TT_TOK_MAX_VOCAB (TT_VOCAB: byte-level) */
    /* LoRA (0 rank: off). Targets are named as GPT-2's modules (peft's
     * target_modules): bit TT_LORA_* of lora_targets. */
    int lora_rank;
    int lora_targets;
    float lora_alpha;
    /* The architecture's variants (zero: tinytrain's own models). */
    int act;      /* tt_act */
    float ln_eps; /* LayerNorm epsilon; 0 means TT_LN_EPS_DEFAULT (tt_config_ln_eps) */
} tt_model_config;

/* The LayerNorm epsilon model c uses. */
static inline float tt_config_ln_eps(const tt_model_config *c) { return c->ln_eps > 0.0f ? c->ln_eps : TT_LN_EPS_DEFAULT; }
/* "gelu" | "gelu_new" (the names of Hugging Face's activation_function). */
const char *tt_act_name(int act);

enum {
    TT_LORA_C_ATTN = 0,      /* the q, k, v projections as one (C -> 3C) */
    TT_LORA_ATTN_C_PROJ = 1, /* attention output projection (C -> C) */
    TT_LORA_C_FC = 2,        /* MLP up projection (C -> 4C) */
    TT_LORA_MLP_C_PROJ = 3,  /* MLP down projection (4C -> C) */
    TT_LORA_N_TARGETS = 4
};
#define TT_LORA_ALL 0xF

typedef struct {
    const char *name;
    tt_model_config cfg;
    int64_t n_params; /* exact count, asserted by tests */
} tt_preset;

extern const tt_preset tt_presets[];
extern const int tt_n_presets;

/* NULL if unknown. */
const tt_preset *tt_preset_find(const char *name);
/* The name of the preset whose shape and batch c has (LoRA aside), or NULL. */
const char *tt_preset_of(const tt_model_config *c);
/* Checks ranges (positive sizes, d_model % n_head == 0, ...). */
int tt_config_validate(const tt_model_config *c, tt_status *st);
/* Dropout probability p for model c: p in [0, 1), and for p > 0 every
 * element index of a mask fits 32 bits (rng.h): batch*heads*ctx*ctx and
 * batch*ctx*d_model at most 2^32. */
int tt_dropout_check(const tt_model_config *c, float p, tt_status *st);
/* Every element of the parameter buffer: the base model plus LoRA adapters. */
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
    TT_LORA_A, TT_LORA_B, /* adapters; tt_tensor_info.lora_target says whose */
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
    int trainable;     /* 0: frozen (the base of a LoRA model): no gradient, no update */
    int lora_target;   /* TT_LORA_* for TT_LORA_A / TT_LORA_B, -1 otherwise */
} tt_tensor_info;

typedef struct {
    int n_tensors;
    tt_tensor_info *t; /* malloc'd, n_tensors entries, in buffer order */
    size_t total;      /* total elements */
    int n_base;        /* tensors [0, n_base) are the base model, the rest adapters */
    size_t base_total; /* elements of the base model (offset of the first adapter) */
} tt_layout;

int tt_layout_build(const tt_model_config *c, tt_layout *lo, tt_status *st);
void tt_layout_free(tt_layout *lo);
/* The trainable elements of the layout are [tt_layout_train0(lo), total):
 * a LoRA model's adapters (its base is frozen), otherwise the whole layout.
 * Gradients and AdamW moments exist only for them (a training state's m and
 * v, a backend's set_state/get_state, a checkpoint's adam_m./adam_v.). */
size_t tt_layout_train0(const tt_layout *lo);
/* Elements of the trainable range: total - tt_layout_train0(lo). */
size_t tt_layout_train_count(const tt_layout *lo);
/* Index into lo->t of (kind, layer); layer ignored for non-layer kinds. */
int tt_layout_index(const tt_model_config *c, tt_tensor_kind kind, int layer);
/* Element offset of (kind, layer). */
size_t tt_layout_offset(const tt_layout *lo, const tt_model_config *c, tt_tensor_kind kind, int layer);
/* Index into lo->t of the adapter (which = TT_LORA_A or TT_LORA_B) of target
 * t in layer l, -1 if the model has none there. */
int tt_layout_lora_index(const tt_model_config *c, int layer, int target, tt_tensor_kind which);
/* In and out width of LoRA target t (TT_LORA_*). */
void tt_lora_dims(const tt_model_config *c, int target, int64_t *in, int64_t *out);
/* GPT-2 module name of target t: "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj". */
const char *tt_lora_target_name(int target);
/* alpha / rank (0 without LoRA) */
float tt_lora_scale(const tt_model_config *c);
/* Elements of the adapters alone (0 without LoRA). */
int64_t tt_config_lora_count(const tt_model_config *c);
/* Elements that train (that have AdamW moments): the adapters of a LoRA
 * model, every parameter otherwise (tt_layout_train_count of its layout). */
int64_t tt_config_train_count(const tt_model_config *c);

/* Bytes of host memory a CPU training run needs (params, grads, moments,
 * activations, scratch) — the estimate `tinytrain info` prints. */
double tt_config_train_bytes(const tt_model_config *c);
/* FLOPs of one training step (forward + backward) on B*T tokens, the count
 * used for GFLOP/s: 6 * matmul params * tokens + attention 12*L*B*T*T*C/2
 * (causal half) — see docs/BENCHMARKS.md. */
double tt_config_step_flops(const tt_model_config *c);

#endif
