/* ckpt_test.h — checkpoint files the checkpoint tests write by hand
 * (tests/cpu/test_lora.c, tests/train/test_train.c): a LoRA checkpoint in
 * the form older builds wrote, and the tensor names a file holds. */
#ifndef TT_CKPT_TEST_H
#define TT_CKPT_TEST_H

#include <stdint.h>

/* Rewrites the LoRA checkpoint `from` (this build's form: moments for the
 * adapters alone) at `to` in the older form: adam_m./adam_v. for every tensor
 * of the layout, each group in layout order, the frozen base's moments all
 * base_moment (older builds wrote 0), the rest and the metadata as in `from`.
 * Returns 0, or non-zero with a line on stderr. */
int tt_test_write_old_lora_checkpoint(const char *from, const char *to, float base_moment);
/* The number of tensors of the .safetensors file at path whose name starts
 * with prefix and contains `contains` (NULL: anything), -1 if it cannot be
 * read. */
int tt_test_count_tensors(const char *path, const char *prefix, const char *contains);

#endif
