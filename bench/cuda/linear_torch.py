"""Plain PyTorch Gated DeltaNet, timed in the same run as gdn_cuda (bench/gpu/final_linear.sh).

Decode: one step of a Qwen3-Next GDN layer (32 value heads, 16 qk heads, K = V = 128,
conv width 4, fp32 state), B in {32, 256, 1024}, and the TP2 shapes (16 / 8): the conv
state update, SiLU, split, l2norm of q and k, the gates and the delta rule, in plain
tensor ops on [B, HV, V, K] state.  Bytes = state read + written, as bench_lin counts.
Prefill: one 64k-token sequence of Qwen3.5 TP8 (2 qk heads, 8 value heads, d 128, bf16
inputs): depthwise conv + SiLU + l2norm + gates, then the chunked gated delta rule
(chunk 64; chunk-local parts batched over all chunks, T = (I + A)^-1 by
torch.linalg.solve_triangular; the state passed chunk by chunk in a Python loop).
FLOPs: 4 * T * HV * K * V (FlashInfer's count, as bench_lin).
A self-check first: the chunked prefill against token-by-token decode steps.
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
        """One sequence from zero state: x [T, C], a/b [T, HV] -> out [T, HV, V]."""
        T, hv = x.shape[0], self.hv
        y = F.conv1d(F.pad(x.float().t().unsqueeze(0), (W - 1, 0)), self.conv_w.unsqueeze(1), self.conv_b,
                     groups=self.C)[0].t()
        q, k, v = self.split(F.silu(y))
        g, beta = self.gates(a, b)
        n = (T + chunk - 1) // chunk
        pad = n * chunk - T

        def heads_first(t):  # [T, HV, ...] -> [HV, n, chunk, ...], zero padded
            t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, 0, 0, pad)) if t.dim() > 2 else F.pad(t, (0, 0, 0, pad))
            return t.reshape(n, chunk, *t.shape[1:]).transpose(0, 2).transpose(1, 2).contiguous()

        q, k, v = heads_first(q) / math.sqrt(K), heads_first(k), heads_first(v)
        g, beta = heads_first(g), heads_first(beta)  # [HV, n, chunk]
        G = g.cumsum(-1)
        diff = G[..., :, None] - G[..., None, :]
        lower = torch.ones(chunk, chunk, dtype=torch.bool, device=DEV).tril()
        decay = torch.exp(diff.masked_fill(~lower, float("-inf")))  # exp(G_t - G_i), i <= t
        eye = torch.eye(chunk, device=DEV)
        A = beta[..., :, None] * (k @ k.transpose(-1, -2)) * decay * (1 - eye)
        Tinv = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
        Wm = Tinv @ (beta[..., None] * k * torch.exp(G)[..., None])
        U = Tinv @ (beta[..., None] * v)
        M = (q @ k.transpose(-1, -2)) * decay
        QG = q * torch.exp(G)[..., None]
        KD = k * torch.exp(G[..., -1:] - G)[..., None]
        eG = torch.exp(G[..., -1])  # [HV, n]
        S = torch.zeros(hv, V, K, device=DEV)
        out = torch.empty(hv, n, chunk, V, device=DEV)
        for c in range(n):
            St = S.transpose(-1, -2)
            Unew = U[:, c] - Wm[:, c] @ St
            out[:, c] = QG[:, c] @ St + M[:, c] @ Unew
            S = S * eG[:, c, None, None] + Unew.transpose(-1, -2) @ KD[:, c]
        return out.permute(1, 2, 0, 3).reshape(n * chunk, hv, V)[:T].to(x.dtype)


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


def main(out):
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device=DEV)
    gen.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"tool": "bench/cuda/linear_torch.py", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "commit": commit,
           "decode": [], "prefill": []}
    res["self_check_nmse"] = self_check(gen)
    print("torch self-check (chunked vs token by token): NMSE %.3g" % res["self_check_nmse"], flush=True)
    for hk, hv, B in ((16, 32, 32), (16, 32, 256), (16, 32, 1024), (8, 16, 32), (8, 16, 1024)):
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
        row = {"T": T, "hv": 8, "hk": 2, "us": round(ms * 1e3, 2), "tflops_std": round(flops / (ms * 1e-3) / 1e12, 3)}
        res["prefill"].append(row)
        print("torch prefill", row, flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "linear_torch.json")
