/* stack.c - build backend stacks and tear them down; the forward path.
 *
 * A stack is created innermost first: the full-attention backend, then each
 * wrapper with `inner` and the inner's effective caps (own ∩ inner).  The
 * host keeps a record of every layer in the outermost backend's
 * host_reserved, and sgl_attn_destroy destroys the layers outermost first,
 * so a wrapper's destroy must not destroy its inner.
 *
 * A split prefill/decode selection gets a host-internal backend that routes
 * like sglang's HybridAttnBackend: forward_extend and extend/verify metadata
 * to the prefill stack, forward_decode and decode/idle metadata to the decode
 * stack, graph state to both.  Wrappers the two stacks share on the outside
 * (e.g. gdn over a prefill/decode pair) are created once, over the split. */
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"
#include "rules.h" /* struct conf: the validation_layer name */

#define STACK_MAX 8
#define DEFAULT_MAX_REQS 16
#define DEFAULT_MAX_TOKENS 4096
#define DEFAULT_MAX_CONTEXT 4096
/* Upper bounds of the create options: far above any engine's (sglang's
 * largest pools hold thousands of requests and contexts of millions of
 * tokens), low enough that no product of them overflows a plugin's sizes. */
#define MAX_REQS_LIMIT (1 << 20)
#define MAX_TOKENS_LIMIT (1 << 24)
#define MAX_CONTEXT_LIMIT (1 << 26)

/* Every backend of one created stack, in destroy order (outermost first). */
typedef struct stack_rec {
    sgl_attn_host *h;
    size_t n;
    sgl_attn_backend *order[2 * STACK_MAX + 2];
    /* DSA: the stack's effective caps.dsa_ops, and the refusal the host
     * itself gave (sgl_attn_last_error shows it while set) */
    uint32_t dsa_ops;
    char err[320];
} stack_rec;

/* ------------------------------------------------------- caps intersection */

static void page_intersect(const sgl_attn_caps *a, const sgl_attn_caps *b, sgl_attn_caps *o) {
    /* Exact lists filter each other; a maximum filters a list; 0 = no limit. */
    if (a->n_page_sizes || b->n_page_sizes) {
        const sgl_attn_caps *l = a->n_page_sizes ? a : b, *r = a->n_page_sizes ? b : a;
        uint32_t n = 0, ps[SGL_ATTN_MAX_LIST];
        for (uint32_t i = 0; i < l->n_page_sizes && i < SGL_ATTN_MAX_LIST; i++) {
            uint32_t p = l->page_sizes[i];
            int ok = 0;
            if (r->n_page_sizes) {
                for (uint32_t j = 0; j < r->n_page_sizes && j < SGL_ATTN_MAX_LIST; j++) ok |= r->page_sizes[j] == p;
            } else {
                ok = !r->page_size_max || p <= r->page_size_max;
            }
            if (ok) ps[n++] = p;
        }
        o->n_page_sizes = n;
        memcpy(o->page_sizes, ps, n * sizeof ps[0]);
        o->page_size_max = 0;
        for (uint32_t i = 0; i < n; i++)
            if (ps[i] > o->page_size_max) o->page_size_max = ps[i];
    } else {
        o->n_page_sizes = 0;
        o->page_size_max = !a->page_size_max ? b->page_size_max
                           : !b->page_size_max ? a->page_size_max
                           : a->page_size_max < b->page_size_max ? a->page_size_max : b->page_size_max;
    }
}

static int dims_fit(const sgl_attn_caps *c, sgl_attn_head_dims d) {
    if (c->n_head_dims) {
        for (uint32_t j = 0; j < c->n_head_dims && j < SGL_ATTN_MAX_LIST; j++)
            if (c->head_dims[j].qk == d.qk && c->head_dims[j].v == d.v) return 1;
        return 0;
    }
    return (!c->head_dim_qk_max || d.qk <= c->head_dim_qk_max) &&
           (!c->head_dim_v_max || d.v <= c->head_dim_v_max);
}

static uint32_t min_limit(uint32_t a, uint32_t b) { return !a ? b : !b ? a : a < b ? a : b; }

static void dims_intersect(const sgl_attn_caps *a, const sgl_attn_caps *b, sgl_attn_caps *o) {
    if (a->n_head_dims || b->n_head_dims) {
        const sgl_attn_caps *l = a->n_head_dims ? a : b, *r = a->n_head_dims ? b : a;
        sgl_attn_head_dims hd[SGL_ATTN_MAX_LIST];
        uint32_t n = 0;
        for (uint32_t i = 0; i < l->n_head_dims && i < SGL_ATTN_MAX_LIST; i++)
            if (dims_fit(r, l->head_dims[i])) hd[n++] = l->head_dims[i];
        o->n_head_dims = n;
        memcpy(o->head_dims, hd, n * sizeof hd[0]);
        o->head_dim_qk_max = o->head_dim_v_max = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (hd[i].qk > o->head_dim_qk_max) o->head_dim_qk_max = hd[i].qk;
            if (hd[i].v > o->head_dim_v_max) o->head_dim_v_max = hd[i].v;
        }
    } else {
        o->n_head_dims = 0;
        o->head_dim_qk_max = min_limit(a->head_dim_qk_max, b->head_dim_qk_max);
        o->head_dim_v_max = min_limit(a->head_dim_v_max, b->head_dim_v_max);
    }
}

/* (major, minor) compare with -1 minor = any minor. */
static int arch_cmp(int32_t ma, int32_t mi, int32_t mb, int32_t nb) {
    if (ma != mb) return ma < mb ? -1 : 1;
    if (mi < 0 || nb < 0 || mi == nb) return 0;
    return mi < nb ? -1 : 1;
}

int stack_caps_intersect(const sgl_attn_caps *own, const sgl_attn_caps *inner, sgl_attn_caps *out,
                         char *why, size_t why_size) {
    sgl_attn_caps o = *inner; /* the device: name, arch, memory, CUs, score */
    o.reason[0] = 0;
    o.available = own->available && inner->available;
    o.attn_kinds = own->attn_kinds & inner->attn_kinds;
    o.q_dtypes = own->q_dtypes & inner->q_dtypes;
    o.kv_dtypes = own->kv_dtypes & inner->kv_dtypes;
    /* A wrapper's linear state is its own: the full layers below have none. */
    o.features = (own->features & inner->features) | (own->features & SGL_ATTN_FEAT_CALLER_STATE);
    o.dsa_ops = own->dsa_ops & inner->dsa_ops; /* every layer must pass topk_indices on */
    o.state_dtypes = own->state_dtypes ? own->state_dtypes : inner->state_dtypes;
    o.max_gqa_ratio = min_limit(own->max_gqa_ratio, inner->max_gqa_ratio);
    dims_intersect(own, inner, &o);
    page_intersect(own, inner, &o);
    /* Arch range: the tighter bound of each end. */
    if (own->arch_min_major >= 0 &&
        (o.arch_min_major < 0 ||
         arch_cmp(own->arch_min_major, own->arch_min_minor, o.arch_min_major, o.arch_min_minor) > 0)) {
        o.arch_min_major = own->arch_min_major;
        o.arch_min_minor = own->arch_min_minor;
    }
    if (own->arch_max_major >= 0 &&
        (o.arch_max_major < 0 ||
         arch_cmp(own->arch_max_major, own->arch_max_minor, o.arch_max_major, o.arch_max_minor) < 0)) {
        o.arch_max_major = own->arch_max_major;
        o.arch_max_minor = own->arch_max_minor;
    }
    const char *empty = !o.available       ? NULL
                        : !o.q_dtypes      ? "q dtype"
                        : !o.kv_dtypes     ? "KV dtype"
                        : !o.attn_kinds    ? "attention kind"
                        : !(o.features & (SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE)) ? "forward mode (extend/decode)"
                        : (own->n_head_dims || inner->n_head_dims) && !o.n_head_dims ? "head dims"
                        : (own->n_page_sizes || inner->n_page_sizes) && !o.n_page_sizes ? "page size"
                                                                                        : NULL;
    if (!o.available) {
        str_printf(why, why_size, "%s is not available: %s", own->available ? "the inner" : "the wrapper",
                   own->available ? inner->reason : own->reason);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (empty) {
        str_printf(why, why_size, "no %s in common", empty);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (inner->arch_major >= 0 &&
        ((o.arch_min_major >= 0 &&
          arch_cmp(inner->arch_major, inner->arch_minor, o.arch_min_major, o.arch_min_minor) < 0) ||
         (o.arch_max_major >= 0 &&
          arch_cmp(inner->arch_major, inner->arch_minor, o.arch_max_major, o.arch_max_minor) > 0))) {
        str_printf(why, why_size, "the device's arch %d.%d is outside the range %d.%d..%d.%d",
                   inner->arch_major, inner->arch_minor, o.arch_min_major, o.arch_min_minor,
                   o.arch_max_major, o.arch_max_minor);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    *out = o;
    return SGL_ATTN_OK;
}

/* --------------------------------------------------------- split backend */

typedef struct split_backend {
    sgl_attn_backend base;
    sgl_attn_backend *prefill, *decode;
} split_backend;

static sgl_attn_backend *split_pick(sgl_attn_backend *b, int32_t mode) {
    split_backend *s = (split_backend *)b;
    return mode == SGL_ATTN_MODE_DECODE || mode == SGL_ATTN_MODE_IDLE ? s->decode : s->prefill;
}

static int split_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    sgl_attn_backend *t = split_pick(b, batch->forward_mode);
    return t->ops->init_forward_metadata(t, batch);
}

static int split_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    sgl_attn_backend *t = ((split_backend *)b)->prefill;
    return t->ops->forward_extend(t, a);
}

static int split_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    sgl_attn_backend *t = ((split_backend *)b)->decode;
    return t->ops->forward_decode(t, a);
}

static int split_graph_state(sgl_attn_backend *b, int32_t max_bs, int32_t max_tokens) {
    split_backend *s = (split_backend *)b;
    sgl_attn_backend *t[2] = {s->prefill, s->decode};
    for (int i = 0; i < 2; i++) {
        if (!t[i]->ops->init_graph_state) return SGL_ATTN_E_UNSUPPORTED;
        int rc = t[i]->ops->init_graph_state(t[i], max_bs, max_tokens);
        if (rc) return rc;
    }
    return SGL_ATTN_OK;
}

static int split_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    sgl_attn_backend *t = split_pick(b, g->forward_mode);
    return t->ops->init_forward_metadata_capture ? t->ops->init_forward_metadata_capture(t, g)
                                                 : SGL_ATTN_E_UNSUPPORTED;
}

static int split_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    sgl_attn_backend *t = split_pick(b, g->forward_mode);
    return t->ops->init_forward_metadata_replay ? t->ops->init_forward_metadata_replay(t, g)
                                                : SGL_ATTN_E_UNSUPPORTED;
}

static int32_t split_fill_value(sgl_attn_backend *b) {
    sgl_attn_backend *t = ((split_backend *)b)->decode;
    return t->ops->graph_seq_len_fill_value ? t->ops->graph_seq_len_fill_value(t) : 1;
}

static const char *split_last_error(sgl_attn_backend *b) {
    split_backend *s = (split_backend *)b;
    const char *e = s->decode->ops->last_error ? s->decode->ops->last_error(s->decode) : "";
    if (e && e[0]) return e;
    e = s->prefill->ops->last_error ? s->prefill->ops->last_error(s->prefill) : "";
    return e ? e : "";
}

static void split_destroy(sgl_attn_backend *b) { free(b); } /* the record destroys the stacks */

static int split_state_clear(sgl_attn_backend *b, int32_t slot) {
    split_backend *s = (split_backend *)b;
    int rc = SGL_ATTN_E_UNSUPPORTED, any = 0;
    sgl_attn_backend *t[2] = {s->prefill, s->decode};
    for (int i = 0; i < 2; i++)
        if (t[i]->ops->state_clear) {
            any = 1;
            if ((rc = t[i]->ops->state_clear(t[i], slot))) return rc;
        }
    return any ? SGL_ATTN_OK : rc;
}

static int split_state_copy(sgl_attn_backend *b, int32_t src, int32_t dst) {
    split_backend *s = (split_backend *)b;
    int rc = SGL_ATTN_E_UNSUPPORTED, any = 0;
    sgl_attn_backend *t[2] = {s->prefill, s->decode};
    for (int i = 0; i < 2; i++)
        if (t[i]->ops->state_copy) {
            any = 1;
            if ((rc = t[i]->ops->state_copy(t[i], src, dst))) return rc;
        }
    return any ? SGL_ATTN_OK : rc;
}

static int split_state_commit(sgl_attn_backend *b, const DLTensor *accepted) {
    split_backend *s = (split_backend *)b;
    int rc = SGL_ATTN_E_UNSUPPORTED, any = 0;
    sgl_attn_backend *t[2] = {s->prefill, s->decode};
    for (int i = 0; i < 2; i++)
        if (t[i]->ops->state_commit) {
            any = 1;
            if ((rc = t[i]->ops->state_commit(t[i], accepted))) return rc;
        }
    return any ? SGL_ATTN_OK : rc;
}

static const sgl_attn_backend_ops split_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = split_metadata,
    .forward_extend = split_extend,
    .forward_decode = split_decode,
    .init_graph_state = split_graph_state,
    .init_forward_metadata_capture = split_capture,
    .init_forward_metadata_replay = split_replay,
    .graph_seq_len_fill_value = split_fill_value,
    .last_error = split_last_error,
    .destroy = split_destroy,
    .state_clear = split_state_clear,
    .state_copy = split_state_copy,
    .state_commit = split_state_commit,
};

/* The split's caps for a wrapper above it: what both stacks serve, except
 * that extend comes from the prefill side and decode from the decode side. */
static void split_caps(const sgl_attn_caps *p, const sgl_attn_caps *d, sgl_attn_caps *o) {
    char why[128];
    uint32_t feats = (p->features & SGL_ATTN_FEAT_EXTEND) | (d->features & SGL_ATTN_FEAT_DECODE);
    sgl_attn_caps pp = *p;
    pp.features |= SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_EXTEND;
    if (stack_caps_intersect(&pp, d, o, why, sizeof why) != SGL_ATTN_OK) *o = *d;
    o->features = (o->features & ~(uint32_t)(SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE)) | feats;
}

/* ------------------------------------------------------------ building */

typedef struct chain {
    sgl_attn_backend *made[STACK_MAX + 1]; /* creation order: innermost first */
    size_t n;
} chain;

static void chain_destroy(chain *c) {
    while (c->n) {
        sgl_attn_backend *b = c->made[--c->n]; /* outermost first */
        if (b->ops && b->ops->destroy) b->ops->destroy(b);
    }
}

/* A plugin by name, usable, with a clear reason when not. */
static const plugin_entry *usable_plugin(const sgl_attn_host *h, const char *name, char *err,
                                         size_t err_size) {
    long i = sgl_attn_host_find_plugin(h, name);
    if (i >= 0 && h->plugins[i].info.status == SGL_ATTN_PLUGIN_USABLE) return &h->plugins[i];
    if (i >= 0) {
        str_printf(err, err_size, "plugin %s is unavailable here: %s", name, h->plugins[i].info.reason);
        return NULL;
    }
    for (size_t j = 0; j < h->n_plugins; j++)
        if (!strcmp(h->plugins[j].info.name, name)) {
            str_printf(err, err_size, "plugin %s is %s: %s", name,
                       sgl_attn_plugin_status_name(h->plugins[j].info.status), h->plugins[j].info.reason);
            return NULL;
        }
    char list[400] = "";
    size_t len = 0;
    for (size_t j = 0; j < h->n_plugins && len + 70 < sizeof list; j++)
        if (h->plugins[j].info.status == SGL_ATTN_PLUGIN_USABLE) {
            str_printf(list + len, sizeof list - len, "%s%s", len ? ", " : "", h->plugins[j].info.name);
            len = strlen(list);
        }
    str_printf(err, err_size, "no plugin named \"%s\" (usable: %s)", name, len ? list : "none");
    return NULL;
}

static int check_backend(const plugin_entry *e, sgl_attn_backend *b, char *err, size_t err_size) {
    const sgl_attn_backend_ops *ops = b->ops;
    const char *missing = NULL;
    if (!ops) {
        str_printf(err, err_size, "%s: create returned a backend without ops", e->info.name);
        return SGL_ATTN_E_INTERNAL;
    }
    if (ops->struct_size < SGL_ATTN_BACKEND_OPS_SIZE_V1_0) {
        str_printf(err, err_size, "%s: backend ops struct_size %u is smaller than ABI %d.0 requires (%u)",
                   e->info.name, ops->struct_size, SGL_ATTN_ABI_MAJOR, SGL_ATTN_BACKEND_OPS_SIZE_V1_0);
        return SGL_ATTN_E_ABI;
    }
    missing = !ops->init_forward_metadata ? "init_forward_metadata"
              : !ops->forward_extend      ? "forward_extend"
              : !ops->forward_decode      ? "forward_decode"
              : !ops->destroy             ? "destroy"
                                          : NULL;
    if (missing) {
        str_printf(err, err_size,
                   "%s: backend ops lack %s (the forward path calls it unchecked; return "
                   "SGL_ATTN_E_UNSUPPORTED instead)",
                   e->info.name, missing);
        return SGL_ATTN_E_INTERNAL;
    }
    if (!b->ops_size) b->ops_size = ops->struct_size;
    return SGL_ATTN_OK;
}

typedef struct build_ctx {
    sgl_attn_host *h;
    const sgl_attn_model *model; /* &model_in */
    sgl_attn_model model_in;     /* the caller's model in the host's layout */
    sgl_attn_create_options opts;
    char *err;
    size_t err_size;
    /* The full backend's device_ops (the last one created): the embedded
     * validation layer copies device index tensors through them when asked. */
    const sgl_attn_device_ops *bottom_ops;
} build_ctx;

#ifdef SGL_ATTN_EMBED_VALIDATE
/* The create function of the embedded validation layer (its descriptor as
 * this host negotiated it), to know the layer when the stack is built. */
typedef int (*create_fn)(const sgl_attn_create_args *, sgl_attn_backend **);
static create_fn embedded_validate_create(const sgl_attn_host *h) {
    for (size_t i = 0; i < h->n_plugins; i++) {
        const plugin_entry *p = &h->plugins[i];
        if (p->loaded && !p->module.handle && !strcmp(p->info.source, "embedded") && !strcmp(p->info.name, "validate"))
            return p->desc.create;
    }
    return NULL;
}
#endif

/* Create names[n-1] .. names[0] over `inner` (NULL: names[n-1] is the full
 * backend on `device`).  On success c->made holds them, *top the outermost
 * and *eff its effective caps. */
static int build_chain(build_ctx *x, const char *const *names, size_t n, int32_t device,
                       sgl_attn_backend *inner, const sgl_attn_caps *inner_eff, chain *c,
                       sgl_attn_backend **top, sgl_attn_caps *eff) {
    sgl_attn_caps cur;
    int32_t cur_platform = SGL_ATTN_PLATFORM_NONE;
    if (inner) cur = *inner_eff;
    for (size_t k = n; k-- > 0;) {
        const plugin_entry *e = usable_plugin(x->h, names[k], x->err, x->err_size);
        if (!e) return SGL_ATTN_E_NOT_FOUND;
        int is_full = e->info.role == SGL_ATTN_ROLE_FULL;
        if (!inner && !is_full) {
            str_printf(x->err, x->err_size,
                       "%s is a %s wrapper: the innermost backend of a stack must compute full attention",
                       names[k], e->info.role == SGL_ATTN_ROLE_LAYER ? "layer" : "hybrid");
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (inner && is_full) {
            str_printf(x->err, x->err_size, "%s computes full attention and cannot wrap %s", names[k],
                       names[k + 1 < n ? k + 1 : k]);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        /* The full backend runs on `device`; a wrapper on the same index when
         * it is of the same platform, else on its own device 0. */
        int32_t dev = !inner ? device
                      : (e->info.platform == cur_platform && (uint32_t)device < e->n_caps) ? device
                                                                                         : 0;
        if (dev < 0 || (uint32_t)dev >= e->n_caps) {
            str_printf(x->err, x->err_size, "%s has no device %d (it has %u)", names[k], dev, e->n_caps);
            return SGL_ATTN_E_NOT_FOUND;
        }
        const sgl_attn_caps *own = &e->caps[dev];
        if (!own->available) {
            str_printf(x->err, x->err_size, "%s device %d is not available: %s", names[k], dev, own->reason);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        sgl_attn_caps next;
        if (inner) {
            char why[300];
            if (stack_caps_intersect(own, &cur, &next, why, sizeof why) != SGL_ATTN_OK) {
                str_printf(x->err, x->err_size, "%s cannot wrap %s: %s", names[k],
                           k + 1 < n ? names[k + 1] : "the stack below", why);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            /* Linear state is a hybrid wrapper's own; a layer passes on what is below it. */
            if (e->info.role != SGL_ATTN_ROLE_HYBRID)
                next.features &= ~(uint32_t)SGL_ATTN_FEAT_CALLER_STATE | cur.features;
        } else {
            next = *own;
        }
        char perr[SGL_ATTN_REASON_MAX] = "";
        sgl_attn_create_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.model = x->model;
        a.device = dev;
        a.max_reqs = x->opts.max_reqs;
        a.max_tokens = x->opts.max_tokens;
        a.max_context = x->opts.max_context;
        a.inner = inner;
        a.inner_caps = inner ? &cur : NULL;
        a.error = perr;
        a.error_size = sizeof perr;
        a.host = &x->h->api;
        sgl_attn_backend *b = NULL;
        int rc = e->desc.create(&a, &b);
        perr[sizeof perr - 1] = 0;
        if (rc != SGL_ATTN_OK || !b) {
            str_printf(x->err, x->err_size, "%s: create failed with %s (%d)%s%s", names[k],
                       sgl_attn_status_name(rc), rc, perr[0] ? ": " : "", perr[0] ? perr : "");
            return rc != SGL_ATTN_OK ? rc : SGL_ATTN_E_INTERNAL;
        }
        if ((rc = check_backend(e, b, x->err, x->err_size)) != SGL_ATTN_OK) {
            if (b->ops && b->ops->destroy) b->ops->destroy(b);
            return rc;
        }
        b->host_reserved = NULL;
        if (is_full) x->bottom_ops = e->desc.device_ops;
#ifdef SGL_ATTN_EMBED_VALIDATE
        if (!e->module.handle && e->desc.create == embedded_validate_create(x->h))
            sgl_attn_validate_set_device_ops(b, x->bottom_ops);
#endif
        c->made[c->n++] = b;
        inner = b;
        cur = next;
        cur_platform = e->info.platform;
    }
    *top = inner;
    *eff = cur;
    return SGL_ATTN_OK;
}

static int build_ctx_init(build_ctx *x, sgl_attn_host *h, const sgl_attn_model *m,
                          const sgl_attn_create_options *opts, sgl_attn_backend **out, char *err,
                          size_t err_size) {
    if (err && err_size) err[0] = 0;
    if (out) *out = NULL;
    if (!h || !m || !out) {
        str_printf(err, err_size, "sgl_attn_create: %s is NULL", !h ? "host" : !m ? "model" : "out");
        return SGL_ATTN_E_INVALID;
    }
    if (h->caps_file[0]) {
        str_printf(err, err_size,
                   "sgl_attn_create: this host's caps come from %s, another machine's: it answers what would be "
                   "chosen there and creates nothing",
                   h->caps_file);
        return SGL_ATTN_E_STATE;
    }
    if (opts && opts->struct_size < sizeof(uint32_t)) {
        str_printf(err, err_size,
                   "sgl_attn_create: options.struct_size is %u: set it to sizeof(sgl_attn_create_options) (%zu), "
                   "or pass NULL options for the defaults",
                   opts->struct_size, sizeof x->opts);
        return SGL_ATTN_E_INVALID;
    }
    if (host_model_import(m, &x->model_in, "sgl_attn_create", err, err_size)) return SGL_ATTN_E_INVALID;
    x->h = h;
    x->model = &x->model_in;
    x->err = err;
    x->err_size = err_size;
    x->bottom_ops = NULL;
    memset(&x->opts, 0, sizeof x->opts);
    if (opts) {
        size_t n = opts->struct_size < sizeof x->opts ? opts->struct_size : sizeof x->opts;
        memcpy(&x->opts, opts, n);
    }
    if (x->opts.max_reqs <= 0) x->opts.max_reqs = DEFAULT_MAX_REQS;
    if (x->opts.max_tokens <= 0) x->opts.max_tokens = DEFAULT_MAX_TOKENS;
    if (x->opts.max_context <= 0) x->opts.max_context = DEFAULT_MAX_CONTEXT;
    /* Both bounds before anything is sized from them: plugins allocate
     * per request, per token and per column. */
    const struct {
        const char *name;
        int32_t v, max;
    } lim[] = {{"max_reqs", x->opts.max_reqs, MAX_REQS_LIMIT},
               {"max_tokens", x->opts.max_tokens, MAX_TOKENS_LIMIT},
               {"max_context", x->opts.max_context, MAX_CONTEXT_LIMIT}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v > lim[i].max) {
            str_printf(err, err_size, "sgl_attn_create: %s = %d; expected 1..%d (0 or less: the default)", lim[i].name,
                       lim[i].v, lim[i].max);
            return SGL_ATTN_E_INVALID;
        }
    return SGL_ATTN_OK;
}

/* The validation layer to stack on top when the host was opened with
 * validate (option or SGL_ATTN_VALIDATE=1), or NULL: none when the stack
 * already ends in a layer (a selection made with validate put it there);
 * else the conf's "validation_layer", else "validate", else the first usable
 * layer plugin. */
static const char *want_validate(const build_ctx *x, const char *outermost) {
    const sgl_attn_host *h = x->h;
    if (!h->validate) return NULL;
    long top = outermost ? sgl_attn_host_find_plugin(h, outermost) : -1;
    if (top >= 0 && h->plugins[top].info.role == SGL_ATTN_ROLE_LAYER) return NULL;
    const char *named = h->conf ? h->conf->validation_layer : NULL;
    long i = sgl_attn_host_find_plugin(h, named ? named : "validate");
    for (size_t j = 0; i < 0 && !named && j < h->n_plugins; j++)
        if (h->plugins[j].loaded && h->plugins[j].info.role == SGL_ATTN_ROLE_LAYER) i = (long)j;
    if (i >= 0 && h->plugins[i].info.status == SGL_ATTN_PLUGIN_USABLE) return h->plugins[i].info.name;
    if (named)
        hlog_printf(&h->log, SGL_ATTN_LOG_WARN,
                    "validation was asked for, but the conf's validation_layer %s is not loaded and usable", named);
    else
        hlog_printf(&h->log, SGL_ATTN_LOG_WARN, "validation was asked for, but no layer plugin is loaded and usable");
    return NULL;
}

/* The record goes into the outermost backend; the host stays referenced. */
static int finish(build_ctx *x, sgl_attn_backend *top, const sgl_attn_caps *eff, chain *outer,
                  sgl_attn_backend *split, chain *pre, chain *dec, sgl_attn_backend **out) {
    stack_rec *r = calloc(1, sizeof *r);
    if (!r) {
        str_copy(x->err, x->err_size, "out of memory");
        return SGL_ATTN_E_NOMEM;
    }
    r->h = x->h;
    r->dsa_ops = eff->dsa_ops;
    chain *parts[3] = {outer, pre, dec};
    for (size_t i = outer->n; i-- > 0;) r->order[r->n++] = outer->made[i];
    if (split) r->order[r->n++] = split;
    for (int p = 1; p < 3; p++)
        for (size_t i = parts[p] ? parts[p]->n : 0; i-- > 0;) r->order[r->n++] = parts[p]->made[i];
    top->host_reserved = r;
    atomic_fetch_add(&x->h->live, 1);
    *out = top;
    return SGL_ATTN_OK;
}

int sgl_attn_create_stack(sgl_attn_host *h, const char *const *names, size_t n, int32_t device,
                          const sgl_attn_model *m, const sgl_attn_create_options *opts,
                          sgl_attn_backend **out, char *err, size_t err_size) {
    build_ctx x;
    int rc = build_ctx_init(&x, h, m, opts, out, err, err_size);
    if (rc) return rc;
    if (!names || n == 0 || n > STACK_MAX - 1) {
        str_printf(err, err_size, "a stack has 1..%d plugin names, got %zu", STACK_MAX - 1, n);
        return SGL_ATTN_E_INVALID;
    }
    for (size_t i = 0; i < n; i++)
        if (!names[i]) {
            str_printf(err, err_size, "stack name %zu is NULL", i);
            return SGL_ATTN_E_INVALID;
        }
    const char *all[STACK_MAX];
    size_t k = 0;
    const char *layer = want_validate(&x, names[0]);
    if (layer) all[k++] = layer;
    for (size_t i = 0; i < n; i++) all[k++] = names[i];
    chain c = {.n = 0};
    sgl_attn_backend *top;
    sgl_attn_caps eff;
    rc = build_chain(&x, all, k, device, NULL, NULL, &c, &top, &eff);
    if (rc == SGL_ATTN_OK) rc = finish(&x, top, &eff, &c, NULL, NULL, NULL, out);
    if (rc) chain_destroy(&c);
    return rc;
}

/* The model given to sgl_attn_create describes the one selected for: the
 * fields that size and route a backend agree. */
static int same_model(const sgl_attn_model *given, const sgl_attn_model *sel, char *err, size_t err_size) {
    sgl_attn_model g;
    if (host_model_import(given, &g, "sgl_attn_create", err, err_size)) return SGL_ATTN_E_INVALID;
    const struct { const char *name; long long a, b; } f[] = {
        {"num_layers", g.num_layers, sel->num_layers},       {"num_q_heads", g.num_q_heads, sel->num_q_heads},
        {"num_kv_heads", g.num_kv_heads, sel->num_kv_heads}, {"head_dim_qk", g.head_dim_qk, sel->head_dim_qk},
        {"head_dim_v", g.head_dim_v, sel->head_dim_v},       {"dtype", g.dtype, sel->dtype},
        {"kv_dtype", g.kv_dtype, sel->kv_dtype},             {"is_mla", g.is_mla, sel->is_mla},
        {"hybrid_kind", g.hybrid_kind, sel->hybrid_kind},    {"sliding_window", g.sliding_window, sel->sliding_window},
        {"spec_tokens", g.spec_tokens, sel->spec_tokens},    {"attn_type", g.attn_type, sel->attn_type},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].a != f[i].b) {
            str_printf(err, err_size,
                       "sgl_attn_create: the model's %s is %lld but the selection was made for %lld; select again "
                       "for this model (or pass NULL: the selection's model is used)",
                       f[i].name, f[i].a, f[i].b);
            return SGL_ATTN_E_INVALID;
        }
    return SGL_ATTN_OK;
}

int sgl_attn_create(sgl_attn_host *h, const sgl_attn_selection *s, const sgl_attn_model *m,
                    const sgl_attn_create_options *opts, sgl_attn_backend **out, char *err,
                    size_t err_size) {
    if (!s) {
        str_copy(err, err_size, "sgl_attn_create: selection is NULL");
        if (out) *out = NULL;
        return SGL_ATTN_E_INVALID;
    }
    /* The selection's copy of the model carries the routed layers (a draft
     * worker's full-attention layers are [0]); that is what the plugins get.
     * A model argument is checked against it, never silently ignored. */
    if (s->model.struct_size) {
        if (m && m != &s->model) {
            int rc = same_model(m, &s->model, err, err_size);
            if (rc) {
                if (out) *out = NULL;
                return rc;
            }
        }
        m = &s->model;
    }
    const char *dec[4], *pre[4];
    size_t nd = s->depth < 4 ? s->depth : 4, np = s->prefill_depth < 4 ? s->prefill_depth : 4;
    for (size_t i = 0; i < nd; i++) dec[i] = s->stack[i];
    for (size_t i = 0; i < np; i++) pre[i] = s->prefill_stack[i];
    if (!s->split) return sgl_attn_create_stack(h, dec, nd, s->device, m, opts, out, err, err_size);

    build_ctx x;
    int rc = build_ctx_init(&x, h, m, opts, out, err, err_size);
    if (rc) return rc;
    if (nd == 0 || np == 0) {
        str_copy(err, err_size, "split selection with an empty prefill or decode stack");
        return SGL_ATTN_E_INVALID;
    }
    /* Shared outer wrappers sit once above the split. */
    size_t shared = 0;
    while (shared + 1 < nd && shared + 1 < np && !strcmp(dec[shared], pre[shared])) shared++;
    chain cp = {.n = 0}, cd = {.n = 0}, co = {.n = 0};
    sgl_attn_backend *tp, *td, *top = NULL;
    sgl_attn_caps ep, ed, es, eo;
    split_backend *sb = NULL;
    rc = build_chain(&x, pre + shared, np - shared, s->prefill_device, NULL, NULL, &cp, &tp, &ep);
    if (rc) goto fail;
    rc = build_chain(&x, dec + shared, nd - shared, s->device, NULL, NULL, &cd, &td, &ed);
    if (rc) goto fail;
    if (!(sb = calloc(1, sizeof *sb))) {
        str_copy(err, err_size, "out of memory");
        rc = SGL_ATTN_E_NOMEM;
        goto fail;
    }
    sb->base.ops = &split_ops;
    sb->base.ops_size = split_ops.struct_size;
    sb->base.device = s->device;
    sb->prefill = tp;
    sb->decode = td;
    split_caps(&ep, &ed, &es);
    const char *outer[STACK_MAX];
    size_t no = 0;
    const char *layer = want_validate(&x, shared ? dec[0] : NULL);
    if (layer) outer[no++] = layer;
    for (size_t i = 0; i < shared; i++) outer[no++] = dec[i];
    top = &sb->base;
    if (no) {
        rc = build_chain(&x, outer, no, s->device, &sb->base, &es, &co, &top, &eo);
        if (rc) goto fail;
    }
    rc = finish(&x, top, no ? &eo : &es, &co, &sb->base, &cp, &cd, out);
    if (rc == SGL_ATTN_OK) return rc;
fail:
    chain_destroy(&co);
    free(sb);
    chain_destroy(&cp);
    chain_destroy(&cd);
    return rc;
}

void sgl_attn_destroy(sgl_attn_backend *b) {
    if (!b) return;
    stack_rec *r = b->host_reserved;
    if (!r) { /* not made by the host: only the backend itself */
        if (b->ops && b->ops->destroy) b->ops->destroy(b);
        return;
    }
    sgl_attn_host *h = r->h;
    for (size_t i = 0; i < r->n; i++) r->order[i]->ops->destroy(r->order[i]);
    free(r);
    host_release(h);
}

const char *sgl_attn_last_error(sgl_attn_backend *b) {
    if (!b || !b->ops) return "no backend";
    const stack_rec *r = b->host_reserved;
    if (r && r->err[0]) return r->err;
    if (!b->ops->last_error) return "";
    const char *e = b->ops->last_error(b);
    return e ? e : "";
}

/* ------------------------------------------------------------ forward path
 * One indirect call each: no lookup, no lock.  The one check: a forward
 * carrying DSA's topk_indices reaches only a stack whose every layer
 * declares SGL_ATTN_DSA_SPARSE_MLA; an older plugin would ignore the field
 * and attend densely, so the host refuses it instead. */

int sgl_attn_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    return b->ops->init_forward_metadata(b, batch);
}

static int topk_refused(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    stack_rec *r = b->host_reserved;
    if (r && r->err[0]) r->err[0] = 0;
    if (!a || a->struct_size < offsetof(sgl_attn_forward_args, topk_indices) + sizeof a->topk_indices ||
        !a->topk_indices)
        return 0;
    if (r && (r->dsa_ops & SGL_ATTN_DSA_SPARSE_MLA)) return 0;
    if (!r) return 0; /* not made by the host: its own plugin checks */
    str_printf(r->err, sizeof r->err,
               "forward: topk_indices given (DeepSeek sparse attention), but this stack does not declare "
               "SGL_ATTN_DSA_SPARSE_MLA in its caps.dsa_ops: it would attend densely; refused");
    return 1;
}

int sgl_attn_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    if (topk_refused(b, a)) return SGL_ATTN_E_UNSUPPORTED;
    return b->ops->forward_extend(b, a);
}

int sgl_attn_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    if (topk_refused(b, a)) return SGL_ATTN_E_UNSUPPORTED;
    return b->ops->forward_decode(b, a);
}

int sgl_attn_indexer_topk(sgl_attn_backend *b, const sgl_attn_indexer_args *a) {
    stack_rec *r = b->host_reserved;
    if (r && r->err[0]) r->err[0] = 0;
    if (b->ops_size >= offsetof(sgl_attn_backend_ops, indexer_topk) + sizeof b->ops->indexer_topk &&
        b->ops->indexer_topk && (!r || (r->dsa_ops & SGL_ATTN_DSA_INDEXER)))
        return b->ops->indexer_topk(b, a);
    if (r)
        str_printf(r->err, sizeof r->err,
                   "indexer_topk: this stack does not serve DeepSeek sparse attention's indexer (no "
                   "SGL_ATTN_DSA_INDEXER in its caps.dsa_ops, or a layer without indexer_topk)");
    return SGL_ATTN_E_UNSUPPORTED;
}
