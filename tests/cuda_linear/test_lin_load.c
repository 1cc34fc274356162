/* test_lin_load.c - the five built plugins load and describe themselves (no
 * GPU needed): entry and negotiation, descriptor fields (platform cuda, role
 * hybrid, kind, model types, device ops), the probe (with no device: index 0
 * unavailable with the runtime's words, index 1 not found), state size per
 * request, and create's refusals before any device work (no inner, a model
 * of another kind, float64 state, option values it does not know). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lt_check.h"
#include "sgl_attn_abi.h"


static void log_(void *c, int l, const char *p, const char *f, ...) { (void)c, (void)l, (void)p, (void)f; }

static const struct {
    const char *name;
    int kind;
    const char *model_type;
} kinds[] = {{"gdn_cuda", SGL_ATTN_HYBRID_GDN, "qwen3_next"},
             {"kda_cuda", SGL_ATTN_HYBRID_KDA, "kimi_linear"},
             {"mamba2_cuda", SGL_ATTN_HYBRID_MAMBA2, "nemotron_h"},
             {"short_conv_cuda", SGL_ATTN_HYBRID_SHORT_CONV, "lfm2"},
             {"lightning_cuda", SGL_ATTN_HYBRID_LIGHTNING, "minimax"}};

static void model_of(sgl_attn_model *m, int kind) {
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    m->num_layers = 4;
    m->num_q_heads = 4;
    m->num_kv_heads = 2;
    m->head_dim_qk = m->head_dim_v = 128;
    m->dtype = SGL_ATTN_DT_BF16;
    m->hybrid_kind = (uint32_t)kind;
    m->full_attention_mask[0] = 0xa;
    m->lin_num_k_heads = 2;
    m->lin_num_v_heads = 4;
    m->lin_head_k_dim = 128;
    m->lin_head_v_dim = 64;
    m->lin_conv_kernel = 4;
    m->lin_hidden = 256;
}

int main(int argc, char **argv) {
    const char *dir = lt_plugdir(argc, argv);
    sgl_attn_host_api api;
    memset(&api, 0, sizeof api);
    api.struct_size = sizeof api;
    api.abi_major = SGL_ATTN_ABI_MAJOR;
    api.abi_minor_max = SGL_ATTN_ABI_MINOR;
    api.log = log_;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.so", dir, kinds[k].name);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        LT_CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
        if (!h) continue;
        sgl_attn_plugin_entry_fn entry = (sgl_attn_plugin_entry_fn)dlsym(h, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
        sgl_attn_plugin_answer ans;
        memset(&ans, 0, sizeof ans);
        ans.struct_size = sizeof ans;
        LT_CHECK(entry && entry(&api, &ans) == SGL_ATTN_OK && ans.plugin, "%s: entry", kinds[k].name);
        const sgl_attn_plugin *p = ans.plugin;
        if (!p) {
            dlclose(h);
            continue;
        }
        LT_CHECK(!strcmp(p->name, kinds[k].name) && p->platform == SGL_ATTN_PLATFORM_CUDA &&
                     p->role == SGL_ATTN_ROLE_HYBRID && p->hybrid_kind == kinds[k].kind && p->device_ops &&
                     p->probe && p->create && p->state_bytes_per_request,
                 "%s: descriptor", kinds[k].name);
        int found = 0;
        for (const char *const *t = p->model_types; t && *t; t++) found |= !strcmp(*t, kinds[k].model_type);
        LT_CHECK(found, "%s serves %s", kinds[k].name, kinds[k].model_type);
        /* an old host is refused with a reason */
        sgl_attn_host_api old = api;
        old.abi_major = 0;
        memset(&ans, 0, sizeof ans);
        ans.struct_size = sizeof ans;
        LT_CHECK(entry(&old, &ans) == SGL_ATTN_E_ABI && ans.refusal[0], "%s: ABI refusal", kinds[k].name);

        sgl_attn_caps c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        LT_CHECK(p->probe(0, &c) == SGL_ATTN_OK, "%s: probe 0 answers", kinds[k].name);
        LT_CHECK(c.available || c.reason[0], "%s: unavailable without a reason", kinds[k].name);
        LT_CHECK(c.state_dtypes == (SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16) && (c.features & SGL_ATTN_FEAT_GRAPH_CAPTURE) &&
                     (c.features & SGL_ATTN_FEAT_CALLER_STATE),
                 "%s: caps (state dtypes, graph capture, caller-owned state)", kinds[k].name);
        if (!c.available) {
            sgl_attn_caps c1;
            memset(&c1, 0, sizeof c1);
            c1.struct_size = sizeof c1;
            LT_CHECK(p->probe(1, &c1) == SGL_ATTN_E_NOT_FOUND, "%s: probe 1 without devices", kinds[k].name);
            if (k == 0) printf("no GPU here: %s\n", c.reason);
        }
        sgl_attn_model m;
        model_of(&m, kinds[k].kind);
        const uint64_t sb = p->state_bytes_per_request(&m);
        LT_CHECK(sb > 0, "%s: state bytes", kinds[k].name);
        m.lin_state_dtype = SGL_ATTN_DT_BF16;
        LT_CHECK(p->state_bytes_per_request(&m) * 2 == sb, "%s: bf16 state is half", kinds[k].name);

        char err[512];
        sgl_attn_create_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.model = &m;
        a.max_reqs = 4;
        a.max_tokens = 64;
        a.max_context = 64;
        a.error = err;
        a.error_size = sizeof err;
        sgl_attn_backend *b = (sgl_attn_backend *)&a; /* must come back NULL */
        err[0] = 0;
        LT_CHECK(p->create(&a, &b) == SGL_ATTN_E_INVALID && !b && strstr(err, "inner"), "%s: no inner: %s",
                 kinds[k].name, err);
        sgl_attn_backend fake = {0};
        a.inner = &fake;
        fake.ops = (const sgl_attn_backend_ops *)&fake; /* never called: create refuses first */
        m.hybrid_kind = kinds[(k + 1) % 5].kind;
        LT_CHECK(p->create(&a, &b) == SGL_ATTN_E_UNSUPPORTED && !b && strstr(err, "this wrapper computes"),
                 "%s: other kind: %s", kinds[k].name, err);
        m.hybrid_kind = (uint32_t)kinds[k].kind;
        m.lin_state_dtype = SGL_ATTN_DT_F64;
        LT_CHECK(p->create(&a, &b) == SGL_ATTN_E_UNSUPPORTED && !b && strstr(err, "lin_state_dtype"),
                 "%s: f64 state: %s", kinds[k].name, err);
        /* the options: kernel, value_tile, segment_chunks, fused_chunk, decode_l2_ahead_blocks, fused_phase2 and
         * sync_check take their values or auto (a GPU-less create then fails later, at the device); anything else is
         * refused naming the option and what it accepts; the options of kernels that are gone (decode, ...,
         * prep_stream, decode_ring, decode_ring_grid, decode_ring_fold, fused_exp2, fused_tmma,
         * decode_prep_wave, decode_prep_wave_grid, decode_l2_ahead, kda_tc, decode_bulk_state, kda_pair, kda_ut_alias,
         * kda_exp2, kda_diag_lanes, mamba2_stream_prep, u_in_place, fused_phase2_8w, fused_phase2_lean,
         * fused_phase2_skip16, fused_phase2_mwarps, fused_phase2_group, fused_phase2_x) accept only auto */
        m.lin_state_dtype = SGL_ATTN_DT_F32;
        const struct {
            const char *env, *val, *refusal; /* NULL: passes the option check */
        } ov[] = {
            {"SGL_ATTN_LIN_KERNEL", "simple", NULL},
            {"SGL_ATTN_LIN_KERNEL", "FAST", NULL},
            {"SGL_ATTN_LIN_KERNEL", "auto", NULL},
            {"SGL_ATTN_LIN_KERNEL", "mma", "SGL_ATTN_LIN_KERNEL = \"mma\": expected simple or fast (or auto)"},
            {"SGL_ATTN_LIN_VT", "16", NULL},
            {"SGL_ATTN_LIN_VT", "auto", NULL},
            {"SGL_ATTN_LIN_VT", "24", "environment SGL_ATTN_LIN_VT = 24: expected 16, 32 or auto"},
            {"SGL_ATTN_LIN_VT", "64", "environment SGL_ATTN_LIN_VT = \"64\": expected an integer 0..32 or auto"},
            {"SGL_ATTN_LIN_SEGMENT", "auto", NULL},
            {"SGL_ATTN_LIN_SEGMENT", "0", NULL},
            {"SGL_ATTN_LIN_SEGMENT", "64", NULL},
            {"SGL_ATTN_LIN_SEGMENT", "-1", "environment SGL_ATTN_LIN_SEGMENT = \"-1\": expected an integer 0..1048576 or auto"},
            {"SGL_ATTN_LIN_SEGMENT", "off", "SGL_ATTN_LIN_SEGMENT = \"off\": expected an integer 0..1048576 or auto"},
            {"SGL_ATTN_LIN_PREP_STREAM", "auto", NULL},
            {"SGL_ATTN_LIN_PREP_STREAM", "1", "SGL_ATTN_LIN_PREP_STREAM = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_PREP_STREAM", "off", "SGL_ATTN_LIN_PREP_STREAM = \"off\": expected auto"},
            {"SGL_ATTN_LIN_SYNC_CHECK", "1", NULL},
            {"SGL_ATTN_LIN_SYNC_CHECK", "true", NULL},
            {"SGL_ATTN_LIN_SYNC_CHECK", "auto", NULL},
            {"SGL_ATTN_LIN_SYNC_CHECK", "2", "environment SGL_ATTN_LIN_SYNC_CHECK = \"2\": expected 1, true, yes, on"},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "1", NULL},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "On", NULL},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "yes", NULL},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "ALWAYS", NULL},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "off", NULL},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "auto", NULL},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "2", "environment SGL_ATTN_LIN_FUSED_CHUNK = \"2\": expected auto, 1, true, yes, on"},
            {"SGL_ATTN_LIN_FUSED_CHUNK", "fused", "SGL_ATTN_LIN_FUSED_CHUNK = \"fused\": expected auto, 1, true"},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD", "auto", NULL},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD", "1", "SGL_ATTN_LIN_DECODE_L2_AHEAD = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD", "0", "SGL_ATTN_LIN_DECODE_L2_AHEAD = \"0\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", "7", NULL},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", "0", NULL},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", "auto", NULL},
            {"SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", "-1", "SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS = \"-1\": expected an integer 0..1048576"},
            {"SGL_ATTN_LIN_KDA_TC", "auto", NULL},
            {"SGL_ATTN_LIN_KDA_TC", "", NULL},
            {"SGL_ATTN_LIN_KDA_TC", "1", "environment SGL_ATTN_LIN_KDA_TC = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_KDA_TC", "0", "SGL_ATTN_LIN_KDA_TC = \"0\": expected auto"},
            {"SGL_ATTN_LIN_KDA_TC", "on", "SGL_ATTN_LIN_KDA_TC = \"on\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_BULK_STATE", "auto", NULL},
            {"SGL_ATTN_LIN_DECODE_BULK_STATE", "", NULL},
            {"SGL_ATTN_LIN_DECODE_BULK_STATE", "1", "environment SGL_ATTN_LIN_DECODE_BULK_STATE = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_DECODE_BULK_STATE", "0", "SGL_ATTN_LIN_DECODE_BULK_STATE = \"0\": expected auto"},
            {"SGL_ATTN_LIN_KDA_PAIR", "auto", NULL},
            {"SGL_ATTN_LIN_KDA_PAIR", "", NULL},
            {"SGL_ATTN_LIN_KDA_PAIR", "1", "environment SGL_ATTN_LIN_KDA_PAIR = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_KDA_PAIR", "0", "SGL_ATTN_LIN_KDA_PAIR = \"0\": expected auto"},
            {"SGL_ATTN_LIN_KDA_PAIR", "on", "SGL_ATTN_LIN_KDA_PAIR = \"on\": expected auto"},
            {"SGL_ATTN_LIN_KDA_UT_ALIAS", "auto", NULL},
            {"SGL_ATTN_LIN_KDA_UT_ALIAS", "1", "SGL_ATTN_LIN_KDA_UT_ALIAS = \"1\": expected auto"},
            {"SGL_ATTN_LIN_U_IN_PLACE", "auto", NULL},
            {"SGL_ATTN_LIN_U_IN_PLACE", "1", "environment SGL_ATTN_LIN_U_IN_PLACE = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_FUSED_PHASE2", "always", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2", "auto", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2", "Off", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2", "64", "environment SGL_ATTN_LIN_FUSED_PHASE2 = \"64\": expected auto, 1, true, yes, on (the default: mamba2's"},
            {"SGL_ATTN_LIN_FUSED_PHASE2_8W", "auto", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2_8W", "1", "environment SGL_ATTN_LIN_FUSED_PHASE2_8W = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_FUSED_PHASE2_LEAN", "", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2_LEAN", "yes", "SGL_ATTN_LIN_FUSED_PHASE2_LEAN = \"yes\": expected auto"},
            {"SGL_ATTN_LIN_FUSED_PHASE2_SKIP16", "auto", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2_SKIP16", "on", "environment SGL_ATTN_LIN_FUSED_PHASE2_SKIP16 = \"on\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_FUSED_PHASE2_GROUP", "auto", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2_X", "", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2_MWARPS", "", NULL},
            {"SGL_ATTN_LIN_FUSED_PHASE2_MWARPS", "1", "SGL_ATTN_LIN_FUSED_PHASE2_MWARPS = \"1\": expected auto"},
            {"SGL_ATTN_LIN_FUSED_PHASE2_X", "on", "environment SGL_ATTN_LIN_FUSED_PHASE2_X = \"on\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_FUSED_PHASE2_GROUP", "1", "SGL_ATTN_LIN_FUSED_PHASE2_GROUP = \"1\": expected auto"},
            {"SGL_ATTN_LIN_MAMBA2_STREAM_PREP", "auto", NULL},
            {"SGL_ATTN_LIN_MAMBA2_STREAM_PREP", "yes", "environment SGL_ATTN_LIN_MAMBA2_STREAM_PREP = \"yes\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_KDA_DIAG_LANES", "", NULL},
            {"SGL_ATTN_LIN_KDA_DIAG_LANES", "1", "SGL_ATTN_LIN_KDA_DIAG_LANES = \"1\": expected auto"},
            {"SGL_ATTN_LIN_KDA_EXP2", "", NULL},
            {"SGL_ATTN_LIN_KDA_EXP2", "0", "SGL_ATTN_LIN_KDA_EXP2 = \"0\": expected auto"},
            {"SGL_ATTN_LIN_FUSED_EXP2", "auto", NULL},
            {"SGL_ATTN_LIN_FUSED_EXP2", "1", "SGL_ATTN_LIN_FUSED_EXP2 = \"1\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_FUSED_TMMA", "on", "SGL_ATTN_LIN_FUSED_TMMA = \"on\": expected auto"},
            {"SGL_ATTN_LIN_CSTATE", "auto", NULL},
            {"SGL_ATTN_LIN_CSTATE", "", NULL},
            {"SGL_ATTN_LIN_CSTATE", "v4", "SGL_ATTN_LIN_CSTATE = \"v4\": expected auto (the kernels it chose between"},
            {"SGL_ATTN_LIN_CSTATE", "scan", "SGL_ATTN_LIN_CSTATE = \"scan\": expected auto"},
            {"SGL_ATTN_LIN_DECODE", "stream_cp", "SGL_ATTN_LIN_DECODE = \"stream_cp\": expected auto"},
            {"SGL_ATTN_LIN_DECODE", "fused", "SGL_ATTN_LIN_DECODE = \"fused\": expected auto"},
            {"SGL_ATTN_LIN_CHUNK1", "fused", "SGL_ATTN_LIN_CHUNK1 = \"fused\": expected auto"},
            {"SGL_ATTN_LIN_CHUNK2", "split", "SGL_ATTN_LIN_CHUNK2 = \"split\": expected auto"},
            {"SGL_ATTN_LIN_PREP", "v3", "SGL_ATTN_LIN_PREP = \"v3\": expected auto"},
            {"SGL_ATTN_LIN_UT", "v3", "SGL_ATTN_LIN_UT = \"v3\": expected auto"},
            {"SGL_ATTN_LIN_COUT", "v1", "SGL_ATTN_LIN_COUT = \"v1\": expected auto"},
            {"SGL_ATTN_LIN_DECPREP", "v3", "SGL_ATTN_LIN_DECPREP = \"v3\": expected auto"},
            {"SGL_ATTN_LIN_CSCAN_M", "16", "SGL_ATTN_LIN_CSCAN_M = \"16\": expected auto"},
            {"SGL_ATTN_LIN_CSCAN_VT", "64", "SGL_ATTN_LIN_CSCAN_VT = \"64\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_RING", "auto", NULL},
            {"SGL_ATTN_LIN_DECODE_RING", "1", "SGL_ATTN_LIN_DECODE_RING = \"1\": expected auto (the kernels it chose"},
            {"SGL_ATTN_LIN_DECODE_RING", "off", "SGL_ATTN_LIN_DECODE_RING = \"off\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_RING_GRID", "528", "SGL_ATTN_LIN_DECODE_RING_GRID = \"528\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_RING_GRID", "0", "SGL_ATTN_LIN_DECODE_RING_GRID = \"0\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_RING_FOLD", "yes", "SGL_ATTN_LIN_DECODE_RING_FOLD = \"yes\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_RING_FOLD", "", NULL},
            {"SGL_ATTN_LIN_DECODE_PREP_WAVE", "1", "SGL_ATTN_LIN_DECODE_PREP_WAVE = \"1\": expected auto"},
            {"SGL_ATTN_LIN_DECODE_PREP_WAVE_GRID", "2", "SGL_ATTN_LIN_DECODE_PREP_WAVE_GRID = \"2\": expected auto"},
        };
        for (size_t i = 0; i < sizeof ov / sizeof *ov; i++) {
            setenv(ov[i].env, ov[i].val, 1);
            err[0] = 0;
            b = NULL;
            const int rc = p->create(&a, &b);
            if (!ov[i].refusal)
                LT_CHECK(!strstr(err, ov[i].env), "%s: %s=%s refused: %s", kinds[k].name, ov[i].env, ov[i].val, err);
            else
                LT_CHECK(rc == SGL_ATTN_E_INVALID && !b && strstr(err, ov[i].env) && strstr(err, ov[i].refusal),
                         "%s: %s=%s: %s", kinds[k].name, ov[i].env, ov[i].val, err);
            if (b) b->ops->destroy(b);
            unsetenv(ov[i].env);
        }
        dlclose(h);
    }
    printf("test_lin_load: %d failure%s\n", lt_failures, lt_failures == 1 ? "" : "s");
    return lt_failures ? 1 : 0;
}
