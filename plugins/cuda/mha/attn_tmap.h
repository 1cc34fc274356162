/*
 * attn_tmap.h - the KV pool's TMA tensor maps for the wgmma extend kernel's
 * TMA producer (extend_wgmma_sm90.cuh wg_tma_boxes): the maps as a kernel
 * parameter, and a per-layer cache in the backend instance that the host
 * side fills when a layer's pool first shows up (or moves).  Plain C (the
 * CUDA side includes it too).
 */
#ifndef SGL_CUDA_ATTN_TMAP_H
#define SGL_CUDA_ATTN_TMAP_H

#include <stdint.h>

#include "attn_kernels/attn_params.h"

#ifdef __cplusplus
#define ATTN_ALIGN64 alignas(64)
extern "C" {
#else
#define ATTN_ALIGN64 _Alignas(64)
#endif

/* Rows of one TMA box: the kernel takes a box by TMA only where 16 KV columns
 * starting on a multiple of 16 lie in one page, so the host launches the TMA
 * kernel only for page sizes that are multiples of this. */
#define ATTN_TMA_BOX_ROWS 16

/* K and V maps (CUtensorMap, 128 bytes, 64-byte aligned): the pool viewed as
 * [slots][hkv][D] 16-bit elements, box 64 elements x 1 head x 16 slots,
 * 128-byte swizzle (the consumers' sw128 layout). */
typedef struct attn_kv_tmaps {
    ATTN_ALIGN64 unsigned char k[128];
    ATTN_ALIGN64 unsigned char v[128];
} attn_kv_tmaps;

#define ATTN_TMAP_CACHE 1024 /* layer ids 0..1023; other ids share one more entry */

typedef struct attn_tmap_entry {
    const void *k, *v;
    int64_t num_slots, kc_stride_s, kc_stride_h, vc_stride_s, vc_stride_h;
    int32_t hkv, d, valid, reserved_;
    attn_kv_tmaps maps;
} attn_tmap_entry;

typedef struct attn_tmap_cache {
    void *encode_fn; /* cuTensorMapEncodeTiled */
    attn_tmap_entry e[ATTN_TMAP_CACHE + 1];
    /* the fp8 split extend's dequantised new rows (buffers fixed at create):
     * encoded once there by attn_tmap_ragged, so its forwards encode nothing */
    attn_kv_tmaps split;
} attn_tmap_cache;

/* Create time: the cache, or NULL when the driver has no encoder (or out of
 * host memory): the caller then stays on the cp.async producer. */
attn_tmap_cache *attn_tmap_cache_new(void);
void attn_tmap_cache_free(attn_tmap_cache *c);
/* The maps of p's pool (k_cache / v_cache, strides, slots, hkv) for head dim
 * d, from the layer's entry, re-encoded only when the pool changed (host-only
 * work: no allocation, no device call).  NULL when the encoder refuses the
 * pool (a layout TMA cannot describe): *cu_err is its CUresult the first time,
 * 0 on later calls with the same pool; the caller runs the cp.async kernel. */
const attn_kv_tmaps *attn_tmap_for(attn_tmap_cache *c, int32_t layer_id, const attn_fwd *p, int32_t d, int *cu_err);
/* forward_ragged's K [rows][hkv][dqk] and V [rows][hkv][dv] maps (p's
 * k_cache / v_cache, strides and num_slots = rows), encoded into *out each
 * call (host-only work); 0 or the encoder's CUresult (the caller then runs
 * the cp.async producer). */
int attn_tmap_ragged(const attn_tmap_cache *c, const attn_fwd *p, int32_t dqk, int32_t dv, attn_kv_tmaps *out);

#ifdef __cplusplus
}
#endif
#endif
