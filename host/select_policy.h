/*
 * select_policy.h - the parts of the selection (docs/selection.md):
 *   resolve_policy.c  what a name asks for (plugin, conf alias, descriptor
 *                     alias, deprecation) and which candidates serve a name
 *   checks_policy.c   one candidate against the model, its caps and the rules
 *   select.c          ranking, hybrid pairing, split stages, verdicts
 * All pure: no I/O, no global state.  Not installed.
 */
#ifndef SGL_ATTN_SELECT_POLICY_H
#define SGL_ATTN_SELECT_POLICY_H

#include "rules.h"

enum { ST_FULL, ST_PREFILL, ST_DECODE, ST_WRAPPER, ST_LAYER };

/* A name as asked (--backend NAME), resolved. */
enum { REQ_AUTO, REQ_PLUGIN, REQ_ALIAS };
typedef struct sel_req {
    int kind;
    const char *asked;       /* as the user wrote it (NULL: automatic) */
    const char *name;        /* after deprecation */
    const conf_alias *alias; /* conf's entry, or NULL (descriptor aliases only) */
    char warning[384];       /* deprecation warning, or "" */
} sel_req;

typedef struct sel_ctx {
    const sel_input *in;
    const conf *rules;
    sgl_attn_model model; /* as routed: draft [0], plain models all layers */
    int need_graph;
    /* request.backend when it names a hybrid wrapper or a layer plugin: that
     * plugin goes on top and the full-attention stage is automatic */
    const char *outer;
    int outer_role; /* SGL_ATTN_ROLE_HYBRID or _LAYER with outer, else 0 */
} sel_ctx;

/* How far a candidate got through the checks (the deepest refusal is the
 * most useful headline). */
enum {
    D_NAME = 1, D_PLATFORM, D_ALIAS_MODEL, D_STATUS, D_DISABLED, D_AVAILABLE, D_ALIAS_ARCH, D_MODEL_RULE,
    D_CAPS, D_PLUGIN, D_HYBRID, D_PASS
};

typedef struct eval {
    int pass;
    int depth;
    char rule[48];
    char message[1536]; /* verdicts keep all of it (a probe's reason may be long) */
    int32_t score;      /* effective: conf priority, else the probe's */
    int has_prio;
    int default_rank;   /* position in the platform's default list; INT_MAX none */
    char default_why[160];
} eval;

/* ------------------------------------------------------ resolve_policy.c */

/* Returns SGL_ATTN_OK, or SGL_ATTN_E_NOT_FOUND with "Invalid attention
 * backend: X. Valid names: ..." in err. */
int sel_resolve(const sel_ctx *cx, const char *asked, sel_req *r, char *err, size_t err_size);
/* Does candidate c serve the request? */
int sel_req_serves(const sel_ctx *cx, const sel_req *r, const sel_candidate *c);
/* Does c serve `name` (its own name, or an alias of it: conf, per platform,
 * deprecated, or its descriptor's)? */
int sel_name_serves(const sel_ctx *cx, const char *name, const sel_candidate *c);
/* c declares `alias` but an earlier plugin declared it first (claims.c). */
int sel_alias_lost(const sel_candidate *c, const char *alias);
/* c serves the conf alias r asks for only by its descriptor's claim: the
 * conf maps that alias to other plugins on c's platform. */
int sel_by_own_claim(const sel_ctx *cx, const sel_req *r, const sel_candidate *c);
/* Valid names for --backend, sorted, comma separated. */
void sel_valid_names(const sel_ctx *cx, char *buf, size_t size);
int sel_cand_platform(const sel_candidate *c);
const char *sel_cand_name(const sel_candidate *c);
int sel_cand_role(const sel_candidate *c);

/* ------------------------------------------------------- checks_policy.c */

int sel_row_in_scope(const rule_row *r, int platform);
int sel_row_holds(const rule_row *r, const sgl_attn_model *m, const sgl_attn_caps *caps);
int sel_row_uses_arch(const rule_row *r);
/* A full-role candidate for a stage (ST_FULL / ST_PREFILL / ST_DECODE). */
void sel_eval_full(const sel_ctx *cx, int stage, const sel_req *r, const sel_candidate *c, eval *e);
/* A wrapper for the model, next to an inner on (platform, device). */
void sel_eval_wrapper(const sel_ctx *cx, const sel_candidate *w, int platform, uint32_t device, eval *e);
/* Does a wrapper plugin (any status) declare the model's hybrid kind? */
int sel_wrapper_kind_matches(const sel_ctx *cx, const sel_candidate *w);

/* ---------------------------------------------------------------- select.c */

void select_clear(sgl_attn_selection *s); /* free what select_run allocated */
/* The model as a selection routes it: plain models get every layer as full
 * attention, a hybrid draft worker gets layer 0 only. */
void select_route(const sgl_attn_model *m, int is_draft, sgl_attn_model *out);

#endif
