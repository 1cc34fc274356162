"""PyTorch beside cuda_attn's fp8 KV extend (bench/gpu/fp8_extend.sh).

Shapes (FP8_EXTEND_SHAPES, one place for the script, this file and the
summary): GQA 32/8, d128, causal, (B, prefix, new tokens): a prefill without
prefix and extends over a cached prefix; contiguous KV (torch has no paged
kernel).  Timed per shape:
  sdpa_bf16   SDPA (cuDNN, else flash) on bf16 K/V: the bf16 extend's peer;
  deq_sdpa    an fp8 e4m3 K/V dequantised to bf16 (x scale) then SDPA: what
              an fp8 pool costs with torch's attention, which takes no fp8 K/V.
The new tokens attend causally to the prefix and to each other (a bottom-right
aligned causal mask: an explicit boolean mask where there is a prefix).
Writes JSON (GPU, date, commit, torch) to argv[1]; `python3 fp8_extend_torch.py
--cases` prints the attnctl cases instead."""
import datetime, json, os, subprocess, sys

FP8_EXTEND_SHAPES = [(1, 0, 4096), (1, 0, 16384), (4, 0, 4096), (8, 4096, 512), (32, 8192, 128)]


def case(b, prefix, q, kv):
    return f"extend:b={b},l={prefix + q},q={q},hq=32,hkv=8,d=128,dtype=bf16,kvdtype={kv},page=16"


def main(out):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    def ms(fn):
        return do_bench(fn, warmup=10, rep=50, return_mode="median")

    dev = "cuda"
    torch.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"tool": "bench/cuda/fp8_extend_torch.py", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": datetime.datetime.utcnow().isoformat() + "Z", "commit": commit, "extend": []}
    hq, hk, d = 32, 8, 128
    ks, vs = 1.0 / 64, 1.0 / 32
    for b, prefix, n in FP8_EXTEND_SHAPES:
        l = prefix + n
        q = torch.randn(b, hq, n, d, dtype=torch.bfloat16, device=dev)
        k8 = (torch.rand(b, hk, l, d, device=dev) * 2 - 1).div_(ks).to(torch.float8_e4m3fn)
        v8 = (torch.rand(b, hk, l, d, device=dev) * 2 - 1).div_(vs).to(torch.float8_e4m3fn)
        k = k8.to(torch.bfloat16) * ks
        v = v8.to(torch.bfloat16) * vs
        # query row i (position prefix + i) sees keys 0 .. prefix + i
        mask = None
        if prefix:
            mask = torch.arange(l, device=dev)[None, :] <= (prefix + torch.arange(n, device=dev))[:, None]
        row = {"b": b, "prefix": prefix, "q": n}

        def sdpa(kk, vv, be):
            with sdpa_kernel(be):
                if mask is None:
                    return F.scaled_dot_product_attention(q, kk, vv, is_causal=True, enable_gqa=True)
                return F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask, enable_gqa=True)

        be = None
        for cand in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            try:
                sdpa(k, v, cand)
                be = cand
                break
            except Exception:
                continue
        if be is None:
            row["error"] = "no SDPA backend takes the shape"
        else:
            row["sdpa_backend"] = be.name.lower()
            row["sdpa_bf16_us"] = round(ms(lambda: sdpa(k, v, be)) * 1e3, 2)
            try:
                row["deq_sdpa_us"] = round(ms(lambda: sdpa(k8.to(torch.bfloat16) * ks, v8.to(torch.bfloat16) * vs, be))
                                           * 1e3, 2)
            except Exception as e:
                row["deq_sdpa_error"] = str(e)[:200]
        res["extend"].append(row)
        print("torch fp8 extend", row, flush=True)
        del q, k, v, k8, v8, mask
        torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


def summary(out):
    """bench_fp8x.json (attnctl bench: bf16 and fp8, the defaults), bench_fp8x_mma.json
    (bf16 with kernel=mma: the same kernel as the fp8 one) and torch_fp8x.json in
    OUT -> one line per shape."""
    def load(name):
        try:
            with open(os.path.join(out, name)) as f:
                return json.load(f)
        except Exception:
            return {}
    ours = {c.get("case"): c.get("median_us") for c in load("bench_fp8x.json").get("cases", [])}
    mma = {c.get("case"): c.get("median_us") for c in load("bench_fp8x_mma.json").get("cases", [])}
    torch = {(r["b"], r["prefix"], r["q"]): r for r in load("torch_fp8x.json").get("extend", [])}
    print(f"{'B':>3} {'prefix':>6} {'q':>6} | {'bf16 us':>9} {'bf16 mma':>9} {'fp8 us':>9} {'fp8/bf16':>8} "
          f"{'fp8/mma':>8} | {'torch bf16':>10} {'deq+sdpa':>9}")
    missing = 0
    for b, prefix, n in FP8_EXTEND_SHAPES:
        a, m, f = ours.get(case(b, prefix, n, "bf16")), mma.get(case(b, prefix, n, "bf16")), ours.get(
            case(b, prefix, n, "fp8_e4m3"))
        t = torch.get((b, prefix, n), {})
        missing += not (a and f)
        r = f"{f / a:.3f}x" if a and f else "-"
        rm = f"{f / m:.3f}x" if m and f else "-"
        print(f"{b:>3} {prefix:>6} {n:>6} | {a or 0:9.1f} {m or 0:9.1f} {f or 0:9.1f} {r:>8} {rm:>8} | "
              f"{t.get('sdpa_bf16_us', 0):10.1f} {t.get('deq_sdpa_us', 0):9.1f}")
    print(f"shapes missing a time: {missing}")
    return 1 if missing else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--cases":
        print(" ".join(f"--case {case(b, p, n, kv)}" for b, p, n in FP8_EXTEND_SHAPES for kv in ("bf16", "fp8_e4m3")))
    elif len(sys.argv) > 1 and sys.argv[1] == "--cases-bf16":
        print(" ".join(f"--case {case(b, p, n, 'bf16')}" for b, p, n in FP8_EXTEND_SHAPES))
    elif len(sys.argv) > 2 and sys.argv[1] == "--summary":
        sys.exit(summary(sys.argv[2]))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "torch_fp8x.json")
