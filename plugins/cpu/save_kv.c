/* save_kv.c - save_kv_cache: one new token's K (and V) into its pool slot,
 * converted to the pool dtype (round to nearest even; an fp8 pool takes
 * the value divided by its scale, saturating).  With MLA's k_rope the row is
 * the latent k, then k_rope.  FlashMLA's fp8 record takes the latent values
 * quantised per block of 128 as the indexer's keys are (cref_fp8.h), the
 * RoPE values in bf16. */
#include <string.h>

#include "cpu_ref.h"
#include "cref_convert.h"

/* k's 576 values (MLA's latent row, then its RoPE dims) as one record. */
static void put_record(unsigned char *rec, const unsigned char *k, uint32_t k_dt) {
    float x[CREF_REC_LATENT];
    for (int d = 0; d < CREF_REC_LATENT; d++) x[d] = (float)cref_load_f(k, d, k_dt);
    for (int blk = 0; blk < CREF_REC_LATENT / SGL_ATTN_DSA_SCALE_BLOCK; blk++) {
        const float s = cref_e4m3_quant_block(x + blk * SGL_ATTN_DSA_SCALE_BLOCK, SGL_ATTN_DSA_SCALE_BLOCK, 0,
                                              rec + blk * SGL_ATTN_DSA_SCALE_BLOCK);
        memcpy(rec + CREF_REC_SCALES + sizeof s * (size_t)blk, &s, sizeof s);
    }
    for (int d = CREF_REC_LATENT; d < CREF_REC_DIMS; d++) {
        const uint16_t v = sgl_sdk_f32_to_bf16((float)cref_load_f(k, d, k_dt));
        memcpy(rec + CREF_REC_ROPE + sizeof v * (size_t)(d - CREF_REC_LATENT), &v, sizeof v);
    }
}

static void put_row(unsigned char *dst, uint32_t dst_dt, const unsigned char *src, uint32_t src_dt, int64_t n,
                    double div) {
    if (dst_dt == src_dt) {
        memcpy(dst, src, (size_t)n * cref_dt_size(dst_dt));
        return;
    }
    if (div != 1) {
        for (int64_t i = 0; i < n; i++) cref_store_f(dst, i, dst_dt, cref_load_f(src, i, src_dt) / div);
        return;
    }
    for (int64_t i = 0; i < n; i++) cref_store_f(dst, i, dst_dt, cref_load_f(src, i, src_dt));
}

void cref_save_token(const cref_job *J, const unsigned char *k, uint32_t k_dt, const unsigned char *v, uint32_t v_dt,
                     int64_t t, int64_t slot) {
    const int64_t nk = (int64_t)J->hkv * J->dqk;
    const size_t kvsz = cref_dt_size(J->kv_dt), ksz = cref_dt_size(k_dt);
    /* the pool is written through the read-only view the loops use */
    unsigned char *kc = (unsigned char *)(uintptr_t)J->k_cache + (size_t)(slot * J->k_slot) * kvsz;
    if (J->rec) { /* sparse MLA's record: concatenated k only (sparse_mla.c refuses k_rope) */
        put_record(kc, k + (size_t)(t * J->dqk) * ksz, k_dt);
        return;
    }
    if (J->k_rope) { /* MLA (one head): latent part from k, rope part from k_rope */
        const int64_t lat = J->dq_lat;
        put_row(kc, J->kv_dt, k + (size_t)(t * lat) * ksz, k_dt, lat, J->k_div);
        put_row(kc + (size_t)lat * kvsz, J->kv_dt, J->k_rope + (size_t)(t * J->kr_ts) * ksz, k_dt, J->dqk - lat,
                J->k_div);
    } else {
        put_row(kc, J->kv_dt, k + (size_t)(t * nk) * ksz, k_dt, nk, J->k_div);
    }
    if (v) {
        const int64_t nv = (int64_t)J->hkv * J->dv;
        unsigned char *vc = (unsigned char *)(uintptr_t)J->v_cache;
        put_row(vc + (size_t)(slot * J->v_slot) * kvsz, J->kv_dt, v + (size_t)(t * nv) * cref_dt_size(v_dt), v_dt, nv,
                J->v_div);
    }
}
