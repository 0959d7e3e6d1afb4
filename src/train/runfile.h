/* runfile.h — run files: a run's options kept in one JSON object, shared by
 * `tinytrain train --config FILE` / `--print-config` and the web app's
 * "Load run file…" / "Save run file" (web_api.c).
 *
 * A run file is a JSON object whose keys are option-table names (options.h;
 * the aliases older builds wrote are read too) with values of the option's
 * type: numbers for numeric options (integers for integer options; true and
 * false also for 0/1 options), strings for choices and text ("schedule":
 * "cosine", "preset": "tiny"). One more key, "data", names the corpus: a
 * path resolved against the run file's folder. Every option not given keeps
 * its default; options given on the command line win over the file.
 *
 * Errors are one line naming the file and the key: not JSON, not an object,
 * an unknown key (with the closest name), a value of the wrong type, a value
 * outside the table's range, a key given twice (also as name and alias). */
#ifndef TT_RUNFILE_H
#define TT_RUNFILE_H

#include "io/json.h"
#include "options.h"

#define TT_RUNFILE_MAX_BYTES (1u << 20)

/* Applies run file text (len bytes) onto *o, as tt_options_set would each
 * key. name: what messages call the file (its path). dir: the folder a
 * relative "data" or "tokenizer" path is resolved against (NULL or "": as
 * written). data:
 * receives the resolved "data" path ("" when the file has none); may be NULL,
 * and then a "data" key is an error. */
int tt_runfile_apply(tt_options *o, const char *text, size_t len, const char *name, const char *dir, char *data,
                     size_t data_cap, tt_status *st);
/* Reads the run file at path (a regular file of at most TT_RUNFILE_MAX_BYTES)
 * and applies it (dir: the file's folder). */
int tt_runfile_load(tt_options *o, const char *path, char *data, size_t data_cap, tt_status *st);
/* The options given in *o as the web's space-separated name=value text
 * (tt_options_parse reads it back), preset first. */
void tt_runfile_given_text(const tt_options *o, tt_jw *w);
/* The resolved options as a run file, one key per line in table order: every
 * model, train and run option (not the preset: the model options say it all),
 * then "data" when non-NULL. Applying the output gives the same configs. */
void tt_runfile_write(tt_jw *w, const tt_model_config *cfg, const tt_train_config *tc, const tt_run_config *run,
                      const char *data);
/* The same with the run's tokenizer (a path; NULL or "byte": left out, the default) before "data". */
void tt_runfile_write_tok(tt_jw *w, const tt_model_config *cfg, const tt_train_config *tc, const tt_run_config *run,
                          const char *tokenizer, const char *data);

#endif
