/*
 * cuda_attn.h - the cuda_attn plugin's internals: how its C files fit.
 *
 *   cuda_attn_plugin.c   descriptor, entry, probe (caps), supports_model
 *   cuda_attn_backend.c  create / destroy, device buffers, graph hooks
 *   cuda_attn_forward.c  init_forward_metadata (plan kernels) and the forwards
 *   cuda_attn_check.c    tensor and batch checks with messages (pure C)
 *   cuda_attn_sizing.c   buffer sizes and grid bounds, variant names (pure C)
 *   attn_dispatch.c      variant -> launcher
 *   launch_*.cu          kernel launchers (attn_launch.h)
 *
 * The pure-C files build without CUDA so tests/cuda/ can unit-test them here.
 */
#ifndef SGL_CUDA_ATTN_H
#define SGL_CUDA_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "attn_launch.h"
#include "attn_kernels/attn_params.h"
#include "sgl_attn_abi.h"

#define CA_NAME "cuda_attn"
#define CA_ERR_MAX 512

/* Decode plan sets: which KV columns a layer kind attends. */
enum { CA_DPLAN_FULL = 0, CA_DPLAN_WINDOW = 1, CA_DPLAN_CROSS = 2, CA_DPLAN_COUNT };
enum { CA_EPLAN_SELF = 0, CA_EPLAN_CROSS = 1, CA_EPLAN_COUNT };

/* Everything sized at create; pure data so the sizing is testable. */
typedef struct ca_sizing {
    int32_t max_reqs, max_tokens, max_context;
    int32_t hq, hkv, head_dim;
    int32_t decode_hblocks;      /* head blocks per kv head (grid.y = hkv * this) */
    int32_t decode_target_items; /* items the decode plan aims at */
    int32_t decode_max_items;    /* target + max_reqs */
    int32_t decode_max_parts;    /* 2 * target + 2 */
    int32_t decode_min_chunk, decode_chunk_align;
    int32_t extend_block_m, extend_block_n;
    int32_t extend_max_items;    /* ceil(max_tokens / block_m) + max_reqs */
    int32_t counters_per_req;    /* = hq (>= grid.y of any decode launch) */
    /* byte offsets into the one device allocation */
    size_t off_ditems[CA_DPLAN_COUNT], off_eitems[CA_EPLAN_COUNT], off_num, off_part_o,
        off_part_lse, off_counters, total_bytes;
} ca_sizing;

/* sm_count: the device's SMs; blocks_per_sm: resident decode blocks to aim at. */
int ca_sizing_compute(ca_sizing *s, int32_t max_reqs, int32_t max_tokens, int32_t max_context, int32_t hq,
                      int32_t hkv, int32_t head_dim, const attn_tiles *tiles, int sm_count, int blocks_per_sm,
                      char *err, size_t err_size);
/* Grid bounds for one batch (blocks past the planned count exit at once). */
int32_t ca_decode_grid_items(const ca_sizing *s, int32_t bs);
int32_t ca_extend_grid_items(const ca_sizing *s, int32_t bs, int32_t num_tokens);

/* "simple" / "mma" / "wgmma" / "auto" -> ATTN_VARIANT_* (auto: -1); -2 unknown. */
int ca_variant_parse(const char *s);
const char *ca_variant_name(int v);

/* ----------------------------------------------------------------- checks */

/* A check context: where messages go. */
typedef struct ca_msg {
    char *buf;
    size_t size;
    const char *call; /* "forward_decode"... */
} ca_msg;

/* A device tensor of floats: dtype bit `dt`, on CUDA device `device`, with
 * the given shape (ndim 3, or 2 with the last two dims merged when
 * allow_merged), last stride 1, the others multiples of 8 elements, data 16-byte
 * aligned.  Strides (in elements) come back in st[0..2]. */
int ca_check_float3(const ca_msg *m, const DLTensor *t, const char *what, int device, uint32_t dt, int64_t n0,
                    int64_t n1, int64_t n2, int allow_merged, int64_t st[3]);
/* A compact int32/int64 index tensor on the device with n elements (ndim 1)
 * or the given 2-D shape (rows, cols >= min_cols). */
int ca_check_index1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n);
int ca_check_index2(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t min_rows,
                    int64_t min_cols);
/* An fp32 [n] device tensor (sinks). */
int ca_check_f32_1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n);
const void *ca_data(const DLTensor *t);
const char *ca_dtype_name(DLDataType t, char *buf, size_t size);

/* The model as this plugin can serve it (also create's check). */
int ca_model_check(const sgl_attn_model *m, char *why, size_t why_size);

/* ---------------------------------------------------------------- backend */

typedef struct ca_backend {
    sgl_attn_backend base; /* first: the ABI's header */
    int32_t device;
    int variant;
    int dtype;         /* ATTN_DT_* */
    uint32_t dt_bit;   /* SGL_ATTN_DT_* */
    int32_t hq, hkv, group, head_dim;
    int32_t model_window;
    attn_tiles tiles;
    ca_sizing sz;
    void *dev_mem;     /* one allocation, carved by sz */
    struct attn_tmap_cache *tmaps; /* SGL_ATTN_WGMMA_TMA (default on): the pools' tensor maps (attn_tmap.h); NULL off */
    /* per batch (init_forward_metadata / graph hooks) */
    int planned_mode;  /* SGL_ATTN_MODE_* planned, 0 none */
    int32_t planned_bs, planned_tokens;
    int has_dplan[CA_DPLAN_COUNT], has_eplan[CA_EPLAN_COUNT];
    int32_t grid_items;
    int32_t r2t_rows, r2t_cols;
    int32_t graph_max_bs, graph_max_tokens;
    char err[CA_ERR_MAX];
} ca_backend;

int ca_backend_create(const sgl_attn_create_args *args, sgl_attn_backend **out);
int ca_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch);
int ca_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a);
int ca_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a);
/* Plan for a batch with grid bounds from (bs, tokens); used by the graph hooks too. */
int ca_plan(ca_backend *b, const sgl_attn_batch *batch, int32_t bs, int32_t tokens, int mode);

/* The host's API (log, options), remembered by the entry point. */
const sgl_attn_host_api *ca_host(void);
void ca_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
