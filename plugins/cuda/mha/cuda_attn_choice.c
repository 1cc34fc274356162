/* cuda_attn_choice.c - the options, which kernels an instance runs, and the
 * tiles they plan with (pure C: no CUDA, unit-tested in
 * tests/cuda/test_cuda_attn_plan.c).
 *
 * Defaults (option kernel=auto):
 *   extend  wgmma (extend_wgmma_sm90.cu) on an SM 9.0 device at head dims
 *           64, 128 and 256 when the binary's sm_90a image loads there
 *           (d64: 128-column tiles, four stages; d128: 128-column tiles,
 *           three stages; d256: 64-column tiles, two stages); else mma
 *           (extend_mma.cu: SM 8.x, a binary without the sm_90a image).
 *   decode  register-fed (decode_reg.cu) at head dims 64 / 128 with GQA
 *           groups up to ATTN_DECODE_REG_MAX_GROUP; else the smem-staged mma
 *           decode (decode_mma.cu: head dim 256, larger groups).
 * fp8 e4m3 pools (kv_fp8): the mma extend everywhere, SM 9.0 included (the
 * wgmma extend reads 16-bit pools only; on SM 9.0 at d128 the forward splits
 * off the new tokens to the ragged wgmma kernel: extend_fp8_split.cu), and the
 * register-fed decode (create refuses the options that choose another decode
 * for them).
 * kernel=mma runs the mma extend and the mma decode everywhere, kernel=portable
 * the kernels hip_attn shares (attn_kernels/): both exist to check those paths
 * on a device where the defaults would take over.
 * Dual chunk attention (dual_chunk.h) has DCA forms of the mma decode and of
 * the mma and wgmma extends: its decode is always the mma one, its extend
 * (dc_extend) the wgmma one where the plain extend is wgmma at head dim 128,
 * else the mma one (kernel=portable too: the portable kernels have no DCA
 * form; the wgmma DCA form is head dim 128's). */
#include "cuda_attn.h"
#include "attn_kernels/plan_math.h"
#include "sdk_option.h"

static const char *const k_options[CA_KERNEL_COUNT_] = {"auto", "mma", "portable"};

/* Options of variants deleted or made the only behaviour (docs/lab/levers.md). */
static const char *const k_removed[] = {"fp8_cvt", "verify_head_pairs", "tree_mask_ahead", "extend_new_ragged",
                                        "fp8_prefix_kernel", "save_in_extend", "fp8_prefix_ring",
                                        "fp8_dec_splits", "fp8_dec_min_blocks", "fp8_dec_wave",
                                        "ragged192_bn64", "tree_prefix_plain",
                                        "dec16_fast_merge", "prefill_qdbl", "decode_fused_save",
                                        "extend_wgmma_dims", "prefill_tma_save"};

int ca_read_options(const sgl_attn_create_args *a, int *kernel) {
    const sgl_sdk_opts o = sgl_sdk_opts_of(a, CA_NAME);
    const int rc = sgl_sdk_opt_removed(&o, k_removed, NULL, sizeof k_removed / sizeof k_removed[0]);
    if (rc) return rc;
    return sgl_sdk_opt_choice(&o, "kernel", NULL, k_options, CA_KERNEL_COUNT_, CA_KERNEL_AUTO, kernel);
}

int ca_read_lever(const sgl_attn_create_args *a, const char *name, int *on) {
    const sgl_sdk_opts o = sgl_sdk_opts_of(a, CA_NAME);
    return sgl_sdk_opt_bool(&o, name, NULL, 0, on);
}

void ca_dec_wave_aims(const attn_sizing *s, int64_t slots, int32_t blocks_per_item, int32_t *aims) {
    for (int32_t bs = 0; bs <= s->max_reqs; bs++)
        aims[bs] = attn_plan_wave_aim(bs, s->decode_target_items, slots, blocks_per_item);
}

int32_t ca_dec_wave_grid_items(const attn_sizing *s, int32_t aim, int32_t bs) {
    const long long items = (long long)(aim > 0 ? aim : 0) + (bs > 0 ? bs : 0);
    return (int32_t)(items < s->decode_max_items ? items : s->decode_max_items);
}

const char *ca_kernel_option_name(int option) {
    return option >= 0 && option < CA_KERNEL_COUNT_ ? k_options[option] : "?";
}

void ca_choose_kernels(int option, int wgmma_image, int head_dim, int group, int kv_fp8, attn_kernels *k) {
    k->kv_fp8 = kv_fp8 != 0;
    k->dc_extend = ATTN_EXTEND_MMA;
    if (option == CA_KERNEL_PORTABLE) {
        k->extend = ATTN_EXTEND_PORTABLE;
        k->decode = ATTN_DECODE_PORTABLE;
        return;
    }
    if (option == CA_KERNEL_MMA) {
        k->extend = ATTN_EXTEND_MMA;
        k->decode = ATTN_DECODE_MMA;
        return;
    }
    const int reg = (head_dim == 64 || head_dim == 128) && group >= 1 && group <= ATTN_DECODE_REG_MAX_GROUP;
    /* The wgmma extend serves head dims 64, 128 and 256 (qk = v: the model
     * check refuses qk != v at 64 and 256); the mma extend serves the rest
     * (SM 8.x, no sm_90a image, fp8 pools). Dual chunk keeps its mma extend
     * at 64 and 256: its wgmma form is head dim 128's. */
    const int wg_d = head_dim == 64 || head_dim == 128 || head_dim == 256;
    k->extend = wgmma_image && wg_d && !kv_fp8 ? ATTN_EXTEND_WGMMA : ATTN_EXTEND_MMA;
    k->decode = reg ? ATTN_DECODE_REG : ATTN_DECODE_MMA;
    k->dc_extend = head_dim == 128 ? k->extend : ATTN_EXTEND_MMA;
}

attn_tiles attn_kernel_tiles(const attn_kernels *k, int group) {
    if (k->extend == ATTN_EXTEND_PORTABLE) return attn_portable_tiles(group);
    attn_tiles t;
    /* both tensor-core decodes serve up to 16 q heads of a kv head per block
     * (the rows of one mma tile) and split KV in multiples of 64 columns */
    t.decode_heads_per_block = 16;
    t.decode_chunk_align = 64;
    t.extend_block_m = 64; /* extend_mma.cu */
    t.extend_block_n = k->head_dim == 256 ? 32 : 64;
    if (k->extend == ATTN_EXTEND_WGMMA) { /* extend_wgmma_sm90.cuh: 128-row items, 128-column tiles (64 at d256) */
        t.extend_block_m = 128;
        t.extend_block_n = k->head_dim == 256 ? 64 : 128;
    }
    return t;
}

int ca_no_prefix_shown(const sgl_attn_batch *bt, int32_t bs) {
    const DLTensor *sl = bt->seq_lens_cpu, *el = bt->extend_seq_lens_cpu;
    if (!sgl_sdk_host_index(sl, bs) || !sgl_sdk_host_index(el, bs)) return 0;
    for (int32_t i = 0; i < bs; i++)
        if (sgl_sdk_index_at(sl, i) != sgl_sdk_index_at(el, i)) return 0;
    return 1;
}

/* The direct extend attends the new tokens alone, so it serves only a batch
 * the host knows has no prefix; a batch with one runs the paged extend over
 * every column (docs/lab/levers.md says why not a prefix pass and a merge). */
int ca_split_planned(int direct, int verify, int graph, int no_prefix) {
    return !direct || (!verify && !graph && no_prefix);
}
