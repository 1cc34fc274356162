/* lin_create.c - a CUDA linear wrapper instance: dims and routing from the
 * model, its options (read here, once), and one device allocation holding the
 * state pool, the plan arrays and every scratch buffer a forward touches, so
 * forwards never allocate.  The instance does not own the inner backend. */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include <cuda_runtime_api.h>

#include "cuda/sdk_cuda.h"
#include "lin.h"
#include "sdk_option.h"
#include "sdk_text.h"

static const char *last_error(sgl_attn_backend *b) { return ((lin_inst *)b)->err; }

static int32_t fill_value(sgl_attn_backend *b) {
    lin_inst *w = (lin_inst *)b;
    int32_t (*f)(sgl_attn_backend *) = LIN_INNER_OP(w, graph_seq_len_fill_value);
    return f ? f(w->inner) : 1;
}

static void destroy(sgl_attn_backend *b) {
    lin_inst *w = (lin_inst *)b;
    if (!w) return;
    if (w->dev || w->fault.host) {
        (void)cudaSetDevice(w->device);
        if (w->dev) (void)cudaFree(w->dev);
        sgl_sdk_cuda_fault_free(&w->fault);
    }
    free(w->host_stage);
    free(w->seen);
    free(w->sb_keys);
    free(w);
}

const sgl_attn_backend_ops lin_backend_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = lin_init_forward_metadata,
    .forward_extend = lin_forward_extend,
    .forward_decode = lin_forward_decode,
    .init_graph_state = lin_init_graph_state,
    .init_forward_metadata_capture = lin_graph_capture,
    .init_forward_metadata_replay = lin_graph_replay,
    .graph_seq_len_fill_value = fill_value,
    .last_error = last_error,
    .destroy = destroy,
    .state_clear = lin_state_clear,
    .state_copy = lin_state_copy,
    .state_commit = lin_state_commit,
    .state_batch = lin_state_batch,
};

/* What the options chose (docs/cuda_linear.md). */
typedef struct lin_options {
    int variant;    /* kernel: LIN_VARIANT_* */
    int vt;         /* value_tile: 16, 32, or 0 = by batch size */
    int sync_check; /* debug: planning and state_commit wait for the device to report what only it can check */
    int seg;        /* segment_chunks: -1 auto, 0 off, N chunks per segment */
    int fused_cp;   /* fused_chunk: 1 by the batch (lin_fused_cp_takes; the default), 0 never, 2 always */
    int l2a_blocks; /* decode_l2_ahead_blocks: the stream decode's L2 prefetch distance in blocks (-1: auto, by
                     * the state dtype: lin_decode_l2a_blocks) */
    int fused_p2;   /* fused_phase2: 1 by the batch (lin_fused_p2_tile; the default), 0 never, 2 always */
} lin_options;

/* fused_chunk, fused_phase2: unset, "", auto and the true spellings 1 (the kernel where the batch fills the SMs:
 * the default); the false spellings 0 (never); "always" 2 (every batch it serves: tests) */
static int read_auto_always(const sgl_attn_create_args *a, const sgl_sdk_opts *opts, const char *name, const char *key,
                            const char *env, const char *what, int *out) {
    static const char *const yes[] = {"1", "true", "yes", "on", "auto"}, *const no[] = {"0", "false", "no", "off"};
    char from[96];
    const char *v = sgl_sdk_opt_raw(opts, key, env, from, sizeof from);
    *out = 1;
    if (!v || !*v) return SGL_ATTN_OK;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!strcasecmp(v, yes[i])) return SGL_ATTN_OK;
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (!strcasecmp(v, no[i])) {
            *out = 0;
            return SGL_ATTN_OK;
        }
    if (!strcasecmp(v, "always")) {
        *out = 2;
        return SGL_ATTN_OK;
    }
    return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID,
                               "%s: %s = \"%.64s\": expected auto, 1, true, yes, on (the default: %s), always (every "
                               "batch), or 0, false, no, off (the unfused kernels)",
                               name, from, v, what);
}

/* The options, read once at create through the SDK (the environment variable
 * over the conf's plugin option <name>.<key>); a bad value fails create naming
 * the option, where it came from, the value and what is accepted.  Options of
 * kernel choices that are gone accept only auto, so that a configuration
 * written for those builds does not silently run something else. */
static int read_options(const sgl_attn_create_args *a, const char *name, lin_options *o) {
    const sgl_sdk_opts opts = sgl_sdk_opts_of(a, name);
    int64_t vt = 0, seg = -1, l2a_blocks = -1;
    int rc;
    if ((rc = sgl_sdk_opt_choice(&opts, "kernel", "SGL_ATTN_LIN_KERNEL", lin_variant_names, 2, LIN_VARIANT_FAST,
                                 &o->variant)) ||
        (rc = sgl_sdk_opt_int(&opts, "value_tile", "SGL_ATTN_LIN_VT", 0, 0, 32, &vt)) ||
        (rc = sgl_sdk_opt_bool(&opts, "sync_check", "SGL_ATTN_LIN_SYNC_CHECK", 0, &o->sync_check)) ||
        (rc = sgl_sdk_opt_int(&opts, "segment_chunks", "SGL_ATTN_LIN_SEGMENT", -1, 0, 1 << 20, &seg)) ||
        (rc = read_auto_always(a, &opts, name, "fused_chunk", "SGL_ATTN_LIN_FUSED_CHUNK",
                               "the fused chunk kernel for gdn's bf16 extend where the batch fills the SMs", &o->fused_cp)) ||
        (rc = sgl_sdk_opt_int(&opts, "decode_l2_ahead_blocks", "SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", -1, 0, 1 << 20,
                              &l2a_blocks)) ||
        (rc = read_auto_always(a, &opts, name, "fused_phase2", "SGL_ATTN_LIN_FUSED_PHASE2",
                               "mamba2's bf16 phase 2 in one kernel where the batch fills the SMs", &o->fused_p2)))
        return rc;
    o->seg = (int)seg;
    o->l2a_blocks = (int)l2a_blocks;
    char from[96];
    if (vt != 0 && vt != 16 && vt != 32) {
        sgl_sdk_opt_raw(&opts, "value_tile", "SGL_ATTN_LIN_VT", from, sizeof from);
        return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID, "%s: %s = %d: expected 16, 32 or auto", name, from, (int)vt);
    }
    o->vt = (int)vt;
    static const char *const retired[][2] = {
        {"SGL_ATTN_LIN_DECODE", "decode"},       {"SGL_ATTN_LIN_CHUNK1", "chunk1"}, {"SGL_ATTN_LIN_CHUNK2", "chunk2"},
        {"SGL_ATTN_LIN_PREP", "prep"},           {"SGL_ATTN_LIN_UT", "ut"},         {"SGL_ATTN_LIN_COUT", "cout"},
        {"SGL_ATTN_LIN_CSTATE", "cstate"},       {"SGL_ATTN_LIN_CSCAN_M", "cscan_group"},
        {"SGL_ATTN_LIN_CSCAN_VT", "cscan_tile"}, {"SGL_ATTN_LIN_DECPREP", "decprep"},
        {"SGL_ATTN_LIN_PREP_STREAM", "prep_stream"},
        {"SGL_ATTN_LIN_DECODE_RING", "decode_ring"}, {"SGL_ATTN_LIN_DECODE_RING_GRID", "decode_ring_grid"},
        {"SGL_ATTN_LIN_DECODE_RING_FOLD", "decode_ring_fold"}, {"SGL_ATTN_LIN_FUSED_EXP2", "fused_exp2"},
        {"SGL_ATTN_LIN_FUSED_TMMA", "fused_tmma"}, {"SGL_ATTN_LIN_DECODE_PREP_WAVE", "decode_prep_wave"},
        {"SGL_ATTN_LIN_DECODE_PREP_WAVE_GRID", "decode_prep_wave_grid"},
        {"SGL_ATTN_LIN_DECODE_L2_AHEAD", "decode_l2_ahead"}, {"SGL_ATTN_LIN_KDA_TC", "kda_tc"},
        {"SGL_ATTN_LIN_DECODE_BULK_STATE", "decode_bulk_state"}, {"SGL_ATTN_LIN_KDA_PAIR", "kda_pair"},
        {"SGL_ATTN_LIN_KDA_UT_ALIAS", "kda_ut_alias"}, {"SGL_ATTN_LIN_KDA_EXP2", "kda_exp2"},
        {"SGL_ATTN_LIN_KDA_DIAG_LANES", "kda_diag_lanes"}, {"SGL_ATTN_LIN_MAMBA2_STREAM_PREP", "mamba2_stream_prep"},
        {"SGL_ATTN_LIN_U_IN_PLACE", "u_in_place"}, {"SGL_ATTN_LIN_FUSED_PHASE2_8W", "fused_phase2_8w"},
        {"SGL_ATTN_LIN_FUSED_PHASE2_LEAN", "fused_phase2_lean"}, {"SGL_ATTN_LIN_FUSED_PHASE2_SKIP16", "fused_phase2_skip16"},
        {"SGL_ATTN_LIN_FUSED_PHASE2_MWARPS", "fused_phase2_mwarps"},
        {"SGL_ATTN_LIN_FUSED_PHASE2_GROUP", "fused_phase2_group"}, {"SGL_ATTN_LIN_FUSED_PHASE2_X", "fused_phase2_x"}};
    for (size_t i = 0; i < sizeof retired / sizeof *retired; i++) {
        const char *v = sgl_sdk_opt_raw(&opts, retired[i][1], retired[i][0], from, sizeof from);
        if (v && *v && strcasecmp(v, "auto"))
            return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID,
                                       "%s: %s = \"%.64s\": expected auto (the kernels it chose between are gone; "
                                       "the options are kernel, value_tile, segment_chunks, fused_chunk, "
                                       "decode_l2_ahead_blocks, fused_phase2 and sync_check: "
                                       "docs/cuda_linear.md)",
                                       name, from, v);
    }
    return SGL_ATTN_OK;
}

int lin_create(int kind, const char *name, const sgl_attn_create_args *a, sgl_attn_backend **out) {
    char scratch[LIN_ERR_MAX];
    char *err = a && a->error && a->error_size ? a->error : scratch;
    const size_t en = a && a->error && a->error_size ? a->error_size : sizeof scratch;
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || !a->model) return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID, "%s: create needs args and a model", name);
    if (!a->inner || !a->inner->ops)
        return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID,
                                   "%s is a hybrid wrapper: create_args.inner must be the full-attention backend it "
                                   "wraps", name);
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1)
        return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID,
                                   "%s: max_reqs = %d, max_tokens = %d, max_context = %d; expected all >= 1", name,
                                   a->max_reqs, a->max_tokens, a->max_context);
    const sgl_attn_model *m = a->model;
    char why[256];
    lin_dims d;
    int rc = sgl_sdk_lin_supports(kind, m, LIN_STATE_DTYPES, why, sizeof why);
    if (rc || (rc = sgl_sdk_lin_dims_of(kind, m, LIN_STATE_DTYPES, &d, why, sizeof why)))
        return sgl_sdk_create_fail(a, rc, "%s: %s", name, why);
    lin_options opt;
    if ((rc = read_options(a, name, &opt))) return rc;
    sgl_sdk_cuda_device dev;
    if ((rc = sgl_sdk_cuda_device_query(a->device, &dev, err, en))) return rc;
    if (dev.sm_major < 8)
        return sgl_sdk_create_fail(a, SGL_ATTN_E_UNSUPPORTED,
                                   "%s: device %d (%s) is SM %d.%d; the CUDA linear wrappers need SM 8.0 or newer",
                                   name, a->device, dev.name, dev.sm_major, dev.sm_minor);
    const int half = m->dtype == SGL_ATTN_DT_BF16 || m->dtype == SGL_ATTN_DT_F16;
    /* the chunked extend needs its largest kernel's shared memory (SM 8.0 / 9.0 have it; SM 8.6 / 8.9,
     * 99 KiB a block, take the token-by-token path) */
    const size_t tc_smem = LIN_FUSED_UT_SMEM > LIN_FUSED_STATE_SMEM(32) ? LIN_FUSED_UT_SMEM : LIN_FUSED_STATE_SMEM(32);
    const int tc_ok = half && dev.smem_per_block_optin >= tc_smem;

    lin_inst *w = calloc(1, sizeof *w);
    if (!w) return sgl_sdk_create_fail(a, SGL_ATTN_E_NOMEM, "%s: out of host memory", name);
    w->base.ops = &lin_backend_ops;
    w->base.ops_size = lin_backend_ops.struct_size;
    w->base.device = a->device;
    w->kind = kind;
    w->name = name;
    w->host = sgl_sdk_create_host(a);
    w->model = *m; /* the host's struct is never smaller than ours */
    w->d = d;
    w->inner = a->inner;
    w->device = a->device;
    w->variant = opt.variant;
    w->vt = opt.vt;
    w->seg = opt.seg;
    w->sync_check = opt.sync_check;
    /* fused_chunk serves gdn's bf16 extend at K = 128, V 64 / 128, with the kernel's shared memory (SM 9.0);
     * everything else keeps the unfused kernels */
    const int cp_ok = tc_ok && m->dtype == SGL_ATTN_DT_BF16 && lin_fused_cp_dims_ok(&d) && opt.variant == LIN_VARIANT_FAST &&
                      dev.smem_per_block_optin >= LIN_FUSED_CP_SMEM;
    w->fused_cp = cp_ok ? opt.fused_cp : 0;
    /* fused_phase2 serves mamba2's bf16 chunked extend at V a multiple of 64, with the kernel's shared memory */
    const int p2_ok = tc_ok && kind == SGL_ATTN_HYBRID_MAMBA2 && m->dtype == SGL_ATTN_DT_BF16 && d.dv % 64 == 0 &&
                      opt.variant == LIN_VARIANT_FAST && dev.smem_per_block_optin >= LIN_FUSED_STATE_SMEM_BF16(64);
    w->fused_p2 = p2_ok ? opt.fused_p2 : 0;
    w->sm_count = dev.sm_count;
    w->l2a_blocks = lin_decode_l2a_blocks(opt.l2a_blocks, lin_state_dt(&d), dev.sm_count);
    w->sm_major = dev.sm_major;
    w->max_reqs = a->max_reqs;
    w->max_tokens = a->max_tokens;
    w->max_context = a->max_context;
    for (int l = 0, i = 0; l < SGL_ATTN_MAX_LAYERS; l++)
        w->lin_index[l] = (int16_t)(sgl_sdk_lin_layer_is_own(kind, m, l) ? i++ : -1);
    if ((rc = lin_layout_compute(&w->L, &d, a->max_reqs, a->max_tokens, sgl_sdk_lin_verify_steps(m), opt.variant,
                                 tc_ok, why, sizeof why)) ||
        (rc = lin_layout_segments(&w->L, &d, opt.seg, dev.sm_count, why, sizeof why))) {
        free(w);
        return sgl_sdk_create_fail(a, rc, "%s: %s", name, why);
    }
    w->host_stage = calloc((size_t)3 * (size_t)a->max_reqs, sizeof(int32_t));
    w->seen = calloc((size_t)a->max_reqs, 1);
    w->sb_keys = calloc((size_t)2 * (size_t)a->max_reqs, sizeof(uint64_t));
    w->pool_over_i = -1;
    cudaError_t ce = w->host_stage && w->seen && w->sb_keys ? cudaSetDevice(a->device) : cudaErrorMemoryAllocation;
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&w->dev, w->L.total);
    if (ce == cudaSuccess) ce = cudaMemset(w->dev, 0, w->L.total);
    if (ce == cudaSuccess) {
        char why_fault[256];
        if ((rc = sgl_sdk_cuda_fault_alloc(&w->fault, why_fault, sizeof why_fault))) {
            destroy(&w->base);
            return sgl_sdk_create_fail(a, rc, "%s: %s", name, why_fault);
        }
    }
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize(); /* the memset is done before any stream uses it */
    if (ce == cudaSuccess && w->L.need_tc) ce = (cudaError_t)lin_chunk_setup();
    if (ce == cudaSuccess && w->L.need_tc && w->fused_cp) ce = (cudaError_t)lin_chunk_fused_cp_setup();
    if (ce == cudaSuccess && w->L.need_tc && w->fused_p2) ce = (cudaError_t)lin_chunk_fused_state_bf16_setup();
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        char what[160];
        snprintf(what, sizeof what, "%s: create: device buffers (%zu bytes: state pool %d layers x %d slots%s)", name,
                 w->L.total, d.n_lin, a->max_reqs, w->L.steps ? " with verify copies" : "");
        sgl_sdk_cuda_format_error(err, en, what, (int)ce);
        destroy(&w->base);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    char stream_what[64] = "", p2_what[160] = "";
    if (w->L.need_stream && w->l2a_blocks)
        snprintf(stream_what, sizeof stream_what, " (stream decode, L2 prefetch %d blocks ahead)", w->l2a_blocks);
    else if (w->L.need_stream)
        snprintf(stream_what, sizeof stream_what, " (stream decode)");
    if (w->L.need_tc && w->fused_p2)
        snprintf(p2_what, sizeof p2_what,
                 " (fused phase 2: mamba2's bf16 extends %s; C and B per group where the stream prep runs)",
                 w->fused_p2 == 2 ? "always" : "whose heads fill the SMs");
    else if (opt.fused_p2 == 2)
        snprintf(p2_what, sizeof p2_what, " (fused_phase2=always ignored: it serves mamba2, bf16, V a multiple of 64)");
    sgl_sdk_log(w->host, SGL_ATTN_LOG_INFO, "cuda_linear",
                "%s on device %d (%s, SM %d.%d): kernels %s%s%s%s%s%s%s, %zu bytes on the device", name, a->device,
                dev.name, dev.sm_major, dev.sm_minor, lin_variant_name(opt.variant),
                w->L.need_tc ? " (chunked extend)" : "",
                w->fused_cp == 2   ? " (fused chunk kernel: every bf16 extend)"
                : w->fused_cp == 1 ? " (fused chunk kernel: bf16 extends whose requests x value heads fill half the SMs; "
                                     "smaller ones the unfused kernels)"
                : opt.fused_cp == 2 ? " (fused_chunk=always ignored: it serves gdn, bf16, K 128, V 64 / 128, SM 9.0's shared memory)"
                                   : "",
                p2_what, stream_what,
                w->L.need_simple ? " (token-by-token path ready)" : "", opt.sync_check ? " (sync_check: debug)" : "",
                w->L.total);
    *out = &w->base;
    return SGL_ATTN_OK;
}
