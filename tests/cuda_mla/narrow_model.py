#!/usr/bin/env python3
"""narrow_model.py - a host model of mla_narrow.cu's data layout and math (no GPU).

It replays one item of the narrow kernel with the kernel's own index formulas:
Q and P^T written into a byte-addressed shared memory with the kernel's
swizzle expressions, K / V sub-tiles as TMA writes them (128-byte swizzle),
wgmma operands read back through a model of the matrix descriptors (K-major:
row i of the 8-row core group at SBO = 1024, k at +2 bytes, start +32 bytes a
k16 step; MN-major: k row at +128 bytes, 8-row groups at SBO, m at +2 bytes),
the m64nN accumulator fragment of every consumer thread, the column softmax
(per-thread max, lane and warp reductions, running max / alpha / sums), the
masking (per-row limits, the zeroed tail rows), the producer's ring positions
and the epilogue's stores, and compares the output with a direct softmax.

What it cannot check: that the hardware reads descriptors as modelled (the
wgmma kernel's validated K-major / MN-major B operands use the same model), and
the mbarrier protocol.  Run:  python3 tests/cuda_mla/narrow_model.py
"""
import sys

import numpy as np

NS = {16: 25, 32: 23}


def swz(addr):
    """128-byte swizzle on a byte address (1024-aligned tiles): chunk ^= row % 8."""
    return addr ^ (((addr >> 7) & 7) << 4)


class Smem:
    def __init__(self, size):
        self.b = np.zeros(size // 2, dtype=np.float32)  # one bf16 as a float, by 2-byte index

    def st(self, byte_addr, v):  # generic store at a physical address
        self.b[byte_addr // 2] = v

    def ld(self, byte_addr):
        return self.b[byte_addr // 2]


def desc_kmajor(sm, start, rows, k16):
    """rows x 16 (K) operand at a K-major descriptor start address."""
    out = np.zeros((rows, 16), dtype=np.float64)
    for i in range(rows):
        for k in range(16):
            logical = start + (i // 8) * 1024 + (i % 8) * 128 + 2 * k
            out[i, k] = sm.ld(swz(logical))
    return out


def desc_mnmajor(sm, start, m_ext):
    """m_ext (M or N) x 16 (K) operand at an MN-major descriptor start address."""
    out = np.zeros((m_ext, 16), dtype=np.float64)
    for m in range(m_ext):
        for k in range(16):
            logical = start + (k // 8) * 1024 + (k % 8) * 128 + 2 * m
            out[m, k] = sm.ld(swz(logical))
    return out


def frag(t, i):
    """(row, col) of element i of thread t's m64nN accumulator fragment."""
    w, lane = t >> 5, t & 31
    g, q4 = lane >> 2, lane & 3
    return 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * q4 + (i & 1)


def run(N, nrows, hq, key_base, row0, kv_begin, kv_end, pool, slots, q, scale_log2, rng):
    NV, NC = N // 2, N // 4
    QSUB = N * 128
    OFF_Q, OFF_P = 0, 9 * QSUB
    OFF_RING = ((OFF_P + QSUB + 1023) // 1024) * 1024
    ns = NS[N]
    sm = Smem(OFF_RING + ns * 8192)
    nblk = (kv_end - kv_begin + 63) // 64
    tail = kv_end - (kv_begin + 64 * (nblk - 1))
    # stale garbage in the ring (a slot may hold anything, NaN included)
    sm.b[OFF_RING // 2:] = rng.standard_normal(sm.b.size - OFF_RING // 2)
    sm.b[OFF_RING // 2 + 7] = np.nan
    # Q: N rows x 576, 9 slices (kernel: *(uint4*)(smem + OFF_Q + sl*QSUB + r*128 + ((c8 ^ (r&7)) << 4)))
    for r in range(N):
        for ch in range(72):
            sl, c8 = ch >> 3, ch & 7
            for e in range(8):
                v = q[r, ch * 8 + e] if r < nrows else 0.0
                sm.st(OFF_Q + sl * QSUB + r * 128 + ((c8 ^ (r & 7)) << 4) + 2 * e, v)
    # per-thread state
    lim = np.zeros((128, NC), dtype=np.int64)
    m = np.full((128, NC), -1e30)
    l = np.zeros((128, NC))
    o = np.zeros((128, 8, NV))
    for t in range(128):
        q4 = (t & 31) & 3
        for ci in range(NC):
            n = 8 * (ci >> 1) + 2 * q4 + (ci & 1)
            see = key_base + (row0 + n) // hq + 1
            lim[t, ci] = see if (n < nrows and see < kv_end) else kv_end
    pos = (0, 0)  # ring position of the block's first sub-tile (idx, phase)

    def adv(p, k):
        idx, ph = p[0] + k, p[1]
        if idx >= ns:
            idx, ph = idx - ns, ph ^ 1
        return idx, ph

    def tma_block(p, j):
        """The producer: sub-tiles 0-7 (values) then 8 (rope) of block j, boxes of 64 rows."""
        for k in range(9):
            idx = adv(p, k)[0]
            dst = OFF_RING + idx * 8192
            key0 = kv_begin + 64 * j
            for r in range(64):
                if key0 + r >= kv_end and key0 >= kv_end:
                    continue
                if key0 + r >= kv_end:  # the box is loaded whole: rows past the end may hold NaN
                    row = np.full(64, np.nan)
                else:
                    row = pool[slots[key0 + r], 64 * k:64 * k + 64]
                for d in range(64):
                    sm.st(swz(dst + r * 128 + 2 * d), row[d])

    def qk(p):
        S = np.zeros((64, N))
        for k in range(9):
            kb = OFF_RING + adv(p, k)[0] * 8192
            qb = OFF_Q + k * QSUB
            for kk in range(4):
                A = desc_kmajor(sm, kb + 32 * kk, 64, kk)
                B = desc_kmajor(sm, qb + 32 * kk, N, kk)
                S += A @ B.T
        s = np.zeros((128, NV))
        for t in range(128):
            for i in range(NV):
                r, c = frag(t, i)
                s[t, i] = S[r, c]
        return s

    tma_block(pos, 0)
    s = qk(pos)
    for j in range(nblk):
        kb = kv_begin + 64 * j
        if j == nblk - 1 and tail < 64:
            for i in range(8 * (64 - tail) * 8):
                sub, rem = i // ((64 - tail) * 8), i % ((64 - tail) * 8)
                r, ch = tail + rem // 8, rem % 8
                for e in range(8):
                    sm.st(OFF_RING + adv(pos, sub)[0] * 8192 + r * 128 + ch * 16 + 2 * e, 0.0)
        red = np.full((4, N), -np.inf)
        mx = np.full((128, NC), -np.inf)
        for t in range(128):
            w = t >> 5
            g = (t & 31) >> 2
            for i in range(NV):
                ci = 2 * (i >> 2) + (i & 1)
                key = kb + 16 * w + g + 8 * ((i >> 1) & 1)
                v = s[t, i] * scale_log2 if key < lim[t, ci] else -np.inf
                s[t, i] = v
                mx[t, ci] = np.fmax(mx[t, ci], v)
        # lanes xor 4, 8, 16 = the 8 lanes of a warp with the same q4
        for w in range(4):
            for q4 in range(4):
                ts = [w * 32 + gg * 4 + q4 for gg in range(8)]
                for ci in range(NC):
                    v = max(mx[tt, ci] for tt in ts)
                    for tt in ts:
                        mx[tt, ci] = v
                    red[w, 8 * (ci >> 1) + 2 * q4 + (ci & 1)] = v
        pt = OFF_P
        for t in range(128):
            q4 = (t & 31) & 3
            w, g = t >> 5, (t & 31) >> 2
            alpha = np.zeros(NC)
            for ci in range(NC):
                n = 8 * (ci >> 1) + 2 * q4 + (ci & 1)
                bm = max(red[0, n], red[1, n], red[2, n], red[3, n])
                mn = max(m[t, ci], bm)
                alpha[ci] = 2.0 ** (m[t, ci] - mn)
                m[t, ci] = mn
                l[t, ci] *= alpha[ci]
            for i in range(NV):
                ci, n = 2 * (i >> 2) + (i & 1), 8 * (i >> 2) + 2 * q4 + (i & 1)
                key = 16 * w + g + 8 * ((i >> 1) & 1)
                p = 2.0 ** (s[t, i] - m[t, ci])
                l[t, ci] += p
                sm.st(pt + n * 128 + ((((key >> 3) ^ (n & 7)) << 4) | ((key & 7) * 2)), p)
            for mt in range(8):
                for i in range(NV):
                    o[t, mt, i] *= alpha[2 * (i >> 2) + (i & 1)]
        # O^T += V^T P^T
        O = np.zeros((8, 64, N))
        for mt in range(8):
            vb = OFF_RING + adv(pos, mt)[0] * 8192
            for kk in range(4):
                A = desc_mnmajor(sm, vb + 2048 * kk, 64)
                B = desc_kmajor(sm, OFF_P + 32 * kk, N, kk)
                O[mt] += A @ B.T
        for t in range(128):
            for mt in range(8):
                for i in range(NV):
                    r, c = frag(t, i)
                    o[t, mt, i] += O[mt, r, c]
        nxt = adv(pos, 9)
        if j + 1 < nblk:
            tma_block(nxt, j + 1)
            s = qk(nxt)
        pos = nxt
    # epilogue
    out = np.full((N, 512), np.nan)
    for w in range(4):
        for q4 in range(4):
            ts = [w * 32 + gg * 4 + q4 for gg in range(8)]
            tot = l[ts].sum(axis=0)
            for tt in ts:
                l[tt] = tot
    lt = np.zeros((128, NC))
    for t in range(128):
        q4 = (t & 31) & 3
        for ci in range(NC):
            lt[t, ci] = sum(l[ww * 32 + q4, ci] for ww in range(4))  # red[w][n] from lane q4 of warp w
    for t in range(128):
        w, g, q4 = t >> 5, (t & 31) >> 2, (t & 31) & 3
        for i in range(NV):
            ci, n = 2 * (i >> 2) + (i & 1), 8 * (i >> 2) + 2 * q4 + (i & 1)
            if n >= nrows:
                continue
            d0 = 16 * w + g + 8 * ((i >> 1) & 1)
            inv = 1.0 / lt[t, ci] if lt[t, ci] > 0 else 0.0
            for mt in range(8):
                out[n, d0 + 64 * mt] = o[t, mt, i] * inv
    return out[:nrows]


def reference(nrows, hq, key_base, row0, kv_begin, kv_end, pool, slots, q, scale):
    out = np.zeros((nrows, 512))
    for n in range(nrows):
        see = min(key_base + (row0 + n) // hq + 1, kv_end)
        keys = list(range(kv_begin, see))
        K = pool[[slots[k] for k in keys]]
        sc = K @ q[n] * scale
        p = np.exp(sc - sc.max())
        out[n] = (p / p.sum()) @ K[:, :512]
    return out


def main():
    rng = np.random.default_rng(7)
    cases = [  # N, nrows, hq, tokens, kv_begin, kv_end
        (16, 16, 16, 1, 0, 150),     # decode, 3 blocks, ragged tail
        (16, 16, 16, 1, 128, 256),   # a split that starts at 128, full last block
        (32, 32, 16, 2, 64, 200),    # verify 16 x 2: token 0 sees one key less
        (16, 5, 5, 1, 0, 70),        # fewer rows than the tile
    ]
    worst = 0.0
    for N, nrows, hq, tokens, kv_begin, kv_end in cases:
        seq = kv_end if kv_begin == 0 else 300
        key_base = seq - tokens
        kv_end = min(kv_end, seq)
        nslot = 4096
        pool = rng.standard_normal((nslot, 576)).astype(np.float64)
        slots = rng.permutation(nslot)[:seq]
        q = rng.standard_normal((nrows, 576)) * 0.2
        scale = 1.0 / np.sqrt(192.0)
        got = run(N, nrows, hq, key_base, 0, kv_begin, kv_end, pool, slots, q, scale * np.log2(np.e), rng)
        want = reference(nrows, hq, key_base, 0, kv_begin, kv_end, pool, slots, q, scale)
        err = np.abs(got - want).max() / np.abs(want).max()
        worst = max(worst, err)
        print(f"N={N} rows={nrows} hq={hq} tokens={tokens} keys [{kv_begin},{kv_end}): max rel err {err:.2e}")
    ok = bool(np.isfinite(worst)) and worst < 1e-6  # smem holds float32 values
    print("narrow model:", "OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
