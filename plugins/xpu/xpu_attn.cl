/*
 * xpu_attn.cl - paged attention kernels of the xpu_ocl plugin, OpenCL C 1.2.
 *
 * Compute is fp32.  Storage is f32, f16 or bf16 chosen per tensor at run
 * time: f16 through vload_half/vstore_half_rte (core OpenCL, so no
 * cl_khr_fp16 is needed), bf16 as ushort bit patterns.  Buffers arrive as
 * uchar pointers plus a byte offset (DLTensor.byte_offset).
 *
 * Every index read from memory is range-checked; a bad one sets a bit in
 * `err` and the affected output rows are written as zeros, so a bad batch
 * never reads or writes outside its buffers.
 *
 * Build options set WG (work-group size), QMAX (largest qk head dim, held in
 * local memory) and VMAX (largest v head dim, VMAX / WG accumulators per
 * work-item).
 */

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2

#define MODE_EXTEND 1
#define MODE_DECODE 2
#define MODE_VERIFY 3

#define E_ROW 1
#define E_SEQ 2
#define E_TOKENS 4
#define E_SLOT 8

#define VPER (VMAX / WG)

float ld(const global uchar *b, ulong i, int dt) {
    if (dt == DT_F32) return ((const global float *)b)[i];
    if (dt == DT_F16) return vload_half(i, (const global half *)b);
    return as_float(((uint)((const global ushort *)b)[i]) << 16);
}

void st(global uchar *b, ulong i, int dt, float v) {
    if (dt == DT_F32) {
        ((global float *)b)[i] = v;
    } else if (dt == DT_F16) {
        vstore_half_rte(v, i, (global half *)b);
    } else {
        uint u = as_uint(v);
        if ((u & 0x7fffffffu) > 0x7f800000u) u = (u | 0x00400000u); /* NaN stays NaN */
        else u += 0x7fffu + ((u >> 16) & 1u);                        /* round to nearest even */
        ((global ushort *)b)[i] = (ushort)(u >> 16);
    }
}

long ldi(const global uchar *b, ulong i, int is64) {
    return is64 ? ((const global long *)b)[i] : (long)((const global int *)b)[i];
}

/* One work-item per request: map each new token to (req_to_token row, position,
 * encoder length).  In an encoder-decoder batch the decoder's tokens start at
 * column enc of the row and cross attention reads columns [0, enc).  plan[]
 * was filled with -1 beforehand, so tokens no request claims stay invalid. */
kernel void sgl_plan(int mode, int bs, int T, int tpr,
                     const global uchar *rpi, ulong rpi_off, int rpi64,
                     const global uchar *sl, ulong sl_off, int sl64,
                     const global uchar *pre, ulong pre_off, int pre64, int has_pre,
                     const global uchar *ext, ulong ext_off, int ext64,
                     const global uchar *en, ulong en_off, int en64, int has_enc,
                     int rows, int cols, global int *plan, volatile global int *err) {
    int b = get_global_id(0);
    if (b >= bs) return;
    long row = ldi(rpi + rpi_off, b, rpi64);
    long seq = ldi(sl + sl_off, b, sl64);
    long enc = has_enc ? ldi(en + en_off, b, en64) : 0;
    int bad = 0;
    if (row < 0 || row >= rows) bad |= E_ROW;
    if (seq < 1 || enc < 0 || enc + seq > cols) bad |= E_SEQ;
    long start, n, first;
    if (mode == MODE_EXTEND) {
        start = 0;
        for (int i = 0; i < b; i++) start += ldi(ext + ext_off, i, ext64);
        n = ldi(ext + ext_off, b, ext64);
        first = has_pre ? ldi(pre + pre_off, b, pre64) : seq - n;
        if (n < 0 || first < 0 || first + n != seq) bad |= E_TOKENS;
        if (start < 0 || start + n > T || (b == bs - 1 && start + n != T)) bad |= E_TOKENS;
    } else {
        start = (long)b * tpr;
        n = tpr;
        first = seq - tpr;
        if (first < 0) bad |= E_SEQ;
        if (start + n > T) bad |= E_TOKENS;
    }
    if (bad) {
        atomic_or(err, bad);
        return;
    }
    for (long j = 0; j < n; j++) {
        plan[3 * (start + j)] = (int)row;
        plan[3 * (start + j) + 1] = (int)(first + j);
        plan[3 * (start + j) + 2] = (int)enc;
    }
}

/* Write n_per_tok values of each new token into its pool slot, converting dtype. */
kernel void sgl_save(const global uchar *src, ulong src_off, int src_dt, ulong n_per_tok,
                     global uchar *dst, ulong dst_off, int dst_dt, ulong dst_slot_stride,
                     const global uchar *loc, ulong loc_off, int loc64, int T, ulong slots,
                     volatile global int *err) {
    ulong gid = get_global_id(0);
    if (gid >= (ulong)T * n_per_tok) return;
    ulong t = gid / n_per_tok, i = gid - t * n_per_tok;
    long slot = ldi(loc + loc_off, t, loc64);
    if (slot < 0 || (ulong)slot >= slots) {
        if (i == 0) atomic_or(err, E_SLOT);
        return;
    }
    st(dst + dst_off, (ulong)slot * dst_slot_stride + i, dst_dt, ld(src + src_off, gid, src_dt));
}

/*
 * One work-group per (q head, token).  Keys are visited in chunks of WG: each
 * work-item scores one key of the chunk (full dot product against q held in
 * local memory), the group reduces max and sum, and each work-item keeps the
 * output dims d = lid + i*WG with the usual online-softmax rescaling.
 * A sink logit starts the running max and denominator (m = sink, l = 1) and
 * contributes no value.  MLA passes the latent pool as both k and v with
 * v_slot_stride = rank + rope and Dv = rank.  Self-attention reads columns
 * enc + [lo, pos] of the row (causal, windowed); cross attention reads
 * columns [0, enc), non-causal.
 */
kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sgl_attn(const global int *plan,
              const global uchar *r2t, ulong r2t_off, int r2t64, int cols,
              const global uchar *q, ulong q_off, int q_dt,
              const global uchar *kc, ulong kc_off, const global uchar *vc, ulong vc_off, int kv_dt,
              ulong k_slot_stride, ulong v_slot_stride, ulong slots,
              global uchar *o, ulong o_off, int o_dt,
              int Hq, int Hkv, int Dqk, int Dv, float scale, float softcap, int window, int is_cross,
              const global uchar *sinks, ulong sinks_off, int has_sinks,
              volatile global int *err) {
    local float qs[QMAX];
    local float red[WG];
    local float ps[WG];
    local long slot_s[WG];
    const int lid = get_local_id(0);
    const int h = get_group_id(0);
    const int t = get_group_id(1);
    const ulong obase = ((ulong)t * Hq + h) * Dv;
    const int row = plan[3 * t];
    const int qpos = plan[3 * t + 1];
    const int enc = plan[3 * t + 2];
    if (row < 0) { /* uniform for the whole group */
        for (int d = lid; d < Dv; d += WG) st(o + o_off, obase + d, o_dt, 0.0f);
        return;
    }
    const int kvh = h / (Hq / Hkv);
    const ulong qbase = ((ulong)t * Hq + h) * Dqk;
    for (int d = lid; d < Dqk; d += WG) qs[d] = ld(q + q_off, qbase + d, q_dt);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int lo = is_cross ? 0 : window >= 0 ? max(0, qpos - window) : 0;
    const int hi = is_cross ? enc : qpos + 1;
    const ulong rbase = (ulong)row * (ulong)cols + (ulong)(is_cross ? 0 : enc);
    const ulong kh = (ulong)kvh * (ulong)Dqk;
    const ulong vh = (ulong)kvh * (ulong)Dv;
    float m = -INFINITY, l = 0.0f;
    if (has_sinks) {
        m = ((const global float *)(sinks + sinks_off))[h];
        l = 1.0f;
    }
    float acc[VPER];
    for (int i = 0; i < VPER; i++) acc[i] = 0.0f;

    for (int base = lo; base < hi; base += WG) {
        const int j = base + lid;
        float s = -INFINITY;
        long slot = -1;
        if (j < hi) {
            slot = ldi(r2t + r2t_off, rbase + (ulong)j, r2t64);
            if (slot < 0 || (ulong)slot >= slots) {
                atomic_or(err, E_SLOT);
                slot = -1;
            } else {
                const ulong kb = (ulong)slot * k_slot_stride + kh;
                float dot = 0.0f;
                for (int d = 0; d < Dqk; d++) dot = fma(qs[d], ld(kc + kc_off, kb + d, kv_dt), dot);
                s = dot * scale;
                if (softcap > 0.0f) s = softcap * tanh(s / softcap);
            }
        }
        red[lid] = s;
        slot_s[lid] = slot;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = WG / 2; off > 0; off >>= 1) {
            if (lid < off) red[lid] = fmax(red[lid], red[lid + off]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const float m_new = fmax(m, red[0]);
        barrier(CLK_LOCAL_MEM_FENCE);
        const float p = (slot >= 0 && m_new > -INFINITY) ? exp(s - m_new) : 0.0f;
        ps[lid] = p;
        red[lid] = p;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = WG / 2; off > 0; off >>= 1) {
            if (lid < off) red[lid] += red[lid + off];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const float alpha = (m > -INFINITY) ? exp(m - m_new) : 0.0f;
        l = l * alpha + red[0];
        const int cnt = min(WG, hi - base);
        for (int i = 0; i < VPER; i++) {
            const int d = lid + i * WG;
            if (d < Dv) {
                float a = acc[i] * alpha;
                for (int c = 0; c < cnt; c++) {
                    const long sl = slot_s[c];
                    if (sl >= 0) a = fma(ps[c], ld(vc + vc_off, (ulong)sl * v_slot_stride + vh + d, kv_dt), a);
                }
                acc[i] = a;
            }
        }
        m = m_new;
        barrier(CLK_LOCAL_MEM_FENCE); /* ps/slot_s/red are rewritten by the next chunk */
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int i = 0; i < VPER; i++) {
        const int d = lid + i * WG;
        if (d < Dv) st(o + o_off, obase + d, o_dt, acc[i] * inv);
    }
}
