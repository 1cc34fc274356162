/* batch_plan.cu - the plan kernel (one block): per request its first token row,
 * token count, pool slot and whether it starts from its state; the token -> request
 * map and the chunk list of the chunked forms.  Every value read from the
 * batch is range-checked (an int64 whole); a bad one is recorded in err[]
 * and its request skipped (slot -1 or no tokens), so no later kernel goes out
 * of bounds or touches another request's slot.  A slot past the pool is
 * no error here (a layer whose state the caller owns bounds it by its
 * tensors): it is kept in over[], and the next plan kernel reports it when
 * a layer of this batch used the pool.  The first error is also
 * noted in the fault record, for the next metadata call (no sync). */
#include "kernel_common.cuh"

/* Inclusive sum over the block (blockDim.x a multiple of 32, <= 1024). */
LK_DEV int64_t lk_block_scan(int64_t v, int64_t *sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int64_t y = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += y;
    }
    if (lane == 31) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int64_t x = lane < nw ? sh[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            int64_t y = __shfl_up_sync(0xffffffffu, x, o);
            if (lane >= o) x += y;
        }
        sh[lane] = x;
    }
    __syncthreads();
    if (warp > 0) v += sh[warp - 1];
    __syncthreads(); /* sh is free again */
    return v;
}

/* Largest i in [0, n) with a[i] <= x (a non-decreasing, a[0] <= x). */
LK_DEV int lk_upper(const int32_t *a, int n, int64_t x) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (a[mid] <= x) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

__global__ __launch_bounds__(LIN_PLAN_THREADS) void lin_plan_kernel(lin_plan_args a) {
    __shared__ int64_t sh[32];
    __shared__ int64_t tot[2];
    const lin_plan_dev d = a.d;
    const int tid = threadIdx.x, nt = blockDim.x, C = a.chunk;
    const bool ext = a.mode == LIN_MODE_EXTEND;
    if (tid == 0) {
        d.err[0] = d.err[1] = d.err[2] = d.err[3] = 0;
        /* the previous batch's slot past the pool is an error once one of its layers used the pool */
        if (a.check_over && d.over[0]) {
            d.err[0] = LIN_ERR_POOL_SLOT;
            d.err[1] = d.over[1];
            d.err[2] = d.over[2];
            d.err[3] = d.over[3];
        }
        d.over[0] = d.over[1] = d.over[2] = d.over[3] = 0;
    }
    for (int i = tid; i < a.max_reqs; i += nt) d.slot_owner[i] = -1;
    __syncthreads();

    /* each thread owns a contiguous run of requests */
    const int per = (a.bs + nt - 1) / nt;
    const int lo = min(tid * per, a.bs), hi = min(lo + per, a.bs);
    int64_t sum = 0;
    for (int i = lo; i < hi; i++) {
        int64_t n = ext ? lk_idx(a.ext_lens, i) : a.tpr;
        int64_t pre = ext ? lk_idx(a.ext_prefix, i) : 1;
        int64_t s = lk_idx(a.state_indices, i);
        if (n < 0 || n > a.T) {
            lk_flag(d.err, LIN_ERR_LEN, i, n);
            n = 0;
        }
        if (pre < 0) {
            lk_flag(d.err, LIN_ERR_PREFIX, i, pre);
            pre = 0;
        }
        if (s < -1 || s > INT32_MAX) {
            lk_flag(d.err, LIN_ERR_SLOT, i, s);
            s = -1;
        } else if (s >= a.max_reqs) { /* a caller-owned state's slot, or an error on the pool (check_over) */
            lk_flag(d.over, LIN_ERR_POOL_SLOT, i, s);
            s = -1;
        } else if (s >= 0 && atomicCAS(&d.slot_owner[s], -1, i) != -1) {
            lk_flag(d.err, LIN_ERR_DUP_SLOT, i, s);
            s = -1;
        }
        d.req_n[i] = (int32_t)n;
        d.req_slot[i] = (int32_t)s;
        d.req_init[i] = ext ? pre > 0 : 1;
        sum += n;
    }
    const int64_t incl = lk_block_scan(sum, sh);
    int64_t base = incl - sum;
    if (tid == nt - 1) tot[0] = incl;
    int64_t csum = 0;
    for (int i = lo; i < hi; i++) {
        int64_t n = d.req_n[i];
        const int64_t t0 = base;
        base += n;
        if (t0 + n > a.T) { /* lengths past num_tokens: cut at the end */
            lk_flag(d.err, LIN_ERR_SUM, i, t0 + n);
            n = t0 >= a.T ? 0 : a.T - t0;
            d.req_n[i] = (int32_t)n;
        }
        d.req_tok0[i] = (int32_t)min(t0, (int64_t)a.T);
        const int64_t nc = (n + C - 1) / C;
        d.req_nchunk[i] = (int32_t)nc;
        csum += nc;
    }
    const int64_t cincl = lk_block_scan(csum, sh);
    int64_t cbase = cincl - csum;
    for (int i = lo; i < hi; i++) {
        d.req_chunk0[i] = (int32_t)cbase;
        cbase += d.req_nchunk[i];
        if (a.verify) d.verify_slot[i] = d.req_slot[i];
    }
    if (tid == nt - 1) {
        tot[1] = cincl;
        *d.num_chunks = (int32_t)cincl;
    }
    __syncthreads();
    /* a graph's grid may cover more requests than this batch: they are padding */
    for (int i = a.bs + tid; i < a.pad_bs; i += nt) {
        d.req_n[i] = 0;
        d.req_slot[i] = -1;
        d.req_init[i] = 0;
        d.req_tok0[i] = (int32_t)min(tot[0], (int64_t)a.T);
        d.req_nchunk[i] = 0;
        d.req_chunk0[i] = (int32_t)tot[1];
        if (a.verify) d.verify_slot[i] = -1;
    }
    for (int t = a.T + tid; t < a.pad_T; t += nt) d.tok_req[t] = -1;
    if (ext && tid == 0 && tot[0] < a.T) lk_flag(d.err, LIN_ERR_SUM, a.bs - 1, tot[0]);

    for (int t = tid; t < a.T; t += nt) {
        int r = -1;
        if (a.bs > 0 && d.req_tok0[0] <= t) {
            const int i = lk_upper(d.req_tok0, a.bs, t);
            if (t < d.req_tok0[i] + d.req_n[i]) r = i;
        }
        d.tok_req[t] = r;
    }
    for (int64_t j = tid; j < tot[1]; j += nt) {
        const int i = lk_upper(d.req_chunk0, a.bs, j);
        const int k = (int)(j - d.req_chunk0[i]);
        d.chunk_req[j] = i;
        d.chunk_tok0[j] = d.req_tok0[i] + k * C;
        d.chunk_len[j] = min(C, d.req_n[i] - k * C);
    }
    __syncthreads();
    if (tid == 0 && d.err[0]) {
        const int code = d.err[0];
        const int tensor = code == LIN_ERR_SLOT || code == LIN_ERR_DUP_SLOT || code == LIN_ERR_POOL_SLOT ? SGL_FAULT_STATE_INDICES
                           : code == LIN_ERR_PREFIX                         ? SGL_FAULT_PREFIX_LENS
                                                                            : SGL_FAULT_EXTEND_SEQ_LENS;
        lk_fault_note(a.fault, d.err, tensor, code == LIN_ERR_SLOT ? -1 : 0, a.max_reqs);
    }
}

extern "C" int lin_launch_plan(const lin_plan_args *a, void *stream) {
    LK_LAUNCH(lin_plan_kernel, 1, LIN_PLAN_THREADS, 0, (cudaStream_t)stream, *a);
    return (int)cudaGetLastError();
}
