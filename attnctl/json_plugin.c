/* json_plugin.c - a plugin and a device's caps as --json objects (schema 1),
 * shared by list-plugins, devices (the machine file) and report.  The bit
 * names and nulls are the ones host/caps_file.c reads back. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static cJSON *bit_names(uint32_t bits, const char *const *names, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        if (bits & (1u << i)) cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
    return a;
}

/* [major, minor], null for -1 parts; null when both are -1. */
static cJSON *arch_pair(int32_t major, int32_t minor) {
    if (major < 0 && minor < 0) return cJSON_CreateNull();
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, attnctl_json_num(major >= 0, major));
    cJSON_AddItemToArray(a, attnctl_json_num(minor >= 0, minor));
    return a;
}

/* The names here are the ones host/caps_file.c reads back. */
cJSON *attnctl_json_caps(const sgl_attn_caps *c, uint32_t index) {
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "fp8_e4m3", "fp8_e5m2"};
    static const char *const kinds[] = {"mha", "gqa", "mqa", "mla", "cross"};
    static const char *const feats[] = {"extend",      "decode",     "sliding_window",
                                        "softcap",     "sinks",      "graph_capture",
                                        "spec_decode", "mla_extend", "diff_head_dims",
                                        /* ABI 1.2 */
                                        "tree_mask", "draft_extend", "ragged", "lse", "page_table", "slot_map", "caller_state", "attn_types", "encoder_loc", "fp8_scales", "mla_rope_split", "graph_device_plan", "graph_verify", "strided_qkv",
                                        "dual_chunk"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddBoolToObject(o, "available", c->available != 0);
    cJSON_AddItemToObject(o, "reason", attnctl_json_str(sgl_attn_caps_reason(c)));
    cJSON_AddItemToObject(o, "name", attnctl_json_str(c->device_name));
    cJSON_AddItemToObject(o, "arch", attnctl_json_str(c->arch_name));
    cJSON_AddItemToObject(o, "arch_major", attnctl_json_num(c->arch_major >= 0, c->arch_major));
    cJSON_AddItemToObject(o, "arch_minor", attnctl_json_num(c->arch_minor >= 0, c->arch_minor));
    cJSON_AddItemToObject(o, "arch_min", arch_pair(c->arch_min_major, c->arch_min_minor));
    cJSON_AddItemToObject(o, "arch_max", arch_pair(c->arch_max_major, c->arch_max_minor));
    cJSON_AddItemToObject(o, "memory_bytes", attnctl_json_num(c->memory_bytes > 0, (double)c->memory_bytes));
    cJSON_AddItemToObject(o, "compute_units", attnctl_json_num(c->compute_units > 0, c->compute_units));
    cJSON_AddNumberToObject(o, "score", c->score);
    cJSON_AddItemToObject(o, "attn_kinds", bit_names(c->attn_kinds, kinds, COUNT(kinds)));
    cJSON_AddItemToObject(o, "q_dtypes", bit_names(c->q_dtypes, dtypes, COUNT(dtypes)));
    cJSON_AddItemToObject(o, "kv_dtypes", bit_names(c->kv_dtypes, dtypes, COUNT(dtypes)));
    cJSON_AddItemToObject(o, "state_dtypes", bit_names(c->state_dtypes, dtypes, COUNT(dtypes)));
    cJSON_AddItemToObject(o, "features", bit_names(c->features, feats, COUNT(feats)));
    if (c->n_head_dims) {
        cJSON *hd = cJSON_AddArrayToObject(o, "head_dims");
        for (uint32_t i = 0; i < c->n_head_dims && i < SGL_ATTN_MAX_LIST; i++) {
            cJSON *p = cJSON_CreateArray();
            cJSON_AddItemToArray(p, cJSON_CreateNumber(c->head_dims[i].qk));
            cJSON_AddItemToArray(p, cJSON_CreateNumber(c->head_dims[i].v));
            cJSON_AddItemToArray(hd, p);
        }
    } else {
        cJSON_AddNullToObject(o, "head_dims");
    }
    /* a limit of 0 or >= INT32_MAX is no limit: null */
#define LIMIT(v) attnctl_json_num((v) > 0 && (v) < INT32_MAX, (v))
    cJSON_AddItemToObject(o, "head_dim_qk_max", LIMIT(c->head_dim_qk_max));
    cJSON_AddItemToObject(o, "head_dim_v_max", LIMIT(c->head_dim_v_max));
    if (c->n_page_sizes) {
        cJSON *ps = cJSON_AddArrayToObject(o, "page_sizes");
        for (uint32_t i = 0; i < c->n_page_sizes && i < SGL_ATTN_MAX_LIST; i++)
            cJSON_AddItemToArray(ps, cJSON_CreateNumber(c->page_sizes[i]));
    } else {
        cJSON_AddNullToObject(o, "page_sizes");
    }
    cJSON_AddItemToObject(o, "page_size_max", LIMIT(c->page_size_max));
    cJSON_AddItemToObject(o, "max_gqa_ratio", LIMIT(c->max_gqa_ratio));
#undef LIMIT
    return o;
}

cJSON *attnctl_json_plugin(const sgl_attn_host *h, size_t i) {
    sgl_attn_plugin_info in = {.struct_size = sizeof in};
    if (sgl_attn_host_plugin_info(h, i, &in) != SGL_ATTN_OK) return NULL;
    int d = attnctl_has_descriptor(&in);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "name", attnctl_json_str(d ? in.name : NULL));
    cJSON_AddItemToObject(o, "version", attnctl_json_str(d ? in.version : NULL));
    cJSON_AddItemToObject(o, "description", attnctl_json_str(d ? in.description : NULL));
    cJSON_AddItemToObject(o, "license", attnctl_json_str(d ? in.license : NULL));
    cJSON_AddItemToObject(o, "path", attnctl_json_str(in.path));
    cJSON_AddItemToObject(o, "source", attnctl_json_str(in.source));
    cJSON_AddItemToObject(o, "platform", attnctl_json_str(d ? sgl_attn_platform_name(in.platform) : NULL));
    cJSON_AddItemToObject(o, "role", attnctl_json_str(attnctl_role_name(&in)));
    cJSON_AddItemToObject(o, "hybrid_kind", attnctl_json_str(attnctl_hybrid_kind(&in)));
    cJSON_AddStringToObject(o, "status", sgl_attn_plugin_status_name(in.status));
    cJSON_AddItemToObject(o, "reason", attnctl_json_str(sgl_attn_host_plugin_reason(h, i)));
    if (in.abi_major || in.abi_minor) {
        char abi[16];
        snprintf(abi, sizeof abi, "%u.%u", in.abi_major, in.abi_minor);
        cJSON_AddStringToObject(o, "abi", abi);
    } else {
        cJSON_AddNullToObject(o, "abi");
    }
    cJSON *al = cJSON_AddArrayToObject(o, "aliases");
    for (uint32_t k = 0; k < in.n_aliases && k < SGL_ATTN_MAX_LIST; k++)
        cJSON_AddItemToArray(al, cJSON_CreateString(in.aliases[k]));
    cJSON *mt = cJSON_AddArrayToObject(o, "model_types");
    for (uint32_t k = 0; k < in.n_model_types && k < SGL_ATTN_MAX_LIST; k++)
        cJSON_AddItemToArray(mt, cJSON_CreateString(in.model_types[k]));
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    for (size_t k = 0; k < sgl_attn_host_plugin_note_count(h, i); k++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(sgl_attn_host_plugin_note(h, i, k)));
    cJSON *devs = cJSON_AddArrayToObject(o, "devices");
    for (uint32_t k = 0; k < in.n_devices; k++) {
        sgl_attn_caps cp = {.struct_size = sizeof cp};
        if (sgl_attn_host_plugin_caps(h, i, k, &cp) == SGL_ATTN_OK) cJSON_AddItemToArray(devs, attnctl_json_caps(&cp, k));
    }
    return o;
}

