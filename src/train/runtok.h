/* runtok.h — a run's tokenizer (tok/tokenizer.h): where it comes from and
 * where its files live, so the tokenizer travels with the model.
 *
 * The design: the tokenizer is part of the model. A checkpoint records its
 * kind and content hash (checkpoint.h: "tokenizer", "tokenizer_hash"; absent
 * for byte); its files — the ones it was given: tokenizer.json and/or
 * vocab.json + merges.txt — are copied, each written atomically, into the run
 * folder beside checkpoint.safetensors before training starts. Whoever reads
 * a checkpoint (resume, init-from, sample, eval, export) loads the tokenizer
 * from the checkpoint's folder and checks its hash against the checkpoint's:
 * missing or different files are one clear line, never a silent fallback to
 * bytes. The byte tokenizer has no files. A Hugging Face folder's tokenizer
 * is its own tokenizer files, for a model whose vocabulary is not 256 (a
 * model of 256 ids is byte-level: our exports hold a byte-level
 * tokenizer.json); a folder without any is fed bytes (ids 0..255). */
#ifndef TT_RUNTOK_H
#define TT_RUNTOK_H

#include "tok/tokenizer.h"
#include "train.h"

#define TT_RUNTOK_FILES 3 /* tokenizer.json, vocab.json, merges.txt */

typedef struct {
    tt_tokenizer *tok;                    /* byte or BPE */
    char files[TT_RUNTOK_FILES][4200];    /* the files it came with ("": none) */
    char dir[4200];                       /* the folder they are in ("" for byte or a lone tokenizer.json) */
} tt_runtok;

/* The names of the files in a folder, in the order of tt_runtok.files. */
extern const char *const tt_runtok_names[TT_RUNTOK_FILES];

/* "byte"; a folder holding tokenizer.json and/or vocab.json + merges.txt; or
 * a tokenizer.json file (kept as tokenizer.json). */
int tt_runtok_load(const char *spec, tt_runtok *rt, tt_status *st);
/* A folder's tokenizer files, if any: *found = 0 (and rt byte) when it has
 * none. */
int tt_runtok_load_dir(const char *dir, int *found, tt_runtok *rt, tt_status *st);
/* Copies rt's files into dir (each atomically; nothing for byte), and
 * removes the other tokenizer file names there, so dir holds exactly rt's
 * files. A no-op when they are already dir's own. */
int tt_runtok_save(const tt_runtok *rt, const char *dir, tt_status *st);
/* The tokenizer of a model read from path (a checkpoint, a run folder or a
 * Hugging Face folder) into s: s's kind and hash, read from the files beside
 * the checkpoint (a Hugging Face folder: its own files, vocabulary checked
 * against s's model). */
int tt_runtok_for_state(const char *path, const tt_train_state *s, tt_runtok *rt, tt_status *st);
void tt_runtok_free(tt_runtok *rt);
/* s's tokenizer fields from rt */
void tt_runtok_mark(const tt_runtok *rt, tt_train_state *s);

#endif
