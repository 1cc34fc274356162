/* sdk_option.c - see sdk_option.h. */
#include "sdk_option.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sdk_text.h"

sgl_sdk_opts sgl_sdk_opts_of(const sgl_attn_create_args *a, const char *plugin) {
    sgl_sdk_opts o = {NULL, plugin, NULL, 0};
    if (!a) return o;
    o.host = sgl_sdk_create_host(a);
    o.err = a->error;
    o.err_size = a->error ? a->error_size : 0;
    return o;
}

static const char *conf_value(const sgl_attn_host_api *h, const char *plugin, const char *key) {
    if (!h || !key || h->struct_size < offsetof(sgl_attn_host_api, get_option) + sizeof h->get_option ||
        !h->get_option)
        return NULL;
    return h->get_option(h->host_ctx, plugin, key);
}

const char *sgl_sdk_opt_raw(const sgl_sdk_opts *o, const char *key, const char *env, char *from, size_t from_size) {
    /* secure_getenv: a setuid or setgid process takes no tuning from its caller's environment */
    const char *v = env ? secure_getenv(env) : NULL;
    if (v && *v) {
        sgl_sdk_str(from, from_size, "environment %s", env);
        return v;
    }
    v = conf_value(o->host, o->plugin, key);
    if (v) sgl_sdk_str(from, from_size, "plugin option %s.%s", o->plugin, key);
    return v;
}

static int bad(const sgl_sdk_opts *o, const char *from, const char *v, const char *want) {
    sgl_sdk_str(o->err, o->err_size, "%s: %s = \"%.64s\": expected %s", o->plugin, from, v, want);
    return SGL_ATTN_E_INVALID;
}

int sgl_sdk_opt_int(const sgl_sdk_opts *o, const char *key, const char *env, int64_t def, int64_t lo, int64_t hi,
                    int64_t *out) {
    char from[96];
    const char *v = sgl_sdk_opt_raw(o, key, env, from, sizeof from);
    *out = def;
    if (!v || !*v || !strcasecmp(v, "auto")) return SGL_ATTN_OK;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        char want[96];
        sgl_sdk_str(want, sizeof want, "an integer %lld..%lld or auto", (long long)lo, (long long)hi);
        return bad(o, from, v, want);
    }
    *out = x;
    return SGL_ATTN_OK;
}

int sgl_sdk_opt_bool(const sgl_sdk_opts *o, const char *key, const char *env, int def, int *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
    char from[96];
    const char *v = sgl_sdk_opt_raw(o, key, env, from, sizeof from);
    *out = def;
    if (!v || !*v || !strcasecmp(v, "auto")) return SGL_ATTN_OK;
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) return *out = 1, SGL_ATTN_OK;
        if (!strcasecmp(v, no[i])) return *out = 0, SGL_ATTN_OK;
    }
    return bad(o, from, v, "1, true, yes, on, 0, false, no or off (or auto)");
}

int sgl_sdk_opt_choice(const sgl_sdk_opts *o, const char *key, const char *env, const char *const *names, int count,
                       int def, int *out) {
    char from[96];
    const char *v = sgl_sdk_opt_raw(o, key, env, from, sizeof from);
    *out = def;
    if (!v || !*v) return SGL_ATTN_OK;
    int has_auto = 0;
    for (int i = 0; i < count; i++) {
        if (!strcasecmp(v, names[i])) return *out = i, SGL_ATTN_OK;
        has_auto |= !strcasecmp(names[i], "auto");
    }
    if (!has_auto && !strcasecmp(v, "auto")) return SGL_ATTN_OK;
    char want[256] = "";
    for (int i = 0; i < count; i++)
        sgl_sdk_append(want, sizeof want, "%s%s", i == 0 ? "" : i + 1 == count ? " or " : ", ", names[i]);
    if (!has_auto) sgl_sdk_append(want, sizeof want, " (or auto)");
    return bad(o, from, v, want);
}

int sgl_sdk_opt_removed(const sgl_sdk_opts *o, const char *const *keys, const char *const *envs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char from[96];
        if (sgl_sdk_opt_raw(o, keys[i], envs ? envs[i] : NULL, from, sizeof from)) {
            sgl_sdk_str(o->err, o->err_size, "%s: %s is no longer an option (docs/lab/levers.md); unset it", o->plugin,
                        from);
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}
