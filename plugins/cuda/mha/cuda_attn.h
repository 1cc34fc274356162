/*
 * cuda_attn.h - the cuda_attn plugin's internals: how its C files fit.
 *
 *   cuda_attn_plugin.c   descriptor and entry (the SDK's), probe (caps), supports_model
 *   cuda_attn_backend.c  create (kernel choice and setup, device buffers) /
 *                        destroy, graph hooks
 *   cuda_attn_forward.c  init_forward_metadata (plan kernels) and the forwards
 *   cuda_attn_ragged.c   forward_ragged (ABI 1.2): checks, its plan, the kernels
 *   cuda_attn_check.c    tensor and model checks with messages: the SDK's
 *                        tensor specs (pure C), the dual_chunk block's
 *   cuda_attn_choice.c   the options, which kernels run, their tiles (pure C)
 *   attn_dispatch.c      an instance's kernels -> setup and launchers
 *   attn_tmap.c          the KV pool's TMA tensor maps (wgmma extend)
 *   *.cu                 one kernel role each, with its launcher (cuda_launch.h)
 * Sizing and the kernels shared with hip_attn: plugins/sdk/attn_kernels/.
 *
 * The pure-C files build without CUDA so tests/cuda/ can unit-test them here.
 */
#ifndef SGL_CUDA_ATTN_H
#define SGL_CUDA_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "attn_kernels/sizing.h"
#include "cuda/sdk_cuda.h"
#include "cuda_launch.h"
#include "sdk_tensor.h"
#include "sgl_attn_abi.h"

#define CA_NAME "cuda_attn"
#define CA_ERR_MAX 512
/* The item check's blocks per item list (they stride over longer lists). */
#define CA_CHECK_MAX_BLOCKS 1024

/* The plugin option "kernel" (conf plugin_options.cuda_attn.kernel): auto
 * (the defaults), mma, portable (cuda_attn_choice.c). */
enum { CA_KERNEL_AUTO = 0, CA_KERNEL_MMA = 1, CA_KERNEL_PORTABLE = 2, CA_KERNEL_COUNT_ };
/* The options, read once at create through the creating host (the SDK's
 * option helper) into *kernel; a bad value fails with create_args.error
 * naming the option, the value and the accepted ones. */
int ca_read_options(const sgl_attn_create_args *a, int *kernel);
/* A lever's option (a boolean, unset or empty: off) into *on; a value that is
 * not a boolean fails as ca_read_options.  The levers' options are read with it
 * at create (docs/cuda.md's options, bench/gpu/levers/); none is live now. */
int ca_read_lever(const sgl_attn_create_args *a, const char *name, int *on);
const char *ca_kernel_option_name(int option);
/* The blocks per SM the fp8 decode_reg's registers allow: its launch bound
 * (decode_reg.cu, dr_kv::min_blocks). */
#define CA_FP8_DEC_SM_BLOCKS 6
/* An fp8 e4m3 pool's decode: its plan picks each call's splits by the wave
 * rule (plan_math.h) against SMs x CA_FP8_DEC_SM_BLOCKS block slots, within
 * a sizing of CA_FP8_DEC_WAVE_SPLITS x the 16-bit items (half the bytes per
 * token: more, shorter items; B 128 may take 3 splits a request). */
#define CA_FP8_DEC_WAVE_SPLITS 8
/* The wave rule's aim for every batch size 0..s->max_reqs into aims[] (create
 * tabulates it, so a forward reads one entry): plan_math.h's
 * attn_plan_wave_aim on `slots` block slots, blocks_per_item blocks an item,
 * within the sized target. */
void ca_dec_wave_aims(const attn_sizing *s, int64_t slots, int32_t blocks_per_item, int32_t *aims);
/* The decode grid's items for a batch of bs requests planned at `aim` items
 * with ceil splits: aim + bs, within the sized items. */
int32_t ca_dec_wave_grid_items(const attn_sizing *s, int32_t aim, int32_t bs);
/* The kernels an instance runs (k->extend, k->decode) for the option, the
 * model's head dim and GQA group; wgmma_image: an SM 9.0 device that runs
 * this binary's sm_90a image (attn_wgmma_available); kv_fp8: an fp8 e4m3
 * pool (the mma extend; sets k->kv_fp8). */
void ca_choose_kernels(int option, int wgmma_image, int head_dim, int group, int kv_fp8, attn_kernels *k);
/* 1 when an extend batch's host mirrors (seq_lens_cpu, extend_seq_lens_cpu)
 * show that no request has a prefix (every seq_len equals its extend length);
 * without both mirrors: 0. */
int ca_no_prefix_shown(const sgl_attn_batch *bt, int32_t bs);
/* Whether a causal extend batch plans the split extend's lists on an instance
 * that has them: an fp8 pool's split (direct 0) takes every one; the 16-bit
 * pool's direct extend (direct 1, no prefix pass) only a batch whose mirrors
 * show no prefix, neither a verify batch nor one planned by a graph hook (a
 * captured forward cannot choose per replay). */
int ca_split_planned(int direct, int verify, int graph, int no_prefix);

/* ----------------------------------------------------------------- checks */

/* A check context: where messages go. */
typedef struct ca_msg {
    char *buf;
    size_t size;
    const char *call; /* "forward_decode"... */
} ca_msg;

/* Each check is one SDK tensor spec for `what`, in CUDA memory of device
 * `device`; a message starts "<call>: <what>".  A tensor of floats: dtype bit
 * `dt`, [n0, n1, n2] (n0 may be SGL_SDK_ANY; or [n0, n1 * n2] when
 * allow_merged), rows of 16 bytes (the kernels' loads), extents in 32 bits;
 * its element strides come back in st[0..2]. */
int ca_check_float3(const ca_msg *m, const DLTensor *t, const char *what, int device, uint32_t dt, int64_t n0,
                    int64_t n1, int64_t n2, int allow_merged, int64_t st[3]);
/* A compact int32/int64 index tensor with at least n entries (ndim 1) or at
 * least min_rows x min_cols (ndim 2, extents in 32 bits). */
int ca_check_index1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n);
int ca_check_index2(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t min_rows,
                    int64_t min_cols);
/* batch.custom_mask: a compact 1-D uint8 / bool tensor on the device. */
int ca_check_mask(const ca_msg *m, const DLTensor *t, int device);
/* A compact float32 [n] tensor (sinks). */
int ca_check_f32_1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n);
/* The LSE output: a compact float32 [t, hq] tensor, written. */
int ca_check_lse(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t t_rows, int64_t hq);
/* forward_ragged's scalars: batch size within create's max_reqs, heads,
 * head dims (qk 128 / v 128 or qk 192 / v 128), scale, soft-cap, causal. */
int ca_check_ragged_shape(const ca_msg *m, const sgl_attn_ragged_args *a, int32_t max_reqs);
/* A host mirror of cu_seqlens (NULL: fine): [bs + 1] index tensor in host
 * memory, 0 first, never decreasing, its last entry <= rows; *longest: the
 * longest request it shows. */
int ca_check_cu_mirror(const ca_msg *m, const DLTensor *t, const char *what, int32_t bs, int64_t rows,
                       int64_t *longest);

/* ABI 1.2 fields cuda_attn does not serve, refused by name when set (only
 * fields inside the caller's struct_size are read). */
int ca_refuse_unserved_fwd(const ca_msg *m, const sgl_attn_forward_args *a);
/* batch.encoder_out_cache_loc (ABI 1.2; not read past an older caller's
 * struct_size): NULL gives *n = -1; else it needs encoder_lens, and is a
 * compact 1-D int32/int64 tensor on the device with at most 2^31 - 1
 * entries (*n), as many as encoder_lens_cpu sums to when the host mirror is
 * given.  Its entries against the table: encoder_loc_check.cu. */
int ca_check_enc_loc(const ca_msg *m, const sgl_attn_batch *bt, int device, int32_t bs, int64_t *n);
/* batch.page_table (ABI 1.2): [>= bs, >= 1] int32/int64 on the device, a page
 * size that is a power of two (the kernels shift, never divide) and pages x
 * page_size columns in 31 bits; *shift = log2(page_size). */
int ca_check_page_table(const ca_msg *m, const DLTensor *pt, int device, int32_t bs, int32_t page_size,
                        int32_t *shift);
/* layer.slot_map (ABI 1.2): [n >= 1] int32/int64 on the device, n in 31 bits
 * (its entries are checked on the device, with the table's). */
int ca_check_slot_map(const ca_msg *m, const DLTensor *map, int device);
/* An fp8 pool's scales: the layer's scale tensors ([1] fp32 on the device,
 * their pointers in *k_dev / *v_dev, read by the kernels) or else its floats
 * (finite, > 0). */
int ca_check_kv_scales(const ca_msg *m, const sgl_attn_layer *L, int device, const float **k_dev,
                       const float **v_dev);

/* A forward's dual_chunk block (set): its sizes, what it cannot go with,
 * q_succ / q_inter like q (their element strides back in qs_st / qi_st). */
typedef struct ca_dca_ctx {
    int device, has_enc, kv_fp8;
    uint32_t dt;
    int64_t tokens, hq, head_dim;
} ca_dca_ctx;
int ca_check_dual_chunk(const ca_msg *m, const sgl_attn_forward_args *a, const ca_dca_ctx *c, int64_t qs_st[3],
                        int64_t qi_st[3]);

/* The ragged-only head dims: a model of qk 192 / v 128 (DeepSeek's MLA
 * prefill in its MHA form) is served by forward_ragged alone. */
#define CA_RAGGED_DQK 192
#define CA_RAGGED_DV 128
/* The model as this plugin can serve it (also create's check). */
int ca_model_check(const sgl_attn_model *m, char *why, size_t why_size);

/* ---------------------------------------------------------------- backend */

typedef struct ca_backend {
    sgl_attn_backend base; /* first: the ABI's header */
    int32_t device;
    const sgl_attn_host_api *host; /* the creating host (its log); NULL from a 1.0 host */
    attn_kernels kern; /* chosen and set up at create; the launchers read it */
    uint32_t dt_bit;   /* SGL_ATTN_DT_* of q / k / v / out */
    uint32_t kv_bit;   /* SGL_ATTN_DT_* of the pool: dt_bit or fp8 e4m3 */
    int32_t hq, hkv, group, head_dim;
    int32_t model_window;
    int32_t model_attn_type; /* sgl_attn_attn_type: what the extend plan's self items see */
    int32_t *iota;     /* encoder-only models: [max_tokens] identity table (else NULL) */
    attn_tiles tiles;
    attn_sizing sz;
    /* an fp8 pool: [max_reqs + 1] the decode plan's aim per batch size by the wave
     * rule on SMs x CA_FP8_DEC_SM_BLOCKS slots; else NULL */
    int32_t *dec_wave_aim;
    void *dev_mem;     /* one allocation, carved by sz */
    attn_tmap_cache *tmaps; /* wgmma extend / ragged with a TMA kernel: the encoder (and the pools' maps); else NULL */
    int ragged_only;   /* the model's head dims differ (qk 192 / v 128): no paged forwards */
    int rg_ok;         /* forward_ragged's kernels are set up; else rg_why says why not */
    char rg_why[160];
    int rg_wgmma;      /* forward_ragged runs the wgmma kernel (else the mma one) */
    int rg_tma;        /* ... with its TMA producer set up */
    void *rg_mem;      /* forward_ragged's items: [rg_max_items] attn_extend_item, then the count */
    int32_t rg_max_items;
    /* The split extend on an fp8 pool (extend_fp8_split.cu; SM 9.0 d128 with the ragged
     * wgmma kernel, a causal model): one allocation at create for the largest batch,
     * carved into the two item lists and their counts, the dequantised new K / V rows
     * ([max_tokens, hkv, 128] each, dtype), the prefix pass's output ([max_tokens, hq,
     * 128], dtype) and the two passes' LSEs ([max_tokens, hq] fp32 each); NULL where the
     * extend is the fp8 mma one alone. */
    void *sp_mem;
    attn_extend_item *sp_new, *sp_pre;
    int32_t *sp_num;
    void *sp_k, *sp_v, *sp_part;
    float *sp_lse_new, *sp_lse_pre;
    int32_t sp_max_new, sp_max_pre;
    const attn_kv_tmaps *sp_tmaps; /* the new rows' TMA maps, encoded at create (in tmaps: 64-byte
                                    * aligned); NULL: the ragged wgmma gathers them by cp.async */
    /* The direct extend (16-bit pools, SM 9.0 d128 with the wgmma extend and forward_ragged's
     * wgmma kernel, a causal model) of a batch whose host mirrors show no prefix: the same
     * lists and the new tokens' LSE (no dequantised rows, prefix output or prefix LSE: sp_k,
     * sp_v, sp_part, sp_lse_pre NULL), the new tokens read from the call's k / v, the save
     * after them as their programmatic dependent (cuda_attn_forward.c, direct_extend). */
    int sp_direct;
    int sp_new_tma;             /* ... the new-token kernel's TMA producer is set up */
    int plan_graph;             /* ca_plan runs for a graph hook: no direct extend (its lists stay unplanned) */
    int planned_split;          /* the planned batch has the split's lists (direct: no request has a prefix) */
    int sp_prefix;              /* fp8 split: the batch may have a prefix: 0 only when the host mirrors show
                                 * none (then no prefix pass or merge is launched; graphs keep 1) */
    int32_t sp_grid_new, sp_grid_pre; /* their grid bounds (the batch's, or the capture's) */
    int sp_pre_wgmma;           /* fp8 split: its prefix items on the wgmma extend (its
                                 * kernel set up), 128 rows each;
                                 * else on the fp8 mma extend, block_m rows */
    /* Tree verify's packed mask (tree_mask_pack.cu), sized at create for tmask_rows rows of
     * tmask_words 64-bit words (max_context columns) and max_reqs x tmask_words full flags;
     * NULL for models that do not verify (spec_tokens <= 1) or take no tree mask
     * (encoder-only, bidirectional, ragged-only). */
    uint64_t *tmask_bits;
    uint8_t *tmask_full;
    /* each request's first word that is not full (max_reqs entries, after the flags in
     * tmask_full's allocation: the wgmma extend's plain prefix) */
    uint32_t *tmask_first;
    int32_t tmask_words;
    int32_t tmask_rows; /* rows the bits hold: min(max_tokens, max_reqs x the model's spec_tokens) */
    sgl_sdk_cuda_fault fault; /* index faults the kernels met (gpu_fault.h): read by ca_plan */
    /* per batch (init_forward_metadata / graph hooks) */
    int planned_mode;  /* SGL_ATTN_MODE_* planned, 0 none (verify and draft extend: EXTEND) */
    int planned_verify; /* the planned batch is a target verify */
    int planned_self;   /* ATTN_SELF_* of the planned extend items */
    const uint8_t *planned_mask; /* tree verify: custom_mask's bytes (else NULL) */
    attn_index planned_mask_indptr;
    int32_t planned_mask_words; /* tree verify: words per packed row of this batch (its table's columns) */
    int32_t planned_tpr; /* verify: tokens_per_req */
    /* cross attention's encoder slots (batch.encoder_out_cache_loc, checked on the device at
     * planning): its entries and the tensor (planned_enc_loc.p is its data, the pointer a cross
     * layer's save checks against); planned_enc_n -1 when the batch had none */
    int64_t planned_enc_n;
    attn_index planned_enc_loc;
    int32_t planned_bs, planned_tokens;
    int64_t checked_slots; /* the pool size the planned items were checked against (INT64_MAX: not yet) */
    /* the same for the last slot-mapped layer: its map (NULL: none yet), its length and pool */
    const void *checked_map;
    int64_t checked_map_n, checked_map_slots;
    int has_dplan[ATTN_DPLAN_COUNT], has_eplan[ATTN_EPLAN_COUNT];
    int32_t grid_items;
    int32_t r2t_rows, r2t_cols; /* the table's rows and columns (tokens; a page table: pages x page size) */
    int32_t paged;              /* 1: the batch has a page_table (the kernels' table) */
    int32_t page_size, page_shift; /* the page table's (page_size = 1 << page_shift); else 1, 0 */
    int32_t graph_max_bs, graph_max_tokens;
    /* What the captured graphs' forwards took from the capture (graph_plan), which a replay
     * must show again: the table (its address, rows, columns, page size: the kernels index it
     * and size the packed mask's rows by it), and for verify graphs tokens_per_req (the items'
     * rows and the mask's row stride), whether the batch had a tree mask (the kernels' TREE
     * instantiation) and, for the portable extend that reads the bytes in the graph,
     * custom_mask's and mask_indptr's addresses.  Reset by init_graph_state. */
    const void *graph_table;
    int32_t graph_rows, graph_cols, graph_page_shift, graph_paged;
    int32_t graph_verify_tpr; /* 0: no verify batch captured */
    int graph_verify_tree;
    const void *graph_verify_mask, *graph_verify_indptr;
    char err[CA_ERR_MAX];
} ca_backend;

int ca_backend_create(const sgl_attn_create_args *args, sgl_attn_backend **out);
int ca_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch);
int ca_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a);
int ca_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a);
int ca_forward_ragged(sgl_attn_backend *b, const sgl_attn_ragged_args *a);
/* Plan for a batch with grid bounds from (bs, tokens); used by the graph hooks too. */
int ca_plan(ca_backend *b, const sgl_attn_batch *batch, int32_t bs, int32_t tokens, int mode);

#endif
