/* lin_create.c - a CUDA linear wrapper instance: dims and routing from the
 * model, the kernel variant, and one device allocation holding the state pool,
 * the plan arrays and every scratch buffer a forward touches, so forwards
 * never allocate.  The instance does not own the inner backend. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cuda_runtime_api.h>

#include "cuda_error.h"
#include "cuda_probe.h"
#include "lin.h"

void lin_set_err(lin_inst *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

int lin_inner_failed(lin_inst *w, int rc, const char *what) {
    const char *(*le)(sgl_attn_backend *) = LIN_INNER_OP(w, last_error);
    const char *msg = le ? le(w->inner) : NULL;
    lin_set_err(w, "%s: inner backend %s failed (%d): %s", w->name, what, rc, msg && *msg ? msg : "no message");
    return rc;
}

lin_plan_dev lin_plan_ptrs(const lin_inst *w) {
    lin_plan_dev p;
    int32_t **f[14] = {&p.req_tok0, &p.req_n, &p.req_slot, &p.req_init, &p.req_chunk0, &p.req_nchunk, &p.tok_req,
                       &p.chunk_req, &p.chunk_tok0, &p.chunk_len, &p.num_chunks, &p.slot_owner, &p.verify_slot,
                       &p.err};
    for (int i = 0; i < 14; i++) *f[i] = (int32_t *)(w->dev + w->L.plan[i]);
    return p;
}

static const char *last_error(sgl_attn_backend *b) { return ((lin_inst *)b)->err; }

static int32_t fill_value(sgl_attn_backend *b) {
    lin_inst *w = (lin_inst *)b;
    int32_t (*f)(sgl_attn_backend *) = LIN_INNER_OP(w, graph_seq_len_fill_value);
    return f ? f(w->inner) : 1;
}

static void destroy(sgl_attn_backend *b) {
    lin_inst *w = (lin_inst *)b;
    if (!w) return;
    if (w->dev) {
        (void)cudaSetDevice(w->device);
        (void)cudaFree(w->dev);
    }
    free(w->host_stage);
    free(w->seen);
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
};

/* A kernel-version option: unset, empty or auto -> def, else the index of the name it matches
 * (case-insensitive) in names[0 .. nn - 1]; anything else is refused with the list. */
static int opt_choice(const sgl_attn_host_api *h, const char *plugin, const char *env, const char *key,
                      const char *const *names, int nn, int def, int *out, char *err, size_t n) {
    const char *v = lin_option(h, plugin, env, key);
    *out = def;
    if (!v || !*v || !strcasecmp(v, "auto")) return SGL_ATTN_OK;
    for (int i = 0; i < nn; i++)
        if (!strcasecmp(v, names[i])) {
            *out = i;
            return SGL_ATTN_OK;
        }
    char list[128] = "";
    for (int i = 0; i < nn; i++) {
        const size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", names[i]);
    }
    lin_str(err, n, "%s: %s / plugin option %s = \"%s\": expected %s or auto", plugin, env, key, v, list);
    return SGL_ATTN_E_INVALID;
}

static int opt_int(const sgl_attn_host_api *h, const char *plugin, const char *env, const char *key, int def, int lo,
                   int hi, int *out, char *err, size_t n) {
    const char *v = lin_option(h, plugin, env, key);
    if (!v || !*v || !strcmp(v, "auto")) {
        *out = def;
        return SGL_ATTN_OK;
    }
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!strcmp(v, "true")) x = 1, end = (char *)v + 4;
    if (!strcmp(v, "false")) x = 0, end = (char *)v + 5;
    if (!end || *end || x < lo || x > hi) {
        lin_str(err, n, "%s: %s / plugin option %s = \"%s\": expected an integer %d..%d or auto", plugin, env, key, v,
                lo, hi);
        return SGL_ATTN_E_INVALID;
    }
    *out = (int)x;
    return SGL_ATTN_OK;
}

int lin_create(int kind, const char *name, const sgl_attn_create_args *a, sgl_attn_backend **out) {
    char scratch[LIN_ERR_MAX];
    char *err = a && a->error && a->error_size ? a->error : scratch;
    const size_t en = a && a->error && a->error_size ? a->error_size : sizeof scratch;
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || !a->model) {
        lin_str(err, en, "%s: create needs args and a model", name);
        return SGL_ATTN_E_INVALID;
    }
    if (!a->inner || !a->inner->ops) {
        lin_str(err, en, "%s is a hybrid wrapper: create_args.inner must be the full-attention backend it wraps", name);
        return SGL_ATTN_E_INVALID;
    }
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1) {
        lin_str(err, en, "%s: max_reqs = %d, max_tokens = %d, max_context = %d; expected all >= 1", name, a->max_reqs,
                a->max_tokens, a->max_context);
        return SGL_ATTN_E_INVALID;
    }
    const sgl_attn_model *m = a->model;
    char why[256];
    lin_dims d;
    int rc = lin_supports_model(kind, m, why, sizeof why);
    if (rc || (rc = lin_dims_from_model(kind, m, &d, why, sizeof why))) {
        lin_str(err, en, "%s: %s", name, why);
        return rc;
    }
    const sgl_attn_host_api *host = lin_create_host(a);
    const char *vs = lin_option(host, name, "SGL_ATTN_LIN_KERNEL", "kernel");
    const int variant = lin_variant_parse(vs);
    if (variant < 0) {
        lin_str(err, en, "%s: SGL_ATTN_LIN_KERNEL / plugin option kernel = \"%s\": expected simple or fast", name, vs);
        return SGL_ATTN_E_INVALID;
    }
    int vt = 0, sync_check = 1;
    if ((rc = opt_int(host, name, "SGL_ATTN_LIN_VT", "value_tile", 0, 0, 32, &vt, err, en)) ||
        (rc = opt_int(host, name, "SGL_ATTN_LIN_SYNC_CHECK", "sync_check", 1, 0, 1, &sync_check, err, en)))
        return rc;
    if (vt != 0 && vt != 16 && vt != 32) {
        lin_str(err, en, "%s: SGL_ATTN_LIN_VT / plugin option value_tile = %d: expected 16, 32 or auto", name, vt);
        return SGL_ATTN_E_INVALID;
    }
    /* fused, split or stream kernels; auto: split extend phases, stream decode launched with PDL where it
     * applies (1.43-1.44x the fused decode at B >= 256, PDL 1.00-1.05x plain stream, H200 2026-12-03;
     * docs/cuda_linear.md), the fused one elsewhere */
    lin_paths paths;
    {
        const char *env[3] = {"SGL_ATTN_LIN_DECODE", "SGL_ATTN_LIN_CHUNK1", "SGL_ATTN_LIN_CHUNK2"};
        const char *key[3] = {"decode", "chunk1", "chunk2"};
        int *dst[3] = {&paths.dec_split, &paths.c1_split, &paths.c2_split};
        const int def[3] = {4, 1, 1};
        for (int k = 0; k < 3; k++) {
            const char *v = lin_option(host, name, env[k], key[k]);
            const int x = k == 0 ? lin_decode_parse(v, def[k]) : lin_split_parse(v, def[k]);
            if (x < 0) {
                lin_str(err, en, "%s: %s / plugin option %s = \"%s\": expected fused, split%s or auto", name, env[k],
                        key[k], v, k == 0 ? ", stream, stream_cp, stream_pdl, stream_pdl64, stream_one, stream_one_nopf, stream_one_static" : "");
                return SGL_ATTN_E_INVALID;
            }
            *dst[k] = x;
        }
        /* decode: 2 = stream, 3 = stream_cp, 4 = stream_pdl, 5 = stream_pdl64, 6 = stream_one, 7 = stream_one_nopf, 8 = stream_one_static (their own flag; dec_split
         * stays the split kernel's) */
        paths.dec_stream = paths.dec_split >= 2 ? paths.dec_split - 1 : 0;
        if (paths.dec_stream) paths.dec_split = 0;
    }
    /* Kernel versions (docs/cuda_linear.md has each one's measurement):
     * - prep (split phase 1's prep + UT kernels): v2 (auto; 1.68x v1 on the 64k H200 prefill, run 8 of
     *   2026-12-03), v1, v3 (a quarter of the registers; lost, run 13);
     * - cstate (the split state pass): v4 (auto: v2 with named-barrier hand-offs, lk_cstate.cuh; 1.06x in
     *   runs 15-17), v2 (four producer warps, two __syncthreads per chunk), v1 (one producer warp), and
     *   the levers that lost, kept as the record: v3 (8 compute warps, run 14), v5 (P = -W^T KD made
     *   first, one product per chunk; lk_cstate5.cu, gdn / kda; run 16), v6 (v5 on warpgroup MMA;
     *   lk_cstate6.cu, SM 9.0; run 17), scan (by groups of cscan_group chunks; lk_cscan.cu, run 11);
     * - decprep (the stream decode's prep): v2 (auto: lk_decprep2.cu where it serves the shape, 1.06-1.12x
     *   the forward, run 10), v1, v3 (persistent; lost, run 12);
     * - ut (split phase 1): v2 (auto: prep + UT kernels), v3 (the prep fused into UT; lost, run 11);
     * - cout (the split output kernel): v2 (auto: 0.207 ms against v1's 0.366 at 64k, run 13), v1. */
    static const char *const v123[] = {"v1", "v2", "v3"}, *const v23[] = {"v2", "v3"}, *const v12[] = {"v1", "v2"},
                             *const cstates[] = {"v1", "v2", "v3", "v4", "v5", "v6", "scan"};
    int prep = 1, cst = 3, dprep = 1, ut = 0, cout = 1, scan_m = 16;
    if ((rc = opt_choice(host, name, "SGL_ATTN_LIN_PREP", "prep", v123, 3, 1, &prep, err, en)) ||
        (rc = opt_choice(host, name, "SGL_ATTN_LIN_CSTATE", "cstate", cstates, 7, 3, &cst, err, en)) ||
        (rc = opt_choice(host, name, "SGL_ATTN_LIN_DECPREP", "decprep", v123, 3, 1, &dprep, err, en)) ||
        (rc = opt_choice(host, name, "SGL_ATTN_LIN_UT", "ut", v23, 2, 0, &ut, err, en)) ||
        (rc = opt_choice(host, name, "SGL_ATTN_LIN_COUT", "cout", v12, 2, 1, &cout, err, en)))
        return rc;
    const int scan = cst == 6, cs3 = cst == 2, cs4 = cst == 3, cs5 = cst == 4 || cst == 5, cs6 = cst == 5;
    int scan_vt = 0;
    if ((rc = opt_int(host, name, "SGL_ATTN_LIN_CSCAN_M", "cscan_group", 16, 1, 4096, &scan_m, err, en)) ||
        (rc = opt_int(host, name, "SGL_ATTN_LIN_CSCAN_VT", "cscan_tile", 0, 0, 64, &scan_vt, err, en)))
        return rc;
    if (scan_vt != 0 && scan_vt != 32 && scan_vt != 64) {
        lin_str(err, en, "%s: SGL_ATTN_LIN_CSCAN_VT / plugin option cscan_tile = %d: expected 32, 64 or auto", name,
                scan_vt);
        return SGL_ATTN_E_INVALID;
    }
    paths.cscan_m = scan ? scan_m : 0;
    sgl_cuda_device_info dev;
    if ((rc = sgl_cuda_device_query(a->device, &dev, err, en))) return rc;
    if (dev.sm_major < 8) {
        lin_str(err, en, "%s: device %d (%s) is SM %d.%d; the CUDA linear wrappers need SM 8.0 or newer", name,
                a->device, dev.name, dev.sm_major, dev.sm_minor);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int half = m->dtype == SGL_ATTN_DT_BF16 || m->dtype == SGL_ATTN_DT_F16;
    const size_t tc_smem = LIN_C1_SMEM > LIN_C2_SMEM(32) ? LIN_C1_SMEM : LIN_C2_SMEM(32);
    const int tc_ok = half && dev.smem_per_block_optin >= tc_smem;
    /* v5 needs more shared memory than the other state passes (three stages of a K x K tile) */
    paths.cstate5 = cs5 && !scan && dev.smem_per_block_optin >= LIN_C5_SMEM(32);
    if (cs5 && !paths.cstate5)
        lin_log(SGL_ATTN_LOG_INFO, "%s: SGL_ATTN_LIN_CSTATE=v5 needs %zu bytes of shared memory per block; device %d "
                "has %zu: the v2 state pass runs", name, LIN_C5_SMEM(32), a->device, (size_t)dev.smem_per_block_optin);
    /* v6: the sm_90a kernel runs on SM 9.0 only (other devices would get the empty compute_90 body) */
    paths.cstate6 = paths.cstate5 && cs6 && dev.sm_major == 9 && d.dv % 64 == 0 &&
                    dev.smem_per_block_optin >= LIN_C6_SMEM && lin_cstate6_built();
    if (cs6 && !paths.cstate6)
        lin_log(SGL_ATTN_LOG_INFO, "%s: SGL_ATTN_LIN_CSTATE=v6 runs on SM 9.0 with V %% 64 == 0 and %zu bytes of "
                "shared memory per block (device %d: SM %d.%d, V %d%s): the %s state pass runs", name, LIN_C6_SMEM,
                a->device, dev.sm_major, dev.sm_minor, d.dv, lin_cstate6_built() ? "" : ", no wgmma in this build",
                paths.cstate5 ? "v5" : "v2");

    lin_inst *w = calloc(1, sizeof *w);
    if (!w) {
        lin_str(err, en, "%s: out of host memory", name);
        return SGL_ATTN_E_NOMEM;
    }
    w->base.ops = &lin_backend_ops;
    w->base.ops_size = lin_backend_ops.struct_size;
    w->base.device = a->device;
    w->kind = kind;
    w->name = name;
    w->model = *m; /* the host's struct is never smaller than ours */
    w->d = d;
    w->inner = a->inner;
    w->device = a->device;
    w->variant = variant;
    w->vt = vt;
    w->paths = paths;
    w->c1_prep = prep + 1;
    w->c3_out = cout + 1;
    w->c2_np = cst ? 4 : 1;
    w->c2_cw = cs3 ? 8 : 4;
    w->c2_ws = cs4;
    w->dec_prep = dprep + 1;
    w->c1_ut = ut ? 3 : 2;
    /* the scan's row tile: 64 (W, KD loaded once per chunk for 64 rows) where V and the device allow it
     * (auto, 64), else 32 */
    w->cscan_vt = scan_vt != 32 && d.dv % 64 == 0 && dev.smem_per_block_optin >= LIN_CSCAN_SMEM(64) ? 64 : 32;
    w->sync_check = sync_check;
    w->sm_count = dev.sm_count;
    w->sm_major = dev.sm_major;
    w->max_reqs = a->max_reqs;
    w->max_tokens = a->max_tokens;
    w->max_context = a->max_context;
    for (int l = 0, i = 0; l < SGL_ATTN_MAX_LAYERS; l++)
        w->lin_index[l] = (int16_t)(lin_layer_is_own(m, l) ? i++ : -1);
    if ((rc = lin_layout_compute2(&w->L, &d, a->max_reqs, a->max_tokens, m->spec_tokens, variant, tc_ok, &paths, why,
                                  sizeof why))) {
        lin_str(err, en, "%s: %s", name, why);
        free(w);
        return rc;
    }
    w->host_stage = calloc((size_t)3 * (size_t)a->max_reqs, sizeof(int32_t));
    w->seen = calloc((size_t)a->max_reqs, 1);
    cudaError_t ce = w->host_stage && w->seen ? cudaSetDevice(a->device) : cudaErrorMemoryAllocation;
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&w->dev, w->L.total);
    if (ce == cudaSuccess) ce = cudaMemset(w->dev, 0, w->L.total);
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize(); /* the memset is done before any stream uses it */
    if (ce == cudaSuccess && w->L.need_tc) ce = (cudaError_t)lin_kernels_setup();
    if (ce == cudaSuccess && w->L.need_cscan) ce = (cudaError_t)lin_cscan_setup(w->cscan_vt);
    if (ce == cudaSuccess && w->L.need_pq) ce = (cudaError_t)lin_cstate5_setup();
    if (ce == cudaSuccess && w->L.need_pq && paths.cstate6) ce = (cudaError_t)lin_cstate6_setup();
    if (ce == cudaSuccess && w->L.need_dec3 && paths.dec_stream == 2) ce = (cudaError_t)lin_decode3_setup();
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        char what[160];
        snprintf(what, sizeof what, "%s: create: device buffers (%zu bytes: state pool %d layers x %d slots%s)", name,
                 w->L.total, d.n_lin, a->max_reqs, w->L.steps ? " with verify copies" : "");
        sgl_cuda_format_error(err, en, what, (int)ce);
        destroy(&w->base);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    lin_log(SGL_ATTN_LOG_INFO, "%s on device %d (%s, SM %d.%d): kernels %s%s%s%s%s%s, %zu bytes on the device", name,
            a->device, dev.name, dev.sm_major, dev.sm_minor, lin_variant_name(variant),
            w->L.need_tc ? " (tensor-core extend)" : "", w->L.need_simple ? " (token-by-token path ready)" : "",
            w->L.need_dec2 ? " (split decode)" : w->L.need_dec3 ? " (stream decode)" : "", w->L.need_c1s ? " (split phase 1)" : "",
            w->L.need_c2s ? (w->L.need_cscan ? " (split phase 2/3, scan state pass)"
                             : w->L.need_pq ? (paths.cstate6 ? " (split phase 2/3, v6 state pass)"
                                                             : " (split phase 2/3, v5 state pass)")
                                            : " (split phase 2/3)") : "",
            w->L.total);
    *out = &w->base;
    return SGL_ATTN_OK;
}
