/* state_commit.cu - the state operations on the device:
 *   state_commit      for each request of the last verify batch, the conv and
 *                     ssm state after its accepted draft step become its main
 *                     state, in every layer.  All or nothing: every block
 *                     checks every accepted step first, and if one is out of
 *                     range nothing is copied.
 *   ops->state_batch  clear / copy / commit / track on index tensors: one
 *                     block checks every entry (ranges, then repeats), then
 *                     the apply kernel runs only if they passed (ABI 1.2).
 *   caller slots      a caller-owned layer's slots for one forward, bounded
 *                     by its tensors' S (the plan bounds the pool's).
 * A bad value is noted in the fault record (the next metadata call reports
 * it) and nothing is written through it. */
#include "kernel_common.cuh"

LK_DEV void lk_copy_bytes(unsigned char *dst, const unsigned char *src, size_t bytes) {
    const bool v16 = bytes % 16 == 0 && (uintptr_t)dst % 16 == 0 && (uintptr_t)src % 16 == 0;
    if (v16) {
        for (size_t k = threadIdx.x; k < bytes / 16; k += blockDim.x) ((uint4 *)dst)[k] = ((const uint4 *)src)[k];
    } else {
        for (size_t k = threadIdx.x; k < bytes; k += blockDim.x) dst[k] = src[k];
    }
}

LK_DEV void lk_zero_bytes(unsigned char *dst, size_t bytes) {
    if (bytes % 16 == 0 && (uintptr_t)dst % 16 == 0) {
        for (size_t k = threadIdx.x; k < bytes / 16; k += blockDim.x) ((uint4 *)dst)[k] = make_uint4(0, 0, 0, 0);
    } else {
        for (size_t k = threadIdx.x; k < bytes; k += blockDim.x) dst[k] = 0;
    }
}

/* err[] as lk_flag writes it, into the fault record (tensor: the state indices) */
LK_DEV void lk_note(const sgl_gpu_fault_ref &f, int code, int64_t pos, int64_t v, int64_t lo, int64_t hi) {
    const int32_t e[4] = {code, (int32_t)pos, (int32_t)(uint32_t)(uint64_t)v, (int32_t)(uint32_t)((uint64_t)v >> 32)};
    lk_fault_note(f, e, SGL_FAULT_STATE_INDICES, lo, hi);
}

/* Grid: (request, layer). */
__global__ __launch_bounds__(256) void lin_commit_kernel(lin_commit_args c) {
    const int i = blockIdx.x, l = blockIdx.y;
    int bad = 0;
    for (int k = threadIdx.x; k < c.n; k += blockDim.x) {
        const int64_t s = lk_idx(c.accepted, k);
        if (s < -1 || s >= c.steps) {
            bad = 1;
            if (i == 0 && l == 0) lk_flag(c.err, LIN_ERR_ACCEPT, k, s);
        }
    }
    if (__syncthreads_or(bad)) return;
    const int64_t s = lk_idx(c.accepted, i);
    const int slot = c.verify_slot[i];
    if (s < 0 || slot < 0) return;
    const size_t ls = (size_t)l * c.slots + (size_t)slot;
    const size_t cb = (size_t)c.conv_elems * c.esz, sb = (size_t)c.ssm_elems * c.esz;
    if (cb)
        lk_copy_bytes((unsigned char *)c.conv + ls * cb, (const unsigned char *)c.iconv + (ls * c.steps + s) * cb, cb);
    if (sb) lk_copy_bytes((unsigned char *)c.ssm + ls * sb, (const unsigned char *)c.issm + (ls * c.steps + s) * sb, sb);
}

extern "C" int lin_launch_commit(const lin_commit_args *c, void *stream) {
    if (c->n <= 0 || c->layers <= 0 || c->steps <= 0) return 0;
    LK_LAUNCH(lin_commit_kernel, dim3((unsigned)c->n, (unsigned)c->layers), 256, 0, (cudaStream_t)stream, *c);
    return (int)cudaGetLastError();
}

/* One block: request i's slot, or -1 (padding, out of range, or a slot an
 * earlier request names: the first keeps it).  The pairwise check reads
 * only the caller's tensor, so the threads never race. */
__global__ __launch_bounds__(256) void lin_cslot_kernel(lin_cslot_args c) {
    for (int i = threadIdx.x; i < c.bs; i += blockDim.x) {
        int64_t s = lk_idx(c.src, i);
        if (s < -1 || s >= c.slots) {
            lk_note(c.fault, LIN_ERR_CSLOT, i, s, -1, c.slots);
            s = -1;
        }
        for (int j = 0; s >= 0 && j < i; j++)
            if (lk_idx(c.src, j) == s) {
                lk_note(c.fault, LIN_ERR_CDUP, i, s, -1, c.slots);
                s = -1;
            }
        c.out[i] = (int32_t)s;
    }
}

extern "C" int lin_launch_cslots(const lin_cslot_args *cp, void *stream) {
    if (cp->bs <= 0) return 0;
    const lin_cslot_args c = *cp; /* by value: the emulator's graph capture keeps the launch's arguments */
    LK_LAUNCH(lin_cslot_kernel, 1, 256, 0, (cudaStream_t)stream, c);
    return (int)cudaGetLastError();
}

/* state_batch: the entries' indices (-1 for an index the op does not read) */
struct lk_sb_entry {
    int64_t d, s, t;
    bool live; /* writes: dst set, and (commit, track) a step */
};
LK_DEV lk_sb_entry lk_sb_at(const lin_sb_args &a, int i) {
    const bool has_src = a.op == 2 || a.op == 4, has_steps = a.op == 3 || a.op == 4;
    lk_sb_entry e;
    e.d = lk_idx(a.dst, i);
    e.s = has_src ? lk_idx(a.src, i) : -1;
    e.t = has_steps ? lk_idx(a.steps, i) : -1;
    e.live = e.d >= 0 && (!has_steps || e.t >= 0);
    return e;
}

/* One block: ranges of every entry, then a dst written twice, then (copy) a
 * dst another entry reads; *ok = 1 when all pass. */
__global__ __launch_bounds__(1024) void lin_sb_check_kernel(lin_sb_args a) {
    const bool has_src = a.op == 2 || a.op == 4, has_steps = a.op == 3 || a.op == 4;
    if (threadIdx.x == 0) a.err[0] = a.err[1] = a.err[2] = a.err[3] = 0;
    __syncthreads();
    int bad = 0;
    for (int i = threadIdx.x; i < a.count; i += blockDim.x) {
        const lk_sb_entry e = lk_sb_at(a, i);
        if (e.d < -1 || e.d >= a.slots) lk_flag(a.err, LIN_ERR_SB_DST, i, e.d), bad = 1;
        else if (has_src && (e.s < (e.d < 0 ? -1 : 0) || e.s >= a.slots)) lk_flag(a.err, LIN_ERR_SB_SRC, i, e.s), bad = 1;
        else if (has_steps && (e.t < -1 || e.t >= a.nsteps)) lk_flag(a.err, LIN_ERR_SB_STEP, i, e.t), bad = 1;
    }
    if (!__syncthreads_or(bad))
        for (int i = threadIdx.x; i < a.count; i += blockDim.x) {
            const lk_sb_entry e = lk_sb_at(a, i);
            if (!e.live) continue;
            for (int j = 0; j < a.count; j++) {
                if (j == i) continue;
                const lk_sb_entry f = lk_sb_at(a, j);
                if (!f.live) continue;
                if (j < i && f.d == e.d) { /* value: the slot, and the first entry that writes it */
                    lk_flag(a.err, LIN_ERR_SB_REPEAT, i, (int64_t)((uint64_t)(uint32_t)j << 32 | (uint32_t)e.d));
                    bad = 1;
                } else if (a.op == 2 && e.s != e.d && f.d == e.s) { /* j writes what i reads */
                    lk_flag(a.err, LIN_ERR_SB_CONFLICT, j, (int64_t)((uint64_t)(uint32_t)i << 32 | (uint32_t)e.s));
                    bad = 1;
                }
            }
        }
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0) {
        *a.ok = !bad;
        if (bad)
            lk_fault_note(a.fault, a.err, SGL_FAULT_STATE_INDICES, -1, a.err[0] == LIN_ERR_SB_STEP ? a.nsteps : a.slots);
    }
}

/* Grid: (entry, layer); nothing unless the checks passed. */
__global__ __launch_bounds__(256) void lin_sb_apply_kernel(lin_sb_args a) {
    if (!a.checked && !*a.ok) return;
    const lk_sb_entry e = lk_sb_at(a, (int)blockIdx.x);
    if (!e.live) return;
    const size_t l = blockIdx.y;
    for (int k = 0; k < 2; k++) {
        const lin_sb_part &p = a.part[k];
        if (!p.bytes || !p.main) continue;
        unsigned char *m = (unsigned char *)p.main + l * p.main_pitch;
        const unsigned char *in = (const unsigned char *)p.inter + l * p.inter_pitch;
        unsigned char *d = m + (size_t)e.d * p.bytes;
        switch (a.op) {
        case 1: lk_zero_bytes(d, p.bytes); break;
        case 2:
            if (e.s != e.d) lk_copy_bytes(d, m + (size_t)e.s * p.bytes, p.bytes);
            break;
        case 3: lk_copy_bytes(d, in + ((size_t)e.d * a.nsteps + e.t) * p.bytes, p.bytes); break;
        case 4: lk_copy_bytes(d, in + ((size_t)e.s * a.nsteps + e.t) * p.bytes, p.bytes); break;
        default: break;
        }
    }
}

extern "C" int lin_launch_state_batch(const lin_sb_args *ap, void *stream) {
    if (ap->count <= 0 || ap->layers <= 0) return 0;
    const lin_sb_args a = *ap; /* by value: the emulator's graph capture keeps the launch's arguments */
    if (!a.checked) {
        LK_LAUNCH(lin_sb_check_kernel, 1, 1024, 0, (cudaStream_t)stream, a);
        const int e = (int)cudaGetLastError();
        if (e) return e;
    }
    LK_LAUNCH(lin_sb_apply_kernel, dim3((unsigned)a.count, (unsigned)a.layers), 256, 0, (cudaStream_t)stream, a);
    return (int)cudaGetLastError();
}
