/* cuda_attn_choice.c - the options, which kernels an instance runs, and the
 * tiles they plan with (pure C: no CUDA, unit-tested in
 * tests/cuda/test_cuda_attn_plan.c).
 *
 * Defaults (option kernel=auto):
 *   extend  wgmma (extend_wgmma_sm90.cu) on an SM 9.0 device at head dim 128
 *           when the binary's sm_90a image loads there; else mma
 *           (extend_mma.cu: SM 8.x, head dims 64 and 256, a binary without
 *           the sm_90a image).
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
 * (dc_extend) the wgmma one where the plain extend is wgmma, else the mma
 * one (kernel=portable too: the portable kernels have no DCA form). */
#include "cuda_attn.h"
#include "sdk_option.h"

static const char *const k_options[CA_KERNEL_COUNT_] = {"auto", "mma", "portable"};

int ca_read_options(const sgl_attn_create_args *a, int *kernel) {
    const sgl_sdk_opts o = sgl_sdk_opts_of(a, CA_NAME);
    return sgl_sdk_opt_choice(&o, "kernel", NULL, k_options, CA_KERNEL_COUNT_, CA_KERNEL_AUTO, kernel);
}

/* tree_mask_ahead (a lever, bench/gpu/levers/tree_mask_ahead.conf): the wgmma
 * extend's tree verify loads a tile's mask words one tile ahead. */
int ca_read_tree_ahead(const sgl_attn_create_args *a, int *ahead) {
    const sgl_sdk_opts o = sgl_sdk_opts_of(a, CA_NAME);
    return sgl_sdk_opt_bool(&o, "tree_mask_ahead", NULL, 0, ahead);
}

/* verify_head_pairs (a lever, bench/gpu/levers/verify_head_pairs.conf): the
 * wgmma extend runs a verify batch of <= 64 tokens per request with an even
 * GQA group as (item, two q heads of one kv head) pairs. */
int ca_read_head_pairs(const sgl_attn_create_args *a, int *pairs) {
    const sgl_sdk_opts o = sgl_sdk_opts_of(a, CA_NAME);
    return sgl_sdk_opt_bool(&o, "verify_head_pairs", NULL, 0, pairs);
}

/* extend_new_ragged (option, 0 by default; docs/cuda.md "Options"): on a
 * 16-bit pool where the extend and forward_ragged are the wgmma kernels, an
 * extend that saves its K/V attends the new tokens from the call's k / v
 * (the ragged body), the prefix on the paged kernel, merged by LSE, with the
 * save beside the attention (cuda_attn_forward.c, direct_split_extend). */
int ca_read_new_ragged(const sgl_attn_create_args *a, int *on) {
    const sgl_sdk_opts o = sgl_sdk_opts_of(a, CA_NAME);
    return sgl_sdk_opt_bool(&o, "extend_new_ragged", NULL, 0, on);
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
    k->extend = wgmma_image && head_dim == 128 && !kv_fp8 ? ATTN_EXTEND_WGMMA : ATTN_EXTEND_MMA;
    k->decode = reg ? ATTN_DECODE_REG : ATTN_DECODE_MMA;
    k->dc_extend = k->extend;
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
    if (k->extend == ATTN_EXTEND_WGMMA) { /* extend_wgmma_sm90.cuh: 128-row items, 128-column tiles */
        t.extend_block_m = 128;
        t.extend_block_n = 128;
    }
    return t;
}
