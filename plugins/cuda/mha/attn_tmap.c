/*
 * attn_tmap.c - encodes the KV pool's tensor maps (attn_tmap.h).  The
 * driver's cuTensorMapEncodeTiled comes through the runtime's entry-point
 * query: the plugin links the static cudart and never libcuda.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "attn_tmap.h"

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                    CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                    CUtensorMapFloatOOBfill);

_Static_assert(sizeof(CUtensorMap) == 128, "a tensor map is 128 bytes");
_Static_assert(sizeof(attn_tmap_cache) % 64 == 0, "aligned_alloc wants a multiple of the alignment");

attn_tmap_cache *attn_tmap_cache_new(void) {
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
        (void)cudaGetLastError();
        return NULL;
    }
    attn_tmap_cache *c = (attn_tmap_cache *)aligned_alloc(64, sizeof(attn_tmap_cache));
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->encode_fn = fn;
    return c;
}

void attn_tmap_cache_free(attn_tmap_cache *c) { free(c); }

/* One operand: dims (innermost first) D elements, hkv heads, slots; 16-bit
 * elements (the copy moves bytes: fp16 and bf16 alike). */
static int encode(encode_tiled_fn enc, unsigned char *map, const void *pool, int32_t d, int32_t hkv, int64_t slots,
                  int64_t stride_s, int64_t stride_h) {
    const cuuint64_t dims[3] = {(cuuint64_t)d, (cuuint64_t)hkv, (cuuint64_t)slots};
    const cuuint64_t strides[2] = {(cuuint64_t)stride_h * 2, (cuuint64_t)stride_s * 2}; /* bytes */
    const cuuint32_t box[3] = {64, 1, ATTN_TMA_BOX_ROWS}; /* 128 bytes: the 128-byte swizzle's span */
    const cuuint32_t estr[3] = {1, 1, 1};
    return (int)enc((CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, (void *)pool, dims, strides, box, estr,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

const attn_kv_tmaps *attn_tmap_for(attn_tmap_cache *c, int32_t layer_id, const attn_fwd *p, int32_t d, int *cu_err) {
    *cu_err = 0;
    if (!c || !p || !p->k_cache || !p->v_cache || d < 64 || d % 64 || p->hkv < 1 || p->num_slots < 1) {
        *cu_err = (int)CUDA_ERROR_INVALID_VALUE;
        return NULL;
    }
    attn_tmap_entry *t = &c->e[layer_id >= 0 && layer_id < ATTN_TMAP_CACHE ? layer_id : ATTN_TMAP_CACHE];
    if (t->valid != 0 && t->k == p->k_cache && t->v == p->v_cache && t->num_slots == p->num_slots &&
        t->kc_stride_s == p->kc_stride_s && t->kc_stride_h == p->kc_stride_h && t->vc_stride_s == p->vc_stride_s &&
        t->vc_stride_h == p->vc_stride_h && t->hkv == p->hkv && t->d == d)
        return t->valid > 0 ? &t->maps : NULL; /* < 0: this pool failed before (reported then) */
    encode_tiled_fn enc = (encode_tiled_fn)c->encode_fn;
    int e = encode(enc, t->maps.k, p->k_cache, d, p->hkv, p->num_slots, p->kc_stride_s, p->kc_stride_h);
    if (!e) e = encode(enc, t->maps.v, p->v_cache, d, p->hkv, p->num_slots, p->vc_stride_s, p->vc_stride_h);
    *cu_err = e;
    t->k = p->k_cache;
    t->v = p->v_cache;
    t->num_slots = p->num_slots;
    t->kc_stride_s = p->kc_stride_s;
    t->kc_stride_h = p->kc_stride_h;
    t->vc_stride_s = p->vc_stride_s;
    t->vc_stride_h = p->vc_stride_h;
    t->hkv = p->hkv;
    t->d = d;
    t->valid = e ? -1 : 1;
    return e ? NULL : &t->maps;
}

int attn_tmap_ragged(const attn_tmap_cache *c, const attn_fwd *p, int32_t dqk, int32_t dv, attn_kv_tmaps *out) {
    if (!c || !p || !out || !p->k_cache || !p->v_cache || dqk < 64 || dqk % 64 || dv < 64 || dv % 64 || p->hkv < 1 ||
        p->num_slots < 1)
        return (int)CUDA_ERROR_INVALID_VALUE;
    encode_tiled_fn enc = (encode_tiled_fn)c->encode_fn;
    int e = encode(enc, out->k, p->k_cache, dqk, p->hkv, p->num_slots, p->kc_stride_s, p->kc_stride_h);
    if (!e) e = encode(enc, out->v, p->v_cache, dv, p->hkv, p->num_slots, p->vc_stride_s, p->vc_stride_h);
    return e;
}
