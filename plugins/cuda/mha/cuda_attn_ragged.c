/* cuda_attn_ragged.c - forward_ragged (ABI 1.2, SGL_ATTN_FEAT_RAGGED):
 * attention over K / V passed as tensors with cu_seqlens, neither read from
 * the pool nor written to it (DeepSeek's MLA prefill: qk 192 / v 128, and
 * d128), causal (bottom-right) or not, with the optional LSE output.
 *
 * Checks, then on a.stream: the ragged plan kernel (ragged_plan.cu: the
 * device cu_seqlens -> extend items in the instance's own item buffer, so
 * the batch planned by init_forward_metadata stays valid around it) and the
 * extend kernel with its RAGGED flag: the wgmma one on an SM 9.0 device with
 * the sm_90a image (TMA boxes of K / V rows when the encoder takes the
 * tensors), else the mma one.  Host mirrors of cu_seqlens, when given, are
 * checked here; the device offsets are checked by the plan kernel (a bad one
 * is noted and fails the next call).  No sync, no allocation, no clock. */
#include <stdio.h>
#include <string.h>

#include "attn_tmap.h"
#include "cuda/sdk_cuda.h"
#include "cuda_attn.h"

static attn_index cu_index(const DLTensor *t) {
    attn_index ix;
    ix.p = (const int32_t *)sgl_sdk_data(t);
    ix.shift = t->dtype.bits == 64 ? 1 : 0;
    ix.n = (int32_t)t->shape[0];
    return ix;
}

/* max_seqlen (0 = not given) against the longest request a mirror shows. */
static int check_max(ca_backend *b, const char *call, const char *name, int32_t given, int64_t longest) {
    if (given == 0 || longest < 0 || (given > 0 && given >= longest)) return SGL_ATTN_OK;
    snprintf(b->err, sizeof b->err, "%s: %s = %d but a request has %lld tokens: expected 0 (unknown) or at least that",
             call, name, given, (long long)longest);
    return SGL_ATTN_E_INVALID;
}

int ca_forward_ragged(sgl_attn_backend *bb, const sgl_attn_ragged_args *a) {
    ca_backend *b = (ca_backend *)bb;
    const char *call = "forward_ragged";
    ca_msg m = {b->err, sizeof b->err, call};
    b->err[0] = 0;
    if (!a || a->struct_size < offsetof(sgl_attn_ragged_args, stream) + sizeof a->stream) {
        snprintf(b->err, sizeof b->err, "%s: args are NULL or older than ABI 1.2's sgl_attn_ragged_args (struct_size %u)",
                 call, a ? a->struct_size : 0u);
        return SGL_ATTN_E_INVALID;
    }
    if (!b->rg_ok) {
        snprintf(b->err, sizeof b->err, "%s: not available on this device: %s", call, b->rg_why);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = ca_check_ragged_shape(&m, a, b->sz.max_reqs);
    if (rc) return rc;
    /* an offset fault a ragged plan of an earlier call met */
    if (sgl_sdk_cuda_fault_take(&b->fault, a->stream, call, b->err, sizeof b->err)) return SGL_ATTN_E_INVALID;
    const int32_t bs = a->batch_size, hq = a->num_q_heads, hkv = a->num_kv_heads;
    const int32_t dqk = a->head_dim_qk, dv = a->head_dim_v;
    int64_t qs[3], ks[3], vs[3], os[3];
    rc = ca_check_float3(&m, a->q, "q", b->device, b->dt_bit, SGL_SDK_ANY, hq, dqk, 1, qs);
    if (rc) return rc;
    const int64_t tq = a->q->shape[0];
    rc = ca_check_float3(&m, a->k, "k", b->device, b->dt_bit, SGL_SDK_ANY, hkv, dqk, 1, ks);
    if (rc) return rc;
    const int64_t tk = a->k->shape[0];
    rc = ca_check_float3(&m, a->v, "v", b->device, b->dt_bit, tk, hkv, dv, 1, vs);
    if (!rc) rc = ca_check_float3(&m, a->out, "out", b->device, b->dt_bit, tq, hq, dv, 1, os);
    if (!rc && a->lse) rc = ca_check_lse(&m, a->lse, "lse", b->device, tq, hq);
    if (!rc) rc = ca_check_index1(&m, a->cu_seqlens_q, "cu_seqlens_q", b->device, (int64_t)bs + 1);
    if (!rc) rc = ca_check_index1(&m, a->cu_seqlens_k, "cu_seqlens_k", b->device, (int64_t)bs + 1);
    if (rc) return rc;
    if (tq > b->sz.max_tokens) {
        snprintf(b->err, sizeof b->err, "%s: q has %lld rows: expected at most %d (create's max_tokens)", call,
                 (long long)tq, b->sz.max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    int64_t long_q = -1, long_k = -1;
    rc = ca_check_cu_mirror(&m, a->cu_seqlens_q_cpu, "cu_seqlens_q_cpu", bs, tq, &long_q);
    if (!rc) rc = ca_check_cu_mirror(&m, a->cu_seqlens_k_cpu, "cu_seqlens_k_cpu", bs, tk, &long_k);
    if (!rc) rc = check_max(b, call, "max_seqlen_q", a->max_seqlen_q, long_q);
    if (!rc) rc = check_max(b, call, "max_seqlen_k", a->max_seqlen_k, long_k);
    if (rc) return rc;
    if (bs == 0 || tq == 0) return SGL_ATTN_OK;

    const int block_m = b->rg_wgmma ? 128 : 64, block_n = b->rg_wgmma ? 128 : 64;
    const int64_t items = (tq + block_m - 1) / block_m + bs; /* every request's last tile may be partial */
    if (items > b->rg_max_items) { /* never: max_tokens and max_reqs bound it */
        snprintf(b->err, sizeof b->err, "%s: %lld work items exceed the %d sized at create", call, (long long)items,
                 b->rg_max_items);
        return SGL_ATTN_E_INVALID;
    }
    attn_extend_item *it = (attn_extend_item *)b->rg_mem;
    int32_t *num = (int32_t *)(it + b->rg_max_items);
    attn_ragged_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.cu_q = cu_index(a->cu_seqlens_q);
    pl.cu_k = cu_index(a->cu_seqlens_k);
    pl.bs = bs;
    pl.tq = (int32_t)tq;
    pl.tk = (int32_t)tk;
    pl.causal = a->causal;
    pl.block_m = block_m;
    pl.block_n = block_n;
    pl.max_items = b->rg_max_items;
    pl.items = it;
    pl.num_items = num;
    pl.fault = b->fault.dev;
    int ce = attn_launch_ragged_plan(&pl, a->stream);
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_ragged: plan kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }

    attn_fwd p;
    memset(&p, 0, sizeof p);
    p.q = sgl_sdk_data(a->q);
    p.out = (void *)sgl_sdk_data(a->out);
    p.k_cache = sgl_sdk_data(a->k);
    p.v_cache = sgl_sdk_data(a->v);
    p.q_stride_t = qs[0];
    p.q_stride_h = qs[1];
    p.o_stride_t = os[0];
    p.o_stride_h = os[1];
    p.kc_stride_s = ks[0];
    p.kc_stride_h = ks[1];
    p.vc_stride_s = vs[0];
    p.vc_stride_h = vs[1];
    p.num_slots = tk > 0 ? tk : 1; /* no key (every request empty): nothing is read */
    p.hq = hq;
    p.hkv = hkv;
    p.group = hq / hkv;
    p.num_tokens = (int32_t)tq;
    p.scale = a->sm_scale;
    p.scale_log2 = a->sm_scale * 1.4426950408889634f;
    p.softcap = a->logit_softcap;
    p.window = -1;
    p.eitems = it;
    p.num_items = num;
    p.lse = a->lse ? (float *)sgl_sdk_data(a->lse) : NULL;
    if (b->rg_wgmma) {
        attn_kv_tmaps maps; /* the kernel takes them by value */
        const attn_kv_tmaps *tm = NULL;
        if (b->rg_tma && b->tmaps && tk > 0) {
            const int cu = attn_tmap_ragged(b->tmaps, &p, dqk, dv, &maps);
            if (!cu) tm = &maps; /* else a layout TMA cannot describe: cp.async */
        }
        ce = attn_launch_ragged_wgmma(b->kern.dtype, dqk, dv, &p, tm, b->kern.sm_count, (int)items, a->stream);
    } else {
        ce = attn_launch_ragged_mma(b->kern.dtype, dqk, dv, &p, (int)items, a->stream);
    }
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_ragged: kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}
