"""Plain PyTorch Gated DeltaNet, KDA and Mamba2 (SSD), timed in the same run as the CUDA wrappers
(bench/gpu/final_linear.sh: GDN; bench/gpu/linear_prefill.sh: the issue-22 prefill shapes, all three).

Decode: one step of a Qwen3-Next GDN layer (32 value heads, 16 qk heads, K = V = 128,
conv width 4, fp32 state), B in {32, 256, 1024}, and the TP2 shapes (16 / 8): the conv
state update, SiLU, split, l2norm of q and k, the gates and the delta rule, in plain
tensor ops on [B, HV, V, K] state.  Bytes = state read + written, as bench_lin counts.
Prefill: one 64k-token sequence of Qwen3.5 TP8 (2 qk heads, 8 value heads, d 128, bf16
inputs): depthwise conv + SiLU + l2norm + gates, then the chunked gated delta rule
(chunk 64; chunk-local parts batched over all chunks, T = (I + A)^-1 by
torch.linalg.solve_triangular; the state passed chunk by chunk in a Python loop).
FLOPs: 4 * T * HV * K * V (FlashInfer's count, as bench_lin).
KDA prefill (Kimi-Linear-48B-A3B TP4: 8 heads, K = V = 128; 1 x 64k and 16 x 8k): the same chunked
delta rule with one gate per key channel, in plain tensor ops: the chunk-local A and M are
sum_c k_t[c] k_i[c] exp(G_t[c] - G_i[c]) over a masked [chunk, chunk, K] decay tensor (never the exp
of a positive number), chunk groups at a time to bound memory; T by solve_triangular; the state
passed chunk by chunk in a Python loop (batched over the requests).
Mamba2 SSD prefill (Nemotron-H-8B: 128 heads, P 64, 8 groups, N 128; 1 x 64k and 16 x 8k): the
chunked SSD of the Mamba2 paper in tensor ops: the intra-chunk quadratic part (C B^T . L) (dt x),
every chunk's state from zero, the inter-chunk state passing (a Python loop over chunks: the paper's
chunk-level segsum is quadratic in the 1,024 chunks of 64k), the state's contribution e^G S C, D x.
FLOPs: 4 * T * H * N * P, the same count.
Self-checks first: each chunked prefill against its token-by-token recurrence on a tiny shape.
`linear_torch.py --self-check` runs only those, on the GPU if there is one, else on the CPU.
TORCH_LIN_SET=prefill: the GDN prefill shapes (1 x 8k, 1 x 64k as above; 1 x 32k, 16 x 8k and
Qwen3-Next's 1 x 32k, 8 x 4k by the same steps over a batch of equal requests), then the KDA and Mamba2
ones (no decode).
Writes JSON (GPU, date, commit, torch) to argv[1]."""
import datetime
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

DEV = "cuda"
K = V = 128
W = 4


def timed_ms(fn, budget_ms=150.0):
    """Median over 5 runs of N calls between CUDA events (N from a first call)."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    n = max(1, min(200, int(budget_ms / 5 / one)))
    ts = []
    for _ in range(5):
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / n)
    ts.sort()
    return ts[2]


def conv_silu(x, w, b):
    """Causal depthwise conv + SiLU of x [B, L, C] from zero history (w [C, W], b [C])."""
    width = w.shape[1]
    y = F.conv1d(F.pad(x.float().transpose(1, 2), (width - 1, 0)), w.unsqueeze(1), b, groups=x.shape[-1])
    return F.silu(y.transpose(1, 2))


def conv_step(conv_state, x, w, b):
    """One decode step of the same conv: conv_state [B, C, W-1] (updated), x [B, C]."""
    xs = torch.cat([conv_state, x.float().unsqueeze(-1)], dim=-1)
    conv_state.copy_(xs[:, :, 1:])
    return F.silu((xs * w).sum(-1) + b)


def to_chunks(t, chunk):
    """[B, L, H, ...] -> [B, H, n, chunk, ...], zero padded at the end of each request."""
    Bsz, L = t.shape[:2]
    n = (L + chunk - 1) // chunk
    t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, n * chunk - L))
    t = t.reshape(Bsz, n, chunk, *t.shape[2:])
    return t.permute(0, 3, 1, 2, *range(4, t.dim())).contiguous()


def from_chunks(t, L):
    """[B, H, n, chunk, D] -> [B, L, H, D]."""
    Bsz, H, n, chunk = t.shape[:4]
    return t.permute(0, 2, 3, 1, 4).reshape(Bsz, n * chunk, H, t.shape[-1])[:, :L]


def l2norm(x):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


class Layer:
    """Weights of one GDN layer (float32, as the model passes them)."""

    def __init__(self, hk, hv, gen):
        self.hk, self.hv = hk, hv
        self.C = 2 * hk * K + hv * V
        self.conv_w = torch.randn(self.C, W, device=DEV, generator=gen) * 0.5
        self.conv_b = torch.randn(self.C, device=DEV, generator=gen) * 0.2
        self.A_log = torch.rand(hv, device=DEV, generator=gen) * 2 - 1.5
        self.dt_bias = torch.randn(hv, device=DEV, generator=gen) * 0.5

    def split(self, y):
        """conv output [.., C] -> q, k [.., HV, K] (l2-normalised, repeated per group), v [.., HV, V]"""
        hk, hv = self.hk, self.hv
        lead = y.shape[:-1]
        q = l2norm(y[..., : hk * K].reshape(*lead, hk, K))
        k = l2norm(y[..., hk * K : 2 * hk * K].reshape(*lead, hk, K))
        v = y[..., 2 * hk * K :].reshape(*lead, hv, V)
        rep = hv // hk
        return q.repeat_interleave(rep, dim=-2), k.repeat_interleave(rep, dim=-2), v

    def gates(self, a, b):
        g = -torch.exp(self.A_log) * F.softplus(a.float() + self.dt_bias)
        return g, torch.sigmoid(b.float())

    def decode(self, x, a, b, conv_state, S):
        """x [B, C], a/b [B, HV]; conv_state [B, C, W-1], S [B, HV, V, K] float32, updated."""
        xs = torch.cat([conv_state, x.float().unsqueeze(-1)], dim=-1)
        conv_state.copy_(xs[:, :, 1:])
        y = F.silu((xs * self.conv_w).sum(-1) + self.conv_b)
        q, k, v = self.split(y)
        g, beta = self.gates(a, b)
        S.mul_(torch.exp(g)[:, :, None, None])
        u = beta[..., None] * (v - torch.einsum("bhvk,bhk->bhv", S, k))
        S.add_(u[..., :, None] * k[..., None, :])
        o = torch.einsum("bhvk,bhk->bhv", S, q) / math.sqrt(K)
        return o.to(x.dtype)

    def prefill(self, x, a, b, chunk=64):
        """One sequence from zero state: x [T, C], a/b [T, HV] -> out [T, HV, V] (prefill_batch of one)."""
        return self.prefill_batch(x[None], a[None], b[None], chunk)[0]

    def prefill_batch(self, x, a, b, chunk=64):
        """B requests of L tokens from zero state (the prefill above over a batch): x [B, L, C], a/b [B, L, HV]
        -> out [B, L, HV, V]."""
        Bsz, L = x.shape[:2]
        q, k, v = self.split(conv_silu(x, self.conv_w, self.conv_b))
        g, beta = self.gates(a, b)
        q, k, v = to_chunks(q, chunk) / math.sqrt(K), to_chunks(k, chunk), to_chunks(v, chunk)
        g, beta = to_chunks(g, chunk), to_chunks(beta, chunk)  # [B, HV, n, chunk]
        n = g.shape[2]
        G = g.cumsum(-1)
        lower = torch.ones(chunk, chunk, dtype=torch.bool, device=DEV).tril()
        decay = torch.exp((G[..., :, None] - G[..., None, :]).masked_fill(~lower, float("-inf")))
        eye = torch.eye(chunk, device=DEV)
        A = beta[..., :, None] * (k @ k.transpose(-1, -2)) * decay * (1 - eye)
        Tinv = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
        Wm = Tinv @ (beta[..., None] * k * torch.exp(G)[..., None])
        U = Tinv @ (beta[..., None] * v)
        M = (q @ k.transpose(-1, -2)) * decay
        QG = q * torch.exp(G)[..., None]
        KD = k * torch.exp(G[..., -1:] - G)[..., None]
        eG = torch.exp(G[..., -1])  # [B, HV, n]
        S = torch.zeros(Bsz, self.hv, V, K, device=DEV)
        out = torch.empty(Bsz, self.hv, n, chunk, V, device=DEV)
        for c in range(n):
            St = S.transpose(-1, -2)
            Unew = U[:, :, c] - Wm[:, :, c] @ St
            out[:, :, c] = QG[:, :, c] @ St + M[:, :, c] @ Unew
            S = S * eG[:, :, c, None, None] + Unew.transpose(-1, -2) @ KD[:, :, c]
        return from_chunks(out, L).to(x.dtype)


class KdaLayer:
    """Weights of one KDA layer (Kimi-Linear): h heads for q, k and v, dims dk / dv, gates per key channel."""

    def __init__(self, h, dk, dv, gen, slow=False):
        self.h, self.dk, self.dv = h, dk, dv
        self.C = 2 * h * dk + h * dv
        self.conv_w = torch.randn(self.C, W, device=DEV, generator=gen) * 0.5
        self.conv_b = torch.randn(self.C, device=DEV, generator=gen) * 0.2
        lo = -6.0 if slow else -1.5
        self.A_log = torch.rand(h, device=DEV, generator=gen) * 2 + lo
        self.dt_bias = torch.randn(h * dk, device=DEV, generator=gen) * 0.5

    def split(self, y):
        """conv output [.., C] -> q, k [.., h, dk] (l2-normalised), v [.., h, dv]"""
        h, dk, dv = self.h, self.dk, self.dv
        lead = y.shape[:-1]
        q = l2norm(y[..., : h * dk].reshape(*lead, h, dk))
        k = l2norm(y[..., h * dk : 2 * h * dk].reshape(*lead, h, dk))
        return q, k, y[..., 2 * h * dk :].reshape(*lead, h, dv)

    def gates(self, a, b):
        """a [.., h * dk] -> g [.., h, dk] (log decay per key channel), b [.., h] -> beta"""
        lead = a.shape[:-1]
        g = -torch.exp(self.A_log)[:, None] * F.softplus(
            a.float().reshape(*lead, self.h, self.dk) + self.dt_bias.reshape(self.h, self.dk))
        return g, torch.sigmoid(b.float())

    def decode(self, x, a, b, conv_state, S):
        """x [B, C], a [B, h dk], b [B, h]; conv_state [B, C, W-1], S [B, h, dv, dk] float32, updated."""
        q, k, v = self.split(conv_step(conv_state, x, self.conv_w, self.conv_b))
        g, beta = self.gates(a, b)
        S.mul_(torch.exp(g)[:, :, None, :])
        u = beta[..., None] * (v - torch.einsum("bhvk,bhk->bhv", S, k))
        S.add_(u[..., :, None] * k[..., None, :])
        return (torch.einsum("bhvk,bhk->bhv", S, q) / math.sqrt(self.dk)).to(x.dtype)

    def prefill(self, x, a, b, chunk=64, block=128):
        """B requests of L tokens from zero state: x [B, L, C], a [B, L, h dk], b [B, L, h] -> out [B, L, h, dv].
        Chunk-local work `block` (request, head, chunk) triples at a time: the decay tensor is
        [block, chunk, chunk, dk] float32 (268 MB at 128)."""
        Bsz, L = x.shape[:2]
        h, dk, dv = self.h, self.dk, self.dv
        q, k, v = self.split(conv_silu(x, self.conv_w, self.conv_b))
        g, beta = self.gates(a, b)
        q, k, v = to_chunks(q, chunk) / math.sqrt(dk), to_chunks(k, chunk), to_chunks(v, chunk)
        G = to_chunks(g, chunk).cumsum(-2)  # [B, h, n, chunk, dk]
        beta = to_chunks(beta, chunk)  # [B, h, n, chunk]
        n = G.shape[2]
        lower = torch.ones(chunk, chunk, dtype=torch.bool, device=DEV).tril()
        strict = lower & ~torch.eye(chunk, dtype=torch.bool, device=DEV)
        eye = torch.eye(chunk, device=DEV)
        qf, kf, Gf, bf = (t.reshape(-1, *t.shape[3:]) for t in (q, k, G, beta))
        A = torch.empty(qf.shape[0], chunk, chunk, device=DEV)
        M = torch.empty_like(A)
        for s in range(0, qf.shape[0], block):
            Gb, kb = Gf[s : s + block], kf[s : s + block]
            diff = (Gb[:, :, None, :] - Gb[:, None, :, :]).masked_fill(~lower[None, :, :, None], float("-inf"))
            kd = kb[:, None, :, :] * torch.exp(diff)  # [b, t, i, c] = k_i[c] exp(G_t[c] - G_i[c])
            A[s : s + block] = (kb[:, :, None, :] * kd).sum(-1) * bf[s : s + block, :, None] * strict
            M[s : s + block] = (qf[s : s + block, :, None, :] * kd).sum(-1)
        A, M = A.reshape(Bsz, h, n, chunk, chunk), M.reshape(Bsz, h, n, chunk, chunk)
        Tinv = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
        Wm = Tinv @ (beta[..., None] * k * torch.exp(G))
        U = Tinv @ (beta[..., None] * v)
        QG = q * torch.exp(G)
        KD = k * torch.exp(G[..., -1:, :] - G)
        eG = torch.exp(G[..., -1, :])  # [B, h, n, dk]
        S = torch.zeros(Bsz, h, dv, dk, device=DEV)
        out = torch.empty(Bsz, h, n, chunk, dv, device=DEV)
        for c in range(n):
            St = S.transpose(-1, -2)
            Unew = U[:, :, c] - Wm[:, :, c] @ St
            out[:, :, c] = QG[:, :, c] @ St + M[:, :, c] @ Unew
            S = S * eG[:, :, c, None, :] + Unew.transpose(-1, -2) @ KD[:, :, c]
        return from_chunks(out, L).to(x.dtype)


class Mamba2Layer:
    """Weights of one Mamba2 mixer's SSD part (Nemotron-H): H heads of P channels, G groups of B / C of size N."""

    def __init__(self, H, P, G, N, gen, slow=False):
        self.H, self.P, self.G, self.N = H, P, G, N
        self.C = H * P + 2 * G * N
        self.conv_w = torch.randn(self.C, W, device=DEV, generator=gen) * 0.5
        self.conv_b = torch.randn(self.C, device=DEV, generator=gen) * 0.2
        lo = -6.0 if slow else -1.5
        self.A_log = torch.rand(H, device=DEV, generator=gen) * 2 + lo
        self.dt_bias = torch.randn(H, device=DEV, generator=gen) * 0.5
        self.D = torch.randn(H, device=DEV, generator=gen)

    def split(self, y):
        """conv output [.., C] -> x [.., H, P], B and C [.., G, N]"""
        H, P, G, N = self.H, self.P, self.G, self.N
        lead = y.shape[:-1]
        return (y[..., : H * P].reshape(*lead, H, P), y[..., H * P : H * P + G * N].reshape(*lead, G, N),
                y[..., H * P + G * N :].reshape(*lead, G, N))

    def gates(self, dt_raw):
        """dt_raw [.., H] -> dt = softplus(dt_raw + dt_bias), log decay dt A (A = -exp(A_log))"""
        dt = F.softplus(dt_raw.float() + self.dt_bias)
        return dt, -torch.exp(self.A_log) * dt

    def decode(self, x, dt_raw, conv_state, S):
        """x [B, C], dt_raw [B, H]; conv_state [B, C, W-1], S [B, H, P, N] float32, updated."""
        xs, Bm, Cm = self.split(conv_step(conv_state, x, self.conv_w, self.conv_b))
        dt, g = self.gates(dt_raw)
        rep = self.H // self.G
        Bh, Ch = Bm.repeat_interleave(rep, dim=1), Cm.repeat_interleave(rep, dim=1)
        S.mul_(torch.exp(g)[:, :, None, None])
        S.add_((dt[..., None] * xs)[..., :, None] * Bh[..., None, :])
        y = torch.einsum("bhpn,bhn->bhp", S, Ch) + self.D[:, None] * xs
        return y.to(x.dtype)

    def prefill(self, x, dt_raw, chunk=64):
        """B requests of L tokens from zero state: x [B, L, C], dt_raw [B, L, H] -> y [B, L, H, P]."""
        Bsz, L = x.shape[:2]
        H, P, G = self.H, self.P, self.G
        r = H // G  # head h reads group h // r: heads split as [G, r]
        xs, Bm, Cm = self.split(conv_silu(x, self.conv_w, self.conv_b))
        dt, g = self.gates(dt_raw)
        v = to_chunks(xs * dt[..., None], chunk)  # [B, H, n, c, P]
        Bc, Cc = to_chunks(Bm, chunk), to_chunks(Cm, chunk)  # [B, G, n, c, N]
        Gc = to_chunks(g, chunk).cumsum(-1)  # [B, H, n, c]
        n = Gc.shape[2]
        lower = torch.ones(chunk, chunk, dtype=torch.bool, device=DEV).tril()
        # 1. intra-chunk (quadratic): y_t = sum_{i<=t} exp(G_t - G_i) (C_t . B_i) dt_i x_i
        Lm = torch.exp((Gc[..., :, None] - Gc[..., None, :]).masked_fill(~lower, float("-inf")))
        CB = Cc @ Bc.transpose(-1, -2)  # [B, G, n, c, c]
        vg = v.reshape(Bsz, G, r, n, chunk, P)
        y = (CB[:, :, None] * Lm.reshape(Bsz, G, r, n, chunk, chunk)) @ vg
        # 2. each chunk's end state from zero: sum_i exp(G_last - G_i) dt_i x_i B_i^T  [B, G, r, n, P, N]
        wv = vg * torch.exp(Gc[..., -1:] - Gc).reshape(Bsz, G, r, n, chunk, 1)
        dS = wv.transpose(-1, -2) @ Bc[:, :, None]
        # 3. inter-chunk state passing: S_start(z + 1) = exp(G_last(z)) S_start(z) + dS(z)
        eG = torch.exp(Gc[..., -1]).reshape(Bsz, G, r, n)
        S = torch.zeros(Bsz, G, r, P, self.N, device=DEV)
        starts = torch.empty_like(dS)
        for z in range(n):
            starts[:, :, :, z] = S
            S = S * eG[..., z, None, None] + dS[:, :, :, z]
        # 4. the start state's part: exp(G_t) S_start C_t; then D x
        y = y + torch.exp(Gc).reshape(Bsz, G, r, n, chunk, 1) * (Cc[:, :, None] @ starts.transpose(-1, -2))
        y = from_chunks(y.reshape(Bsz, H, n, chunk, P), L) + self.D[:, None] * xs
        return y.to(x.dtype)


def nmse(got, want):
    return ((got - want) ** 2).sum().item() / max((want**2).sum().item(), 1e-30)


def self_check_gdn_batch(gen):
    """The batched GDN prefill (2 requests of 200 tokens) equals token-by-token steps."""
    L = Layer(2, 4, gen)
    Bsz, T = 2, 200
    x = torch.randn(Bsz, T, L.C, device=DEV, generator=gen).bfloat16()
    a = torch.randn(Bsz, T, 4, device=DEV, generator=gen).bfloat16()
    b = torch.randn(Bsz, T, 4, device=DEV, generator=gen).bfloat16()
    chunked = L.prefill_batch(x, a, b).float()
    cs = torch.zeros(Bsz, L.C, W - 1, device=DEV)
    S = torch.zeros(Bsz, 4, V, K, device=DEV)
    steps = torch.stack([L.decode(x[:, t], a[:, t], b[:, t], cs, S) for t in range(T)], dim=1).float()
    return nmse(chunked, steps)


def self_check_kda(gen):
    """KDA's chunked prefill (2 requests of 200 tokens, chunk groups of 5) equals token-by-token steps."""
    h, dk, dv, Bsz, T = 2, 32, 16, 2, 200
    L = KdaLayer(h, dk, dv, gen, slow=True)
    x = torch.randn(Bsz, T, L.C, device=DEV, generator=gen).bfloat16()
    a = torch.randn(Bsz, T, h * dk, device=DEV, generator=gen).bfloat16()
    b = torch.randn(Bsz, T, h, device=DEV, generator=gen).bfloat16()
    chunked = L.prefill(x, a, b, block=5).float()
    cs = torch.zeros(Bsz, L.C, W - 1, device=DEV)
    S = torch.zeros(Bsz, h, dv, dk, device=DEV)
    steps = torch.stack([L.decode(x[:, t], a[:, t], b[:, t], cs, S) for t in range(T)], dim=1).float()
    return nmse(chunked, steps)


def self_check_mamba2(gen):
    """Mamba2's chunked SSD prefill (2 requests of 200 tokens, 4 heads in 2 groups) equals token-by-token steps."""
    H, P, G, N, Bsz, T = 4, 16, 2, 32, 2, 200
    L = Mamba2Layer(H, P, G, N, gen, slow=True)
    x = torch.randn(Bsz, T, L.C, device=DEV, generator=gen).bfloat16()
    dt = torch.randn(Bsz, T, H, device=DEV, generator=gen).bfloat16()
    chunked = L.prefill(x, dt).float()
    cs = torch.zeros(Bsz, L.C, W - 1, device=DEV)
    S = torch.zeros(Bsz, H, P, N, device=DEV)
    steps = torch.stack([L.decode(x[:, t], dt[:, t], cs, S) for t in range(T)], dim=1).float()
    return nmse(chunked, steps)


def self_check(gen):
    """The chunked prefill equals token-by-token decode (NMSE)."""
    L = Layer(2, 4, gen)
    T = 200
    x = torch.randn(T, L.C, device=DEV, generator=gen).bfloat16()
    a = torch.randn(T, 4, device=DEV, generator=gen).bfloat16()
    b = torch.randn(T, 4, device=DEV, generator=gen).bfloat16()
    chunked = L.prefill(x, a, b).float()
    cs = torch.zeros(1, L.C, W - 1, device=DEV)
    S = torch.zeros(1, 4, V, K, device=DEV)
    steps = torch.stack([L.decode(x[t : t + 1], a[t : t + 1], b[t : t + 1], cs, S)[0] for t in range(T)]).float()
    return ((chunked - steps) ** 2).sum().item() / max((steps**2).sum().item(), 1e-30)


def prefill_kinds(res, gen):
    """The issue-22 prefill shapes of bench_lin BENCH_SET=prefill (T tokens in B equal requests): gdn's other
    shapes (batched), kda, mamba2."""
    for hk, hv, B, T in ((2, 8, 1, 32768), (2, 8, 16, 131072), (16, 32, 1, 32768), (16, 32, 8, 32768)):
        L = Layer(hk, hv, gen)
        x = torch.randn(B, T // B, L.C, device=DEV, generator=gen).bfloat16()
        a = torch.randn(B, T // B, hv, device=DEV, generator=gen).bfloat16()
        b = torch.randn(B, T // B, hv, device=DEV, generator=gen).bfloat16()
        ms = timed_ms(lambda: L.prefill_batch(x, a, b), budget_ms=400.0)
        flops = 4.0 * T * hv * K * V
        row = {"kind": "gdn", "T": T, "B": B, "hv": hv, "hk": hk, "K": K, "V": V, "us": round(ms * 1e3, 2),
               "tflops_std": round(flops / (ms * 1e-3) / 1e12, 3), "form": "batched"}
        res["prefill"].append(row)
        print("torch prefill", row, flush=True)
        del x, a, b
        torch.cuda.empty_cache()
    for B, T in ((1, 65536), (16, 131072)):
        L = KdaLayer(8, 128, 128, gen)
        x = torch.randn(B, T // B, L.C, device=DEV, generator=gen).bfloat16()
        a = torch.randn(B, T // B, 8 * 128, device=DEV, generator=gen).bfloat16()
        b = torch.randn(B, T // B, 8, device=DEV, generator=gen).bfloat16()
        ms = timed_ms(lambda: L.prefill(x, a, b), budget_ms=400.0)
        flops = 4.0 * T * 8 * 128 * 128
        row = {"kind": "kda", "T": T, "B": B, "hv": 8, "hk": 8, "K": 128, "V": 128, "us": round(ms * 1e3, 2),
               "tflops_std": round(flops / (ms * 1e-3) / 1e12, 3)}
        res["prefill"].append(row)
        print("torch prefill", row, flush=True)
        del x, a, b
        torch.cuda.empty_cache()
    for B, T in ((1, 65536), (16, 131072)):
        L = Mamba2Layer(128, 64, 8, 128, gen)
        x = torch.randn(B, T // B, L.C, device=DEV, generator=gen).bfloat16()
        dt = torch.randn(B, T // B, 128, device=DEV, generator=gen).bfloat16()
        ms = timed_ms(lambda: L.prefill(x, dt), budget_ms=400.0)
        flops = 4.0 * T * 128 * 128 * 64
        row = {"kind": "mamba2", "T": T, "B": B, "hv": 128, "hk": 8, "K": 128, "V": 64, "us": round(ms * 1e3, 2),
               "tflops_std": round(flops / (ms * 1e-3) / 1e12, 3)}
        res["prefill"].append(row)
        print("torch prefill", row, flush=True)
        del x, dt
        torch.cuda.empty_cache()


def self_check_only():
    """The three self-checks alone, on the GPU if there is one, else on the CPU; exit 1 if one fails."""
    global DEV
    DEV = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device=DEV)
    gen.manual_seed(0)
    limit, bad = 1e-4, 0
    for name, fn in (("gdn", self_check), ("gdn batched", self_check_gdn_batch), ("kda", self_check_kda),
                     ("mamba2", self_check_mamba2)):
        e = fn(gen)
        bad += not e < limit
        print("self-check %-11s on %s: NMSE %.3g (chunked vs token by token; limit %g) %s"
              % (name, DEV, e, limit, "ok" if e < limit else "FAIL"), flush=True)
    return 1 if bad else 0


def run_start(tool):
    """fp32 matmuls without TF32, a seeded generator, and the JSON's head: tool, GPU, torch, date, commit."""
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device=DEV)
    gen.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return gen, {"tool": tool, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                 "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "commit": commit}


def main(out):
    gen, res = run_start("bench/cuda/linear_torch.py")
    res.update({"decode": [], "prefill": []})
    res["self_check_nmse"] = self_check(gen)
    print("torch self-check (chunked vs token by token): NMSE %.3g" % res["self_check_nmse"], flush=True)
    res["self_check_nmse_gdn_batch"] = self_check_gdn_batch(gen)
    res["self_check_nmse_kda"], res["self_check_nmse_mamba2"] = self_check_kda(gen), self_check_mamba2(gen)
    print("torch self-check gdn batched %.3g, kda %.3g, mamba2 %.3g" % (
        res["self_check_nmse_gdn_batch"], res["self_check_nmse_kda"], res["self_check_nmse_mamba2"]), flush=True)
    prefill_set = os.environ.get("TORCH_LIN_SET") == "prefill"  # the prefill part: no decode shapes
    for hk, hv, B in () if prefill_set else ((16, 32, 32), (16, 32, 256), (16, 32, 1024), (8, 16, 32), (8, 16, 1024)):
        L = Layer(hk, hv, gen)
        x = torch.randn(B, L.C, device=DEV, generator=gen).bfloat16()
        a = torch.randn(B, hv, device=DEV, generator=gen).bfloat16()
        b = torch.randn(B, hv, device=DEV, generator=gen).bfloat16()
        cs = torch.zeros(B, L.C, W - 1, device=DEV)
        S = torch.zeros(B, hv, V, K, device=DEV)
        ms = timed_ms(lambda: L.decode(x, a, b, cs, S))
        nbytes = B * hv * K * V * 4 * 2
        row = {"B": B, "hv": hv, "hk": hk, "us": round(ms * 1e3, 2), "tbps": round(nbytes / (ms * 1e-3) / 1e12, 4)}
        res["decode"].append(row)
        print("torch decode", row, flush=True)
        del S, cs
    for T in (8192, 65536):
        L = Layer(2, 8, gen)
        x = torch.randn(T, L.C, device=DEV, generator=gen).bfloat16()
        a = torch.randn(T, 8, device=DEV, generator=gen).bfloat16()
        b = torch.randn(T, 8, device=DEV, generator=gen).bfloat16()
        ms = timed_ms(lambda: L.prefill(x, a, b), budget_ms=400.0)
        flops = 4.0 * T * 8 * K * V
        row = {"kind": "gdn", "T": T, "B": 1, "hv": 8, "hk": 2, "K": K, "V": V, "us": round(ms * 1e3, 2),
               "tflops_std": round(flops / (ms * 1e-3) / 1e12, 3)}
        res["prefill"].append(row)
        print("torch prefill", row, flush=True)
        del x, a, b
    if prefill_set:
        prefill_kinds(res, gen)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--self-check"]:
        sys.exit(self_check_only())
    main(sys.argv[1] if len(sys.argv) > 1 else "linear_torch.json")
