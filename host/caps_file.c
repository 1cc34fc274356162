/* caps_file.c - another machine's devices, from a machine file: the output
 * of `attnctl devices --json` there (docs/attnctl.md, "Machine files").
 *
 * Each plugin loaded here takes the caps of the plugin of the same name in
 * the file instead of its own probe's; its descriptor, conf rules and
 * supports_model stay this machine's, which is what selection needs to say
 * what that machine would choose with the same plugins.  A plugin the file
 * does not list was not on that machine: one unavailable device saying so.
 *
 * The caps are read back exactly as attnctl writes them: null for what the
 * probe left unset (arch -1, no limit 0, no name ""), bit sets as name lists. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rules.h"

#define CAPS_FILE_MAX_BYTES (16u << 20)
#define CAPS_FILE_SCHEMA 1
#define MAX_FILE_DEVICES 64

static const char *const kind_names[] = {"mha", "gqa", "mqa", "mla", "cross"};
static const char *const feature_names[] = {"extend",      "decode",      "sliding_window",
                                            "softcap",     "sinks",       "graph_capture",
                                            "spec_decode", "mla_extend",  "diff_head_dims",
                                            /* ABI 1.2 */
                                            "tree_mask", "draft_extend", "ragged", "lse", "page_table", "slot_map", "caller_state", "attn_types", "encoder_loc", "fp8_scales", "mla_rope_split", "graph_device_plan", "graph_verify", "strided_qkv",
                                            "dual_chunk"};
static const char *const dtype_names[] = {"f32", "f16", "bf16", "f64", "fp8_e4m3", "fp8_e5m2"};
#define COUNT(a) (sizeof(a) / sizeof(a)[0])

const char *caps_kind_name(unsigned bit) { return bit < COUNT(kind_names) ? kind_names[bit] : NULL; }
const char *caps_feature_name(unsigned bit) { return bit < COUNT(feature_names) ? feature_names[bit] : NULL; }

/* A regular file, opened without blocking (a FIFO given by mistake must not
 * hang the host), at most CAPS_FILE_MAX_BYTES. */
static int read_regular(const char *path, char **text, size_t *len, char *err, size_t err_size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        str_printf(err, err_size, "caps file %s: cannot open: %s", path, strerror(errno));
        return SGL_ATTN_E_NOT_FOUND;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > CAPS_FILE_MAX_BYTES) {
        close(fd);
        str_printf(err, err_size, "caps file %s: %s", path,
                   !S_ISREG(st.st_mode) ? "not a regular file" : "larger than 16 MiB");
        return SGL_ATTN_E_INVALID;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    while (buf && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) {
        str_printf(err, err_size, "caps file %s: out of memory", path);
        return SGL_ATTN_E_NOMEM;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return SGL_ATTN_OK;
}

typedef struct reader {
    const ju_doc *d;
    char *err;
    size_t err_size;
} reader;

static const cJSON *member(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* An integer in [lo, hi], or null (-> *out = absent). */
static int int_or_null(reader *r, const ju_path *p, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                       int64_t absent, int64_t *out) {
    const cJSON *n = member(o, key);
    ju_path q = ju_key(p, key);
    if (!n) return ju_fail(r->d, &q, 1, r->err, r->err_size, "missing \"%s\"", key);
    if (cJSON_IsNull(n)) {
        *out = absent;
        return SGL_ATTN_OK;
    }
    return ju_get_int(r->d, &q, n, lo, hi, out, r->err, r->err_size);
}

static int str_or_null(reader *r, const ju_path *p, const cJSON *o, const char *key, char *dst, size_t size) {
    const cJSON *n = member(o, key);
    ju_path q = ju_key(p, key);
    if (!n) return ju_fail(r->d, &q, 1, r->err, r->err_size, "missing \"%s\"", key);
    dst[0] = 0;
    if (cJSON_IsNull(n)) return SGL_ATTN_OK;
    if (!cJSON_IsString(n)) return ju_fail(r->d, &q, 0, r->err, r->err_size, "expected a string or null, got %s", ju_type_name(n));
    if (strlen(n->valuestring) >= size)
        return ju_fail(r->d, &q, 0, r->err, r->err_size, "longer than %zu bytes", size - 1);
    str_copy(dst, size, n->valuestring);
    return SGL_ATTN_OK;
}

static int bits(reader *r, const ju_path *p, const cJSON *o, const char *key, const char *const *names, size_t n_names,
                uint32_t *out) {
    const cJSON *a = member(o, key);
    ju_path q = ju_key(p, key);
    if (!a || !cJSON_IsArray(a)) return ju_fail(r->d, &q, !a, r->err, r->err_size, "expected an array of names");
    *out = 0;
    int i = 0;
    for (const cJSON *e = a->child; e; e = e->next, i++) {
        ju_path qi = ju_idx(&q, i);
        size_t k = 0;
        while (cJSON_IsString(e) && k < n_names && strcmp(e->valuestring, names[k])) k++;
        if (!cJSON_IsString(e) || k == n_names) {
            char valid[256] = "", where[256];
            for (size_t j = 0; j < n_names; j++) ju_append(valid, sizeof valid, "%s%s", j ? ", " : "", names[j]);
            ju_path_str(&qi, where, sizeof where);
            return ju_fail(r->d, &qi, 0, r->err, r->err_size, "\"%s\": expected one of %s", where, valid);
        }
        *out |= 1u << k;
    }
    return SGL_ATTN_OK;
}

/* [major, minor] with either null, or null for the whole pair. */
static int arch_pair(reader *r, const ju_path *p, const cJSON *o, const char *key, int32_t *major, int32_t *minor) {
    const cJSON *a = member(o, key);
    ju_path q = ju_key(p, key);
    *major = *minor = -1;
    if (!a) return ju_fail(r->d, &q, 1, r->err, r->err_size, "missing \"%s\"", key);
    if (cJSON_IsNull(a)) return SGL_ATTN_OK;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 2)
        return ju_fail(r->d, &q, 0, r->err, r->err_size, "expected [major, minor] or null");
    int64_t v[2];
    for (int i = 0; i < 2; i++) {
        const cJSON *e = cJSON_GetArrayItem(a, i);
        ju_path qi = ju_idx(&q, i);
        if (cJSON_IsNull(e)) v[i] = -1;
        else if (ju_get_int(r->d, &qi, e, 0, 1000, &v[i], r->err, r->err_size)) return SGL_ATTN_E_INVALID;
    }
    *major = (int32_t)v[0];
    *minor = (int32_t)v[1];
    return SGL_ATTN_OK;
}

static int uint_list(reader *r, const ju_path *p, const cJSON *o, const char *key, uint32_t *v, uint32_t *n,
                     int pairs, sgl_attn_head_dims *hd) {
    const cJSON *a = member(o, key);
    ju_path q = ju_key(p, key);
    *n = 0;
    if (!a) return ju_fail(r->d, &q, 1, r->err, r->err_size, "missing \"%s\"", key);
    if (cJSON_IsNull(a)) return SGL_ATTN_OK;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > SGL_ATTN_MAX_LIST)
        return ju_fail(r->d, &q, 0, r->err, r->err_size, "expected null or an array of at most %d entries",
                       SGL_ATTN_MAX_LIST);
    int i = 0;
    for (const cJSON *e = a->child; e; e = e->next, i++) {
        ju_path qi = ju_idx(&q, i);
        int64_t x, y;
        if (pairs) {
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2)
                return ju_fail(r->d, &qi, 0, r->err, r->err_size, "expected [qk, v]");
            ju_path q0 = ju_idx(&qi, 0), q1 = ju_idx(&qi, 1);
            if (ju_get_int(r->d, &q0, e->child, 1, 65535, &x, r->err, r->err_size) ||
                ju_get_int(r->d, &q1, e->child->next, 1, 65535, &y, r->err, r->err_size))
                return SGL_ATTN_E_INVALID;
            hd[i].qk = (uint16_t)x;
            hd[i].v = (uint16_t)y;
        } else {
            if (ju_get_int(r->d, &qi, e, 1, UINT32_MAX, &x, r->err, r->err_size)) return SGL_ATTN_E_INVALID;
            v[i] = (uint32_t)x;
        }
    }
    *n = (uint32_t)i;
    return SGL_ATTN_OK;
}

static const char *const caps_keys[] = {
    "index", "available", "reason", "name", "arch", "arch_major", "arch_minor", "arch_min", "arch_max",
    "memory_bytes", "compute_units", "score", "attn_kinds", "q_dtypes", "kv_dtypes", "state_dtypes", "features",
    "head_dims", "head_dim_qk_max", "head_dim_v_max", "page_sizes", "page_size_max", "max_gqa_ratio", NULL};

static int read_caps(reader *r, const ju_path *p, const cJSON *o, sgl_attn_caps *c) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    if (!cJSON_IsObject(o)) return ju_fail(r->d, p, 0, r->err, r->err_size, "expected a device object");
    if (ju_check_keys(r->d, p, o, caps_keys, r->err, r->err_size)) return SGL_ATTN_E_INVALID;
    int avail;
    const cJSON *a = member(o, "available");
    ju_path qa = ju_key(p, "available");
    if (!a) return ju_fail(r->d, &qa, 1, r->err, r->err_size, "missing \"available\"");
    if (ju_get_bool(r->d, &qa, a, &avail, r->err, r->err_size)) return SGL_ATTN_E_INVALID;
    c->available = (uint32_t)avail;
    char reason[SGL_ATTN_REASON_LONG_MAX];
    if (str_or_null(r, p, o, "reason", reason, sizeof reason) ||
        str_or_null(r, p, o, "name", c->device_name, sizeof c->device_name) ||
        str_or_null(r, p, o, "arch", c->arch_name, sizeof c->arch_name))
        return SGL_ATTN_E_INVALID;
    str_copy_words(c->reason, sizeof c->reason, reason);
    if (strlen(reason) >= sizeof c->reason) str_copy(c->reason_long, sizeof c->reason_long, reason);
    int64_t v;
    if (int_or_null(r, p, o, "arch_major", 0, 1000, -1, &v)) return SGL_ATTN_E_INVALID;
    c->arch_major = (int32_t)v;
    if (int_or_null(r, p, o, "arch_minor", 0, 1000, -1, &v)) return SGL_ATTN_E_INVALID;
    c->arch_minor = (int32_t)v;
    if (arch_pair(r, p, o, "arch_min", &c->arch_min_major, &c->arch_min_minor) ||
        arch_pair(r, p, o, "arch_max", &c->arch_max_major, &c->arch_max_minor))
        return SGL_ATTN_E_INVALID;
    if (int_or_null(r, p, o, "memory_bytes", 1, INT64_MAX, 0, &v)) return SGL_ATTN_E_INVALID;
    c->memory_bytes = (uint64_t)v;
    if (int_or_null(r, p, o, "compute_units", 1, UINT32_MAX, 0, &v)) return SGL_ATTN_E_INVALID;
    c->compute_units = (uint32_t)v;
    const cJSON *s = member(o, "score");
    ju_path qs = ju_key(p, "score");
    if (!s) return ju_fail(r->d, &qs, 1, r->err, r->err_size, "missing \"score\"");
    if (ju_get_int(r->d, &qs, s, INT32_MIN, INT32_MAX, &v, r->err, r->err_size)) return SGL_ATTN_E_INVALID;
    c->score = (int32_t)v;
    if (bits(r, p, o, "attn_kinds", kind_names, COUNT(kind_names), &c->attn_kinds) ||
        bits(r, p, o, "q_dtypes", dtype_names, COUNT(dtype_names), &c->q_dtypes) ||
        bits(r, p, o, "kv_dtypes", dtype_names, COUNT(dtype_names), &c->kv_dtypes) ||
        bits(r, p, o, "state_dtypes", dtype_names, COUNT(dtype_names), &c->state_dtypes) ||
        bits(r, p, o, "features", feature_names, COUNT(feature_names), &c->features))
        return SGL_ATTN_E_INVALID;
    if (uint_list(r, p, o, "head_dims", NULL, &c->n_head_dims, 1, c->head_dims) ||
        uint_list(r, p, o, "page_sizes", c->page_sizes, &c->n_page_sizes, 0, NULL))
        return SGL_ATTN_E_INVALID;
    if (int_or_null(r, p, o, "head_dim_qk_max", 1, INT32_MAX - 1, 0, &v)) return SGL_ATTN_E_INVALID;
    c->head_dim_qk_max = (uint32_t)v;
    if (int_or_null(r, p, o, "head_dim_v_max", 1, INT32_MAX - 1, 0, &v)) return SGL_ATTN_E_INVALID;
    c->head_dim_v_max = (uint32_t)v;
    if (int_or_null(r, p, o, "page_size_max", 1, INT32_MAX - 1, 0, &v)) return SGL_ATTN_E_INVALID;
    c->page_size_max = (uint32_t)v;
    if (int_or_null(r, p, o, "max_gqa_ratio", 1, INT32_MAX - 1, 0, &v)) return SGL_ATTN_E_INVALID;
    c->max_gqa_ratio = (uint32_t)v;
    char why[256];
    if (plugin_caps_check(c, why, sizeof why))
        return ju_fail(r->d, p, 0, r->err, r->err_size, "caps the host refuses: %s", why);
    return SGL_ATTN_OK;
}

/* Entry i of "plugins": its devices, or one unavailable device saying what
 * that machine's host said about the file (a plugin that did not load
 * there).  Returns SGL_ATTN_OK with *out set, or an error at the entry. */
static int read_entry(reader *r, const cJSON *e, int i, sgl_attn_caps **out, uint32_t *n_out, char *why,
                      size_t why_size) {
    ju_path top = {0};
    ju_path pp = ju_key(&top, "plugins");
    ju_path pi = ju_idx(&pp, i);
    *out = NULL;
    *n_out = 0;
    if (!cJSON_IsObject(e)) return ju_fail(r->d, &pi, 0, r->err, r->err_size, "expected a plugin object");
    const cJSON *st = member(e, "status");
    if (!cJSON_IsString(st)) {
        ju_path q = ju_key(&pi, "status");
        return ju_fail(r->d, &q, !st, r->err, r->err_size, "expected the plugin's status, a string");
    }
    const cJSON *devs = member(e, "devices");
    ju_path pd = ju_key(&pi, "devices");
    if (!cJSON_IsArray(devs) || cJSON_GetArraySize(devs) > MAX_FILE_DEVICES)
        return ju_fail(r->d, &pd, !devs, r->err, r->err_size, "expected an array of at most %d devices",
                       MAX_FILE_DEVICES);
    uint32_t nd = (uint32_t)cJSON_GetArraySize(devs);
    int ran = !strcmp(st->valuestring, "usable") || !strcmp(st->valuestring, "unavailable");
    sgl_attn_caps *v = calloc(nd ? nd : 1, sizeof *v);
    if (!v) return SGL_ATTN_E_NOMEM;
    int k = 0;
    for (const cJSON *d = devs->child; d; d = d->next, k++) {
        ju_path pk = ju_idx(&pd, k);
        if (read_caps(r, &pk, d, &v[k])) {
            free(v);
            return SGL_ATTN_E_INVALID;
        }
    }
    if (!ran || nd == 0) {
        const cJSON *rs = member(e, "reason");
        memset(v, 0, sizeof *v);
        v[0].struct_size = sizeof v[0];
        v[0].arch_major = v[0].arch_minor = -1;
        v[0].arch_min_major = v[0].arch_min_minor = v[0].arch_max_major = v[0].arch_max_minor = -1;
        str_printf(why, why_size, "%s on that machine%s%s", st->valuestring, cJSON_IsString(rs) ? ": " : "",
                   cJSON_IsString(rs) ? rs->valuestring : "");
        str_copy_words(v[0].reason, sizeof v[0].reason, why);
        if (strlen(why) >= sizeof v[0].reason) str_copy(v[0].reason_long, sizeof v[0].reason_long, why);
        nd = 1;
    }
    *out = v;
    *n_out = nd;
    return SGL_ATTN_OK;
}

/* The entry of plugin `name` that ran there (a shadowed copy did not). */
static int caps_of(reader *r, const cJSON *plugins, const char *name, sgl_attn_caps **out, uint32_t *n_out,
                   char *why, size_t why_size, int *found) {
    int i = 0;
    *found = 0;
    for (const cJSON *e = plugins->child; e; e = e->next, i++) {
        const cJSON *n = member(e, "name"), *st = member(e, "status");
        if (!cJSON_IsString(n) || strcmp(n->valuestring, name)) continue;
        if (cJSON_IsString(st) && !strcmp(st->valuestring, "shadowed")) continue;
        *found = 1;
        return read_entry(r, e, i, out, n_out, why, why_size);
    }
    return SGL_ATTN_OK;
}

int caps_file_apply(sgl_attn_host *h, const char *path, char *err, size_t err_size) {
    char *text = NULL;
    size_t len = 0;
    int rc = read_regular(path, &text, &len, err, err_size);
    if (rc) return rc;
    ju_doc d;
    rc = ju_parse(&d, text, len, path, err, err_size);
    if (rc) {
        free(text);
        return rc;
    }
    reader r = {&d, err, err_size};
    ju_path top = {0};
    const cJSON *root = d.root;
    const cJSON *schema = cJSON_IsObject(root) ? member(root, "schema") : NULL;
    const cJSON *cmd = cJSON_IsObject(root) ? member(root, "command") : NULL;
    const cJSON *plugins = cJSON_IsObject(root) ? member(root, "plugins") : NULL;
    if (!cJSON_IsObject(root) || !cJSON_IsNumber(schema) || !cJSON_IsString(cmd) ||
        strcmp(cmd->valuestring, "devices") || !cJSON_IsArray(plugins)) {
        rc = ju_fail(&d, &top, 0, err, err_size,
                     "not a machine file: expected the output of `attnctl devices --json` (an object with "
                     "\"schema\", \"command\": \"devices\" and \"plugins\")");
        goto done;
    }
    if (schema->valuedouble != CAPS_FILE_SCHEMA) {
        ju_path q = ju_key(&top, "schema");
        rc = ju_fail(&d, &q, 0, err, err_size, "schema %g; this host reads schema %d (from attnctl %s)",
                     schema->valuedouble, CAPS_FILE_SCHEMA, SGL_ATTN_VERSION);
        goto done;
    }
    /* Every entry is read, whether a plugin here needs it or not: a bad file
     * is refused whole, where it is bad. */
    int idx = 0;
    for (const cJSON *e = plugins->child; e; e = e->next, idx++) {
        sgl_attn_caps *v = NULL;
        uint32_t n = 0;
        char why[SGL_ATTN_REASON_LONG_MAX];
        rc = read_entry(&r, e, idx, &v, &n, why, sizeof why);
        free(v);
        if (rc) goto done;
    }
    for (size_t i = 0; i < h->n_plugins; i++) {
        plugin_entry *e = &h->plugins[i];
        if (!e->loaded || (e->info.status != SGL_ATTN_PLUGIN_USABLE && e->info.status != SGL_ATTN_PLUGIN_UNAVAILABLE))
            continue;
        sgl_attn_caps *v = NULL;
        uint32_t n = 0;
        int found;
        char why[SGL_ATTN_REASON_LONG_MAX];
        if ((rc = caps_of(&r, plugins, e->info.name, &v, &n, why, sizeof why, &found))) goto done;
        if (!found) {
            if (!(v = calloc(1, sizeof *v))) {
                rc = SGL_ATTN_E_NOMEM;
                str_copy(err, err_size, "out of memory");
                goto done;
            }
            v->struct_size = sizeof *v;
            v->arch_major = v->arch_minor = -1;
            v->arch_min_major = v->arch_min_minor = v->arch_max_major = v->arch_max_minor = -1;
            str_printf(why, sizeof why, "not on the machine of %s", path);
            str_copy_words(v->reason, sizeof v->reason, why);
            if (strlen(why) >= sizeof v->reason) str_copy(v->reason_long, sizeof v->reason_long, why);
            n = 1;
        }
        free(e->caps);
        e->caps = v;
        e->n_caps = n;
        probe_set_status(&e->info, e->caps, e->n_caps);
    }
    /* What ran there and is not here cannot be a candidate: say so. */
    for (const cJSON *e = plugins->child; e; e = e->next) {
        const cJSON *n = member(e, "name"), *st = member(e, "status");
        if (!cJSON_IsString(n) || !cJSON_IsString(st) || strcmp(st->valuestring, "usable")) continue;
        int here = 0;
        for (size_t i = 0; i < h->n_plugins && !here; i++)
            here = h->plugins[i].loaded && !strcmp(h->plugins[i].info.name, n->valuestring);
        if (!here)
            hlog_printf(&h->log, SGL_ATTN_LOG_WARN,
                        "caps file %s: plugin %s is usable on that machine but not loaded here, so it is no "
                        "candidate",
                        path, n->valuestring);
    }
    str_copy(h->caps_file, sizeof h->caps_file, path);
    rc = SGL_ATTN_OK;
done:
    ju_doc_free(&d);
    free(text);
    return rc;
}
