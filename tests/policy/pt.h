/* pt.h - helpers of the policy tests: fake candidates (no plugin is ever
 * loaded), models, confs, and running the pure selection. */
#ifndef PT_H
#define PT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "select_policy.h"
#include "model_policy.h"

#define PT_MAX 24

typedef struct pt_fake {
    sgl_attn_plugin_info info;
    sgl_attn_caps caps;
} pt_fake;

typedef struct pt_world {
    pt_fake f[PT_MAX];
    sel_candidate c[PT_MAX];
    size_t n;
    conf *rules;
    sgl_attn_selection sel;
    char err[2048];
} pt_world;

/* A world with the shipped conf (conf/sglattn.json) or `conf_text`. */
pt_world *pt_world_new(const char *conf_text);
void pt_world_free(pt_world *w);

/* A usable full-attention plugin: bf16/f16/f32, head dims up to 256 (MLA
 * kinds: exactly 576/512), every feature, any page size. */
pt_fake *pt_full(pt_world *w, const char *name, int platform, uint32_t kinds, int32_t score);
pt_fake *pt_wrapper(pt_world *w, const char *name, int platform, int kind);
pt_fake *pt_layer(pt_world *w, const char *name);
pt_fake *pt_arch(pt_fake *f, int major, int minor);
pt_fake *pt_alias(pt_fake *f, const char *alias);
void pt_unavailable(pt_fake *f, const char *reason);
/* Candidate of fake f (after all fakes are added). */
sel_candidate *pt_cand(pt_world *w, const pt_fake *f);

/* Run select_run; the selection stays in w->sel until the next run. */
int pt_select(pt_world *w, const sgl_attn_model *m, const sgl_attn_select_request *req);
int pt_select_name(pt_world *w, const sgl_attn_model *m, const char *backend, int platform);
/* The verdict of plugin `name` in `stage` (NULL if none). */
const sgl_attn_verdict *pt_verdict(const pt_world *w, const char *name, const char *stage);

/* Models. */
void pt_llama(sgl_attn_model *m);     /* 32 layers, GQA 32/8, d 128, bf16 */
void pt_deepseek(sgl_attn_model *m);  /* MLA 128 heads, 576/512 */
void pt_encdec(sgl_attn_model *m);    /* whisper-like, 20 heads, d 64 */
void pt_qwen3_next(sgl_attn_model *m);/* gdn hybrid, full every 4th of 48 */

/* The corpus of real config.json files: the path of `file` in it, or NULL
 * (after saying so on stderr) when the corpus folder is absent, and the
 * test should skip(). */
const char *pt_corpus(const char *file);

/* A file of the source tree, read whole (caller frees). */
char *pt_read(const char *rel_path, size_t *len);
const char *pt_src(const char *rel_path); /* absolute path, static buffer */

#endif
