/* negotiate.c - ABI negotiation, then descriptor and capability checks.
 *
 * The entry point is the first plugin code that runs.  The host offers
 * {major 1, minor 0..SGL_ATTN_ABI_MINOR}; a plugin of the same major and an
 * equal or older minor loads.  Everything a plugin hands over is checked
 * before the host relies on it: a bad descriptor becomes a status with the
 * field and the value, never a crash later. */
#include <string.h>

#include "host_internal.h"

#define MINOR_RANGE_OK(minor) ((minor) <= SGL_ATTN_ABI_MINOR)

int plugin_negotiate(sgl_attn_plugin_entry_fn entry, const sgl_attn_host_api *api,
                     sgl_attn_plugin *desc, uint16_t *abi_major, uint16_t *abi_minor, char *why,
                     size_t why_size) {
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    memset(desc, 0, sizeof *desc);
    *abi_major = *abi_minor = 0;

    int rc = entry(api, &ans);
    ans.refusal[sizeof ans.refusal - 1] = 0;
    *abi_major = ans.abi_major;
    *abi_minor = ans.abi_minor;
    const char *what = ans.abi_major != SGL_ATTN_ABI_MAJOR ? "another major"
                       : !MINOR_RANGE_OK(ans.abi_minor) ? "newer minor"
                                                        : NULL;
    if (rc == SGL_ATTN_E_ABI) {
        str_printf(why, why_size, "plugin ABI %u.%u, host ABI %d.%d: %s%s%s", ans.abi_major,
                   ans.abi_minor, SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR,
                   what ? what : "the plugin refused", ans.refusal[0] ? ": " : "", ans.refusal);
        return SGL_ATTN_PLUGIN_ABI_MISMATCH;
    }
    if (what) {
        str_printf(why, why_size, "plugin ABI %u.%u, host ABI %d.%d: %s", ans.abi_major,
                   ans.abi_minor, SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR, what);
        return SGL_ATTN_PLUGIN_ABI_MISMATCH;
    }
    if (rc != SGL_ATTN_OK) {
        str_printf(why, why_size, "entry point failed with %s (%d)%s%s", sgl_attn_status_name(rc), rc,
                   ans.refusal[0] ? ": " : "", ans.refusal);
        return SGL_ATTN_PLUGIN_LOAD_ERROR;
    }
    const sgl_attn_plugin *p = ans.plugin;
    if (!p) {
        str_copy(why, why_size, "entry point answered OK but gave no descriptor (plugin is NULL)");
        return SGL_ATTN_PLUGIN_LOAD_ERROR;
    }
    if (p->struct_size < SGL_ATTN_PLUGIN_SIZE_V1_0) {
        str_printf(why, why_size,
                   "descriptor struct_size %u is smaller than ABI %d.0 requires (%u): plugin ABI %u.%u, "
                   "host ABI %d.%d",
                   p->struct_size, SGL_ATTN_ABI_MAJOR, SGL_ATTN_PLUGIN_SIZE_V1_0, ans.abi_major,
                   ans.abi_minor, SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR);
        return SGL_ATTN_PLUGIN_ABI_MISMATCH;
    }
    /* Only the bytes the plugin declared; later fields keep their zero default. */
    size_t n = p->struct_size < sizeof *desc ? p->struct_size : sizeof *desc;
    memcpy(desc, p, n);
    desc->struct_size = sizeof *desc;
    if (desc->abi_major != ans.abi_major || desc->abi_minor != ans.abi_minor) {
        str_printf(why, why_size, "descriptor says ABI %u.%u but the entry point answered %u.%u",
                   desc->abi_major, desc->abi_minor, ans.abi_major, ans.abi_minor);
        return SGL_ATTN_PLUGIN_ABI_MISMATCH;
    }
    if (plugin_descriptor_check(desc, why, why_size) != 0) return SGL_ATTN_PLUGIN_LOAD_ERROR;
    return SGL_ATTN_PLUGIN_USABLE;
}

/* A string the plugin owns: NULL allowed or not, bounded scan, printable. */
static int check_string(const char *s, const char *field, size_t max, int required, char *why,
                        size_t size) {
    if (!s) {
        if (required) str_printf(why, size, "descriptor %s is NULL", field);
        return required ? -1 : 0;
    }
    size_t n = strnlen(s, max + 1);
    if (n > max) {
        str_printf(why, size, "descriptor %s is longer than %zu characters (\"%.24s...\")", field, max,
                   s);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            str_printf(why, size, "descriptor %s has control character 0x%02x at position %zu", field,
                       (unsigned char)s[i], i);
            return -1;
        }
    return 0;
}

static int check_name(const char *name, char *why, size_t size) {
    if (!name) {
        str_copy(why, size, "descriptor name is NULL (expected [a-z0-9_]{1,63})");
        return -1;
    }
    size_t n = strnlen(name, SGL_ATTN_NAME_MAX + 1);
    if (n == 0) {
        str_copy(why, size, "descriptor name is empty (expected [a-z0-9_]{1,63})");
        return -1;
    }
    if (n > SGL_ATTN_NAME_MAX) {
        str_printf(why, size, "descriptor name is longer than %d characters (\"%.24s...\")",
                   SGL_ATTN_NAME_MAX, name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
            if ((unsigned char)c >= 0x20 && c != 0x7f)
                str_printf(why, size, "descriptor name \"%s\" has '%c' at position %zu (expected [a-z0-9_])",
                           name, c, i);
            else
                str_printf(why, size, "descriptor name has byte 0x%02x at position %zu (expected [a-z0-9_])",
                           (unsigned char)c, i);
            return -1;
        }
    }
    return 0;
}

/* A NULL-terminated list of short strings: at most SGL_ATTN_MAX_LIST. */
static int check_list(const char *const *list, const char *field, char *why, size_t size) {
    if (!list) return 0;
    for (size_t i = 0;; i++) {
        if (i > SGL_ATTN_MAX_LIST) {
            str_printf(why, size, "descriptor %s has more than %d entries (or no NULL terminator)", field,
                       SGL_ATTN_MAX_LIST);
            return -1;
        }
        if (!list[i]) return 0;
        char f[48];
        str_printf(f, sizeof f, "%s[%zu]", field, i);
        if (check_string(list[i], f, 31, 1, why, size)) return -1;
        if (!list[i][0]) {
            str_printf(why, size, "descriptor %s is empty", f);
            return -1;
        }
    }
}

/* device_ops, when given, is what the harness and engines stage tensors
 * with: the five memory calls must all be there (the stream pair is
 * optional, but as a pair; error_string is optional). */
static int check_device_ops(const sgl_attn_device_ops *o, char *why, size_t why_size) {
    if (!o) return 0;
    const size_t need = offsetof(sgl_attn_device_ops, synchronize) + sizeof o->synchronize;
    if (o->struct_size < need) {
        str_printf(why, why_size, "descriptor device_ops struct_size %u is smaller than ABI 1.0's (%zu)",
                   o->struct_size, need);
        return -1;
    }
    const struct {
        const char *name;
        int set;
    } m[] = {{"alloc", o->alloc != NULL},
             {"free", o->free != NULL},
             {"copy_to_device", o->copy_to_device != NULL},
             {"copy_to_host", o->copy_to_host != NULL},
             {"synchronize", o->synchronize != NULL}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!m[i].set) {
            str_printf(why, why_size, "descriptor device_ops.%s is NULL (every memory call is required)", m[i].name);
            return -1;
        }
    const size_t streams = offsetof(sgl_attn_device_ops, stream_destroy) + sizeof o->stream_destroy;
    if (o->struct_size >= streams && (o->stream_create == NULL) != (o->stream_destroy == NULL)) {
        str_printf(why, why_size, "descriptor device_ops.%s is NULL but %s is set (the stream calls come as a pair)",
                   o->stream_create ? "stream_destroy" : "stream_create",
                   o->stream_create ? "stream_create" : "stream_destroy");
        return -1;
    }
    return 0;
}

int plugin_descriptor_check(const sgl_attn_plugin *d, char *why, size_t why_size) {
    if (check_name(d->name, why, why_size)) return -1;
    if (check_string(d->version, "version", 31, 0, why, why_size) ||
        check_string(d->description, "description", 159, 0, why, why_size) ||
        check_string(d->license, "license", 31, 0, why, why_size))
        return -1;
    if (d->platform < 0 || d->platform >= SGL_ATTN_PLATFORM_COUNT_) {
        str_printf(why, why_size, "descriptor platform has unknown value %d (expected 0..%d)", d->platform,
                   SGL_ATTN_PLATFORM_COUNT_ - 1);
        return -1;
    }
    if (d->role < SGL_ATTN_ROLE_FULL || d->role >= SGL_ATTN_ROLE_COUNT_) {
        str_printf(why, why_size, "descriptor role has unknown value %d (expected %d..%d)", d->role,
                   SGL_ATTN_ROLE_FULL, SGL_ATTN_ROLE_COUNT_ - 1);
        return -1;
    }
    if (d->hybrid_kind < 0 || d->hybrid_kind >= SGL_ATTN_HYBRID_COUNT_) {
        str_printf(why, why_size, "descriptor hybrid_kind has unknown value %d (expected 0..%d)",
                   d->hybrid_kind, SGL_ATTN_HYBRID_COUNT_ - 1);
        return -1;
    }
    if (d->role == SGL_ATTN_ROLE_HYBRID && d->hybrid_kind == SGL_ATTN_HYBRID_NONE) {
        str_copy(why, why_size, "descriptor role is hybrid but hybrid_kind is none");
        return -1;
    }
    if (d->role != SGL_ATTN_ROLE_HYBRID && d->hybrid_kind != SGL_ATTN_HYBRID_NONE) {
        str_printf(why, why_size, "descriptor hybrid_kind is %s but the role is not hybrid",
                   sgl_attn_hybrid_kind_name(d->hybrid_kind));
        return -1;
    }
    if (d->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM &&
        (check_string(d->custom_kind, "custom_kind", 31, 1, why, why_size) || !d->custom_kind[0])) {
        if (d->custom_kind && !d->custom_kind[0])
            str_copy(why, why_size, "descriptor custom_kind is empty (a custom hybrid names its kind)");
        return -1;
    }
    if (check_list(d->aliases, "aliases", why, why_size) ||
        check_list(d->model_types, "model_types", why, why_size))
        return -1;
    if (!d->probe) {
        str_copy(why, why_size, "descriptor has no probe function (probe is NULL)");
        return -1;
    }
    if (!d->create) {
        str_copy(why, why_size, "descriptor has no create function (create is NULL)");
        return -1;
    }
    return check_device_ops(d->device_ops, why, why_size);
}

static int terminated(const char *s, size_t size) { return memchr(s, 0, size) != NULL; }

int plugin_caps_check(const sgl_attn_caps *c, char *why, size_t why_size) {
    if (!terminated(c->reason, sizeof c->reason) || !terminated(c->device_name, sizeof c->device_name) ||
        !terminated(c->arch_name, sizeof c->arch_name) || !terminated(c->reason_long, sizeof c->reason_long)) {
        str_printf(why, why_size, "caps %s is not NUL-terminated",
                   !terminated(c->reason, sizeof c->reason)           ? "reason"
                   : !terminated(c->device_name, sizeof c->device_name) ? "device_name"
                   : !terminated(c->arch_name, sizeof c->arch_name)     ? "arch_name"
                                                                        : "reason_long");
        return -1;
    }
    if (c->available > 1) {
        str_printf(why, why_size, "caps available is %u (expected 0 or 1)", c->available);
        return -1;
    }
    const uint32_t dt_all = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64 |
                            SGL_ATTN_DT_FP8_E4M3;
    const uint32_t kind_all = (SGL_ATTN_KIND_CROSS << 1) - 1;
    const uint32_t feat_all = ((SGL_ATTN_FEAT_DIFF_HEAD_DIMS << 1) - 1) | SGL_ATTN_FEAT_DUAL_CHUNK;
    struct { const char *name; uint32_t v, all; } bits[] = {
        {"q_dtypes", c->q_dtypes, dt_all},     {"kv_dtypes", c->kv_dtypes, dt_all},
        {"state_dtypes", c->state_dtypes, dt_all}, {"attn_kinds", c->attn_kinds, kind_all},
        {"features", c->features, feat_all},
    };
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (bits[i].v & ~bits[i].all) {
            str_printf(why, why_size, "caps %s has unknown bits 0x%x", bits[i].name,
                       bits[i].v & ~bits[i].all);
            return -1;
        }
    if (c->n_head_dims > SGL_ATTN_MAX_LIST || c->n_page_sizes > SGL_ATTN_MAX_LIST) {
        str_printf(why, why_size, "caps %s is %u (the limit is %d)",
                   c->n_head_dims > SGL_ATTN_MAX_LIST ? "n_head_dims" : "n_page_sizes",
                   c->n_head_dims > SGL_ATTN_MAX_LIST ? c->n_head_dims : c->n_page_sizes,
                   SGL_ATTN_MAX_LIST);
        return -1;
    }
    for (uint32_t i = 0; i < c->n_head_dims; i++)
        if (c->head_dims[i].qk == 0 || c->head_dims[i].v == 0) {
            str_printf(why, why_size, "caps head_dims[%u] is (%u, %u) (expected both >= 1)", i,
                       c->head_dims[i].qk, c->head_dims[i].v);
            return -1;
        }
    for (uint32_t i = 0; i < c->n_page_sizes; i++)
        if (c->page_sizes[i] < 1) {
            str_printf(why, why_size, "caps page_sizes[%u] is %u (expected >= 1)", i, c->page_sizes[i]);
            return -1;
        }
    /* Arch: -1 = none/unbounded; a bounded range must not be inverted. */
    const int32_t a[6] = {c->arch_major, c->arch_minor, c->arch_min_major,
                          c->arch_min_minor, c->arch_max_major, c->arch_max_minor};
    static const char *const an[6] = {"arch_major", "arch_minor", "arch_min_major",
                                      "arch_min_minor", "arch_max_major", "arch_max_minor"};
    for (int i = 0; i < 6; i++)
        if (a[i] < -1 || a[i] > 1000) {
            str_printf(why, why_size, "caps %s is %d (expected -1..1000)", an[i], a[i]);
            return -1;
        }
    if (c->arch_min_major >= 0 && c->arch_max_major >= 0 &&
        (c->arch_min_major > c->arch_max_major ||
         (c->arch_min_major == c->arch_max_major && c->arch_min_minor > c->arch_max_minor &&
          c->arch_max_minor >= 0))) {
        str_printf(why, why_size, "caps arch range %d.%d..%d.%d is inverted", c->arch_min_major,
                   c->arch_min_minor, c->arch_max_major, c->arch_max_minor);
        return -1;
    }
    return 0;
}

static void copy_list(char dst[][32], uint32_t *n, const char *const *src) {
    *n = 0;
    for (size_t i = 0; src && src[i] && i < SGL_ATTN_MAX_LIST; i++) str_copy(dst[(*n)++], 32, src[i]);
}

void host_fill_info(sgl_attn_plugin_info *in, const sgl_attn_plugin *d, uint16_t maj, uint16_t min) {
    str_copy(in->name, sizeof in->name, d->name);
    str_copy(in->version, sizeof in->version, d->version);
    str_copy(in->description, sizeof in->description, d->description);
    str_copy(in->license, sizeof in->license, d->license);
    in->platform = d->platform;
    in->role = d->role;
    in->hybrid_kind = d->hybrid_kind;
    str_copy(in->custom_kind, sizeof in->custom_kind, d->custom_kind);
    in->abi_major = maj;
    in->abi_minor = min;
    copy_list(in->aliases, &in->n_aliases, d->aliases);
    copy_list(in->model_types, &in->n_model_types, d->model_types);
}
