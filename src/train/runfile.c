/* runfile.c — run files (runfile.h): reading a JSON object of options onto a
 * tt_options through the option table, and writing resolved configs back as
 * one. */
#include "runfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "io/fileio.h"

#define MAX_NODES 4096

static const char *json_type_name(tt_json_type t) {
    switch (t) {
    case TT_JNULL: return "null";
    case TT_JFALSE:
    case TT_JTRUE: return "a boolean";
    case TT_JNUMBER: return "a number";
    case TT_JSTRING: return "a string";
    case TT_JARRAY: return "an array";
    case TT_JOBJECT: return "an object";
    }
    return "?";
}

/* Edit distance of a and b (both short names), capped at 99. */
static int distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int row[64];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int sub = diag + (a[i - 1] != b[j - 1]);
            int best = TT_MIN(up + 1, row[j - 1] + 1);
            row[j] = TT_MIN(best, sub);
            diag = up;
        }
    }
    return row[lb];
}

/* Edit distance, one less for names that start alike (lrate -> lr). */
static int closeness(const char *key, const char *name) {
    return distance(key, name) - (strncmp(key, name, 2) == 0);
}

/* " (did you mean 'lr'?)" for the closest key within a few edits, else "" */
static void suggest(const char *key, char *buf, size_t cap) {
    const char *best = "data";
    int bd = closeness(key, best);
    for (int i = 0; i < tt_option_count(); i++) {
        int d = closeness(key, tt_option_at(i)->name);
        if (d < bd) bd = d, best = tt_option_at(i)->name;
    }
    int room = TT_MAX(2, ((int)strlen(key) + 1) / 2);
    if (bd <= room) snprintf(buf, cap, " (did you mean '%s'?)", best);
    else snprintf(buf, cap, " (see tinytrain train --help)");
}

static int is_int_type(tt_opt_type t) { return t == TT_OPT_INT || t == TT_OPT_I64 || t == TT_OPT_U64; }

/* One member: its value as the text tt_options_set reads, after the type check. */
static int apply_member(tt_options *o, const tt_option *opt, const tt_json_node *v, const char *name, const char *key,
                        tt_status *st) {
    const char *text = NULL;
    int wants_string = opt->type == TT_OPT_CHOICE || opt->type == TT_OPT_TEXT || opt->type == TT_OPT_SET;
    int flag = opt->type == TT_OPT_INT && opt->lo == 0 && opt->hi == 1;
    if (wants_string && v->type == TT_JSTRING) text = v->str;
    else if (!wants_string && v->type == TT_JNUMBER) text = v->str;
    else if (flag && (v->type == TT_JTRUE || v->type == TT_JFALSE)) text = v->type == TT_JTRUE ? "1" : "0";
    if (!text)
        return tt_fail(st, TT_EINVAL, "%s: '%s' must be %s (got %s)", name, key,
                       wants_string ? "a string" : is_int_type(opt->type) ? "an integer" : "a number",
                       json_type_name(v->type));
    tt_status inner;
    tt_status_clear(&inner);
    if (tt_options_set(o, opt->name, text, &inner))
        return tt_fail(st, inner.code ? inner.code : TT_EINVAL, "%s: '%s': %s", name, key, inner.msg);
    return TT_OK;
}

int tt_runfile_apply(tt_options *o, const char *text, size_t len, const char *name, const char *dir, char *data,
                     size_t data_cap, tt_status *st) {
    tt_json_doc doc;
    tt_status js;
    tt_status_clear(&js);
    if (data && data_cap) data[0] = 0;
    if (tt_json_parse(text, len, MAX_NODES, &doc, &js))
        return tt_fail(st, TT_EINVAL, "%s: not a valid run file: %s", name, js.msg);
    const tt_json_node *root = tt_json_root(&doc);
    int rc = TT_OK;
    if (!root || root->type != TT_JOBJECT) {
        rc = tt_fail(st, TT_EINVAL, "%s: a run file is a JSON object of option names and values (got %s)", name,
                     root ? json_type_name(root->type) : "nothing");
        goto out;
    }
    uint64_t seen = 0;
    int seen_data = 0;
    for (const tt_json_node *m = tt_json_first(&doc, root); m && !rc; m = tt_json_sibling(&doc, m)) {
        const char *key = m->key;
        if (strcmp(key, "data") == 0) {
            if (!data) rc = tt_fail(st, TT_EINVAL, "%s: 'data' is not read here (the corpus comes from elsewhere)", name);
            else if (seen_data) rc = tt_fail(st, TT_EINVAL, "%s: 'data' is given twice", name);
            else if (m->type != TT_JSTRING || !m->str[0])
                rc = tt_fail(st, TT_EINVAL, "%s: 'data' must be a non-empty string (a path; got %s)", name,
                             m->type == TT_JSTRING ? "an empty string" : json_type_name(m->type));
            else {
                int rel = m->str[0] != '/' && dir && dir[0];
                int n = rel ? snprintf(data, data_cap, "%s/%s", dir, m->str) : snprintf(data, data_cap, "%s", m->str);
                if (n < 0 || (size_t)n >= data_cap) rc = tt_fail(st, TT_EINVAL, "%s: 'data': path too long", name);
            }
            seen_data = 1;
            continue;
        }
        const tt_option *opt = tt_option_find(key);
        if (!opt) {
            char hint[96];
            suggest(key, hint, sizeof hint);
            rc = tt_fail(st, TT_EINVAL, "%s: unknown key '%.60s'%s", name, key, hint);
            break;
        }
        uint64_t bit = 1ull << (opt - tt_option_at(0));
        if (seen & bit) {
            rc = tt_fail(st, TT_EINVAL, "%s: '%s' is given twice (as '%s' and an older name)", name, key, opt->name);
            break;
        }
        seen |= bit;
        rc = apply_member(o, opt, m, name, key, st);
        /* a tokenizer path is read from the file's folder, as "data" is */
        if (!rc && opt->where == TT_OPT_TOKENIZER && o->tokenizer[0] != '/' && strcmp(o->tokenizer, "byte") != 0 && dir &&
            dir[0]) {
            char rel[sizeof o->tokenizer];
            snprintf(rel, sizeof rel, "%s", o->tokenizer);
            if ((size_t)snprintf(o->tokenizer, sizeof o->tokenizer, "%s/%s", dir, rel) >= sizeof o->tokenizer)
                rc = tt_fail(st, TT_EINVAL, "%s: 'tokenizer': path too long", name);
        }
    }
out:
    tt_json_free(&doc);
    return rc;
}

int tt_runfile_load(tt_options *o, const char *path, char *data, size_t data_cap, tt_status *st) {
    int fd = -1;
    uint64_t size = 0;
    tt_status fs;
    tt_status_clear(&fs);
    if (tt_open_regular(path, &fd, &size, &fs))
        return tt_fail(st, fs.code ? fs.code : TT_EIO, "cannot read run file: %s", fs.msg);
    if (size > TT_RUNFILE_MAX_BYTES) {
        close(fd);
        return tt_fail(st, TT_EINVAL, "%s: a run file is at most %u bytes (this one has %llu)", path, TT_RUNFILE_MAX_BYTES,
                       (unsigned long long)size);
    }
    char *buf;
    if (tt_read_all(fd, size, &buf, &fs))
        return fs.code == TT_ENOMEM ? tt_fail(st, TT_ENOMEM, "out of memory (run file)")
                                    : tt_fail(st, TT_EIO, "%s: read error", path);
    const size_t got = (size_t)size;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *sl = strrchr(dir, '/');
    if (sl == dir) dir[1] = 0;
    else if (sl) *sl = 0;
    else dir[0] = 0;
    int rc = tt_runfile_apply(o, buf, got, path, dir, data, data_cap, st);
    free(buf);
    return rc;
}

/* The shortest text of x that reads back as the same float (double). */
static void shortest(char *buf, size_t cap, double x, int is_f32) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, x);
        double y = strtod(buf, NULL);
        if (is_f32 ? (float)y == (float)x : y == x) return;
    }
}

/* One option's value as text: numbers in their shortest exact form, choices by name. */
static void value_of(const tt_option *opt, const void *p, char *buf, size_t cap) {
    char c[32];
    switch (opt->type) {
    case TT_OPT_INT: snprintf(buf, cap, "%d", *(const int *)p); break;
    case TT_OPT_I64: snprintf(buf, cap, "%lld", (long long)*(const int64_t *)p); break;
    case TT_OPT_U64: snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case TT_OPT_F32: shortest(buf, cap, *(const float *)p, 1); break;
    case TT_OPT_F64: shortest(buf, cap, *(const double *)p, 0); break;
    case TT_OPT_CHOICE: snprintf(buf, cap, "%s", tt_option_choice(opt, *(const int *)p, c, sizeof c)); break;
    case TT_OPT_SET: tt_option_set_text(opt, *(const int *)p, buf, cap); break;
    case TT_OPT_TEXT: snprintf(buf, cap, "?"); break;
    }
}

static const void *where_of(const tt_option *opt, const tt_model_config *cfg, const tt_train_config *tc,
                            const tt_run_config *run) {
    const char *base = opt->where == TT_OPT_MODEL ? (const char *)cfg
                       : opt->where == TT_OPT_TRAIN ? (const char *)tc
                                                    : (const char *)run;
    return base + opt->off;
}

void tt_runfile_given_text(const tt_options *o, tt_jw *w) {
    int first = 1;
    for (int i = 0; i < tt_option_count(); i++) {
        const tt_option *opt = tt_option_at(i);
        if (!tt_options_given(o, opt->name)) continue;
        char v[48];
        if (opt->where == TT_OPT_PRESET) snprintf(v, sizeof v, "%s", o->preset);
        else if (opt->type == TT_OPT_TEXT) continue;
        else value_of(opt, where_of(opt, &o->model, &o->train, &o->run), v, sizeof v);
        tt_jw_printf(w, "%s%s=%s", first ? "" : " ", opt->name, v);
        first = 0;
    }
}

void tt_runfile_write(tt_jw *w, const tt_model_config *cfg, const tt_train_config *tc, const tt_run_config *run,
                      const char *data) {
    tt_runfile_write_tok(w, cfg, tc, run, NULL, data);
}

void tt_runfile_write_tok(tt_jw *w, const tt_model_config *cfg, const tt_train_config *tc, const tt_run_config *run,
                          const char *tokenizer, const char *data) {
    int first = 1;
    tt_jw_cstr(w, "{");
    for (int i = 0; i < tt_option_count(); i++) {
        const tt_option *opt = tt_option_at(i);
        if (opt->where == TT_OPT_PRESET || opt->type == TT_OPT_TEXT) continue;
        /* a model without LoRA has no alpha or targets to share */
        if (cfg->lora_rank <= 0 && opt->where == TT_OPT_MODEL && opt->off != offsetof(tt_model_config, lora_rank) &&
            strncmp(opt->name, "lora-", 5) == 0)
            continue;
        char v[48];
        value_of(opt, where_of(opt, cfg, tc, run), v, sizeof v);
        tt_jw_printf(w, "%s\n  \"%s\": ", first ? "" : ",", opt->name);
        if (opt->type == TT_OPT_CHOICE || opt->type == TT_OPT_SET) tt_jw_string(w, v, strlen(v));
        else tt_jw_cstr(w, v);
        first = 0;
    }
    if (tokenizer && *tokenizer && strcmp(tokenizer, "byte") != 0) {
        tt_jw_printf(w, "%s\n  \"tokenizer\": ", first ? "" : ",");
        tt_jw_string(w, tokenizer, strlen(tokenizer));
        first = 0;
    }
    if (data) {
        tt_jw_printf(w, "%s\n  \"data\": ", first ? "" : ",");
        tt_jw_string(w, data, strlen(data));
    }
    tt_jw_cstr(w, "\n}\n");
}
