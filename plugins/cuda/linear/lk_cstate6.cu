/* lk_cstate6.cu - SGL_ATTN_LIN_CSTATE=v6: v5's state pass (P = -W^T KD made
 * first, S' = S diag(eG) + U^T KD + S P) on Hopper's warpgroup MMA (sm_90a).
 *
 * Why: v2-v5 run the chunk step as mma.sync from 4 compute warps; the step
 * issues ~0.9 instructions per cycle per SM at ~5.4 cycles between a warp's
 * issues (ncu, run 5) and its time grows with the mma.sync + ldmatrix count
 * per warp (v5: 1.5x the mma per warp, 1.21x the step, run 16), i.e. it is
 * bound by the compute warps' instruction stream.  Here one warpgroup holds
 * 64 state rows x 128 columns in wgmma accumulators (64 floats a thread) and
 * a chunk is 12 wgmma instructions: 8 x (S16 P), the A operand the
 * accumulators themselves converted to 16 bits (no shared-memory round trip
 * of S), and 4 x (U^T KD) from shared memory; no ldmatrix.
 *
 * Block: (request, value head, 64 state rows); warps 0-3 the warpgroup, 4-7
 * producers (a 3-stage cp.async ring of P, KD, the U tile and eG, written in
 * the 128-byte swizzled layout wgmma reads, then a proxy fence); one block
 * barrier per chunk.  Hs (the chunk's start state, 16-bit) leaves from the
 * A-operand registers.  Outputs: v5's (lin_cout_kernel<., 1, 1> makes Unew).
 * V % 64 == 0 and an SM 9.0 device; else v5 (lin_create.c decides).  The
 * emulator of the tests has no wgmma: there v6 runs v5 (tests: LT_QUICK=20 /
 * 21 on the GPU only).
 * Measured (H200, runs 17-18 of 2026-12-03): correct, sanitizer-clean, lost
 * (0.584x): ~6,300 warp instructions per SM per chunk against ~770 cycles of
 * wgmma work -- the producers' cp.async with swizzle arithmetic and the
 * scattered Hs stores.  Next: bulk copies (TMA) of pre-swizzled images from
 * one thread with an mbarrier per stage, Hs by stmatrix + one bulk store. */
#include "lk_cstate.cuh"

#define LK_S6_THREADS 256
/* per stage: P [128 k][128 n] as two 64-column sub-tiles (16 KiB each), KD [64 t][128] as two (8 KiB
 * each), U [64 t][64 v] (8 KiB), eG (512 B); 1024-byte aligned pieces (the swizzle's atom) */
#define LK_S6_P 0
#define LK_S6_KD 32768
#define LK_S6_U 49152
#define LK_S6_EG 57344
#define LK_S6_STAGE 58368
#define LK_S6_NS 3
#define LK_S6_SMEM (LK_S6_NS * LK_S6_STAGE + 1024) /* + alignment slack */
static_assert(LK_S6_SMEM == (int)LIN_C6_SMEM, "lin_params.h's LIN_C6_SMEM");

#if !defined(LK_EMU)
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LK_S6_BODY 1
#endif
#endif

#ifdef LK_S6_BODY
LK_DEV uint32_t lk_s6_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* shared-memory matrix descriptor, MN-major operand in 128-byte swizzle: LBO = bytes to the next 64-wide
 * sub-tile, SBO = 1024 (the next 8 rows of the 8-row atom) */
LK_DEV uint64_t lk_desc_mn(uint32_t saddr, uint32_t lbo) {
    return (uint64_t)((saddr & 0x3ffffu) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32) |
           (1ull << 62);
}
LK_DEV void lk_wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
LK_DEV void lk_wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
LK_DEV void lk_wg_wait0(void) { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
LK_DEV void lk_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
template <int N> LK_DEV void lk_pin(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}

/* D[64x128] += A (registers: the 16-bit S, one k16 slice) x B (smem, MN-major: rows k, 128 columns in two
 * 64-column sub-tiles LBO apart) */
LK_DEV void lk_wgmma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)
                 : "memory");
}

/* D[64x128] += A (smem, transposed: rows k, 64 m) x B (smem, MN-major) */
LK_DEV void lk_wgmma_ss_n128_ta(float (&d)[64], uint64_t da, uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p, 1, 1, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(1)
                 : "memory");
}

#endif

template <int OT> __global__ __launch_bounds__(LK_S6_THREADS, 1) void lin_cstate6_kernel(lin_fwd p) {
#ifdef LK_S6_BODY
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, NS = LK_S6_NS;
    static_assert(K == 128 && C == 64, "the tile shapes below");
    LK_DYN_SMEM(unsigned char, smraw0);
    unsigned char *smraw = (unsigned char *)(((uintptr_t)smraw0 + 1023) & ~(uintptr_t)1023);
    const int nvt = p.V / 64, h = blockIdx.y / nvt, vt = blockIdx.y % nvt, i = blockIdx.x;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    if (slot < 0) return; /* padding: the output pass zeroes its rows */
    const int V = p.V, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const bool producer = warp >= 4, GCH = p.kind == LIN_KDA;
    const int pl = tid - 128;
    const int64_t ocol = (int64_t)h * V + vt * 64;
    const int c0 = p.pl.req_chunk0[i], nch = p.pl.req_nchunk[i];

    /* chunk jc into stage s; 16-byte piece c of row r of a 128-byte-row tile goes to piece c ^ (r & 7) */
    auto issue = [&](int s, int jc) {
        unsigned char *base = smraw + s * LK_S6_STAGE;
        const int64_t ct0 = p.pl.chunk_tok0[jc];
        const int len = p.pl.chunk_len[jc];
        const uint16_t *Pg = (const uint16_t *)p.Pq + ((int64_t)jc * HV + h) * K * K;
        const uint16_t *Kg = (const uint16_t *)p.KDt + (ct0 * HV + h) * K;
        const uint16_t *Ugs = (const uint16_t *)p.Ut + ct0 * HV * V + ocol;
#pragma unroll 4
        for (int idx = pl; idx < K * 16; idx += 128) { /* P: row k, piece c of 16 */
            const int r = idx >> 4, c = idx & 15;
            lk_cp_async16(base + LK_S6_P + (c >> 3) * 16384 + r * 128 + (((c & 7) ^ (r & 7)) << 4), Pg + r * K + c * 8,
                          true);
        }
#pragma unroll 4
        for (int idx = pl; idx < C * 16; idx += 128) { /* KD: row t */
            const int t = idx >> 4, c = idx & 15;
            const bool ok = t < len;
            lk_cp_async16(base + LK_S6_KD + (c >> 3) * 8192 + t * 128 + (((c & 7) ^ (t & 7)) << 4),
                          Kg + (int64_t)(ok ? t : 0) * HV * K + c * 8, ok);
        }
#pragma unroll
        for (int idx = pl; idx < C * 8; idx += 128) { /* U: row t, 64 values */
            const int t = idx >> 3, c = idx & 7;
            const bool ok = t < len;
            lk_cp_async16(base + LK_S6_U + t * 128 + ((c ^ (t & 7)) << 4), Ugs + (int64_t)(ok ? t : 0) * HV * V + c * 8, ok);
        }
        if (pl < 32) lk_cp_async16(base + LK_S6_EG + pl * 16, p.eG + ((int64_t)jc * HV + h) * K + pl * 4, true);
    };

    /* the state tile in wgmma accumulator order: d[4j + e] is row 16 warp + g + 8 (e >> 1), column
     * 8j + 2 t4 + (e & 1) */
    float d[64];
    const int64_t sb = (int64_t)slot * p.ssm_elems + ocol * K;
    const int r0 = 16 * warp + g;
    if (!producer) {
#pragma unroll
        for (int j = 0; j < 16; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int64_t at = sb + (int64_t)(r0 + 8 * hf) * K + 8 * j + 2 * t4;
                if (!init) d[4 * j + 2 * hf] = d[4 * j + 2 * hf + 1] = 0.f;
                else lk_srow_ld<2>(p, p.ssm_state, at, &d[4 * j + 2 * hf]);
            }
    } else {
#pragma unroll
        for (int s = 0; s < NS - 1; s++) {
            if (s < nch) issue(s, c0 + s);
            lk_cp_async_commit();
        }
    }
    for (int q = 0; q < nch; q++) {
        if (producer) {
            lk_cp_async_wait<NS - 2>(); /* chunk q landed (this thread's pieces) */
            lk_fence_proxy_async();     /* ... and visible to wgmma */
        }
        __syncthreads(); /* chunk q visible; every warp done with chunk q - 1's stage */
        const int jc = c0 + q;
        if (producer) {
            if (q + NS - 1 < nch) issue((q + NS - 1) % NS, c0 + q + NS - 1);
            lk_cp_async_commit();
            continue;
        }
        const unsigned char *base = smraw + (q % NS) * LK_S6_STAGE;
        const float *eGs = (const float *)(base + LK_S6_EG);
        /* S16: the A operand, k16 slice kk = columns 16kk .. (accumulator tiles 2kk, 2kk + 1); also Hs */
        uint32_t a[8][4];
        uint16_t *hs = (uint16_t *)p.Hs + ((int64_t)jc * HV + h) * V * K + (int64_t)(vt * 64 + r0) * K;
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            a[kk][0] = lk_pack2<OT>(d[8 * kk + 0], d[8 * kk + 1]);
            a[kk][1] = lk_pack2<OT>(d[8 * kk + 2], d[8 * kk + 3]);
            a[kk][2] = lk_pack2<OT>(d[8 * kk + 4], d[8 * kk + 5]);
            a[kk][3] = lk_pack2<OT>(d[8 * kk + 6], d[8 * kk + 7]);
            const int c = 16 * kk + 2 * t4;
            *(uint32_t *)(hs + c) = a[kk][0];
            *(uint32_t *)(hs + 8 * K + c) = a[kk][1];
            *(uint32_t *)(hs + c + 8) = a[kk][2];
            *(uint32_t *)(hs + 8 * K + c + 8) = a[kk][3];
        }
#pragma unroll
        for (int j = 0; j < 16; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) d[4 * j + e] *= eGs[GCH ? 8 * j + 2 * t4 + (e & 1) : 0];
        const uint32_t sP = lk_s6_smem(base + LK_S6_P), sK = lk_s6_smem(base + LK_S6_KD), sU = lk_s6_smem(base + LK_S6_U);
        lk_pin(d);
        lk_wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++) /* U^T KD: 16 tokens a step = 16 rows of U and KD */
            lk_wgmma_ss_n128_ta(d, lk_desc_mn(sU + 2048 * kk, 8192), lk_desc_mn(sK + 2048 * kk, 8192));
#pragma unroll
        for (int kk = 0; kk < 8; kk++) /* S16 P: 16 state columns a step = 16 rows of P */
            lk_wgmma_rs_n128(d, a[kk], lk_desc_mn(sP + 2048 * kk, 16384));
        lk_wg_commit();
        lk_wg_wait0();
        lk_pin(d);
    }
    if (producer) {
        lk_cp_async_wait_all();
        return;
    }
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int64_t at = sb + (int64_t)(r0 + 8 * hf) * K + 8 * j + 2 * t4;
            lk_srow_st<2>(p, p.ssm_state, at, &d[4 * j + 2 * hf]);
        }
#else
    (void)p;
#endif
}

/* 1 where the wgmma kernel is in this build (not the tests' emulator) */
extern "C" int lin_cstate6_built(void) {
#ifdef LK_EMU
    return 0;
#else
    return 1;
#endif
}

extern "C" int lin_cstate6_setup(void) {
#ifdef LK_EMU
    return (int)cudaErrorNotSupported;
#else
    return (int)cudaFuncSetAttribute((const void *)lin_cstate6_kernel<LIN_DT_BF16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     LK_S6_SMEM);
#endif
}

/* the serial pass of v6 (P already made by lin_launch_cstate5's first kernel: see lk_cstate5.cu) */
extern "C" int lin_launch_cstate6(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (!p.Pq || p.V % 64) return (int)cudaErrorInvalidValue;
#ifdef LK_EMU
    (void)stream;
    return (int)cudaErrorNotSupported;
#else
    dim3 g2((unsigned)p.bs, (unsigned)(p.hv * (p.V / 64)));
    lin_cstate6_kernel<LIN_DT_BF16><<<g2, LK_S6_THREADS, LK_S6_SMEM, (cudaStream_t)stream>>>(p);
    return (int)cudaGetLastError();
#endif
}
