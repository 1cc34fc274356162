"""PyTorch beside cuda_attn's fp8 KV decode (bench/gpu/fp8_decode.sh).

Shapes: GQA 32/8, d128, one query token, B 64/128, L 4k/8k/16k, contiguous
KV (torch has no paged kernel).  Timed per shape:
  sdpa_bf16   SDPA (cuDNN, else flash) on bf16 K/V: the bf16 decode's peer;
  deq_sdpa    an fp8 e4m3 K/V dequantised to bf16 (x scale) then SDPA: what
              an fp8 pool costs with torch's attention, which takes no fp8 K/V.
Writes JSON (GPU, date, commit, torch) to argv[1]."""
import datetime, json, os, subprocess, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

SHAPES = [(b, l) for b in (64, 128) for l in (4096, 8192, 16384)]


def ms(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def pick_backend(q, k, v):
    """cuDNN where it takes the shape, else flash (the faster of the two on H200 decode)."""
    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        try:
            with sdpa_kernel(be):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            return be
        except Exception:
            continue
    return SDPBackend.MATH


def main(out):
    dev = "cuda"
    torch.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"tool": "bench/cuda/fp8_torch.py", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": datetime.datetime.utcnow().isoformat() + "Z", "commit": commit, "decode": []}
    hq, hk, d = 32, 8, 128
    ks, vs = 1.0 / 64, 1.0 / 32
    for b, l in SHAPES:
        q = torch.randn(b, hq, 1, d, dtype=torch.bfloat16, device=dev)
        k8 = (torch.rand(b, hk, l, d, device=dev) * 2 - 1).div_(ks).to(torch.float8_e4m3fn)
        v8 = (torch.rand(b, hk, l, d, device=dev) * 2 - 1).div_(vs).to(torch.float8_e4m3fn)
        k = k8.to(torch.bfloat16) * ks
        v = v8.to(torch.bfloat16) * vs
        row = {"b": b, "l": l}
        be = pick_backend(q, k, v)
        row["sdpa_backend"] = be.name.lower()

        def bf16():
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        row["sdpa_bf16_us"] = round(ms(bf16) * 1e3, 2)

        def deq():
            kk = k8.to(torch.bfloat16) * ks
            vv = v8.to(torch.bfloat16) * vs
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, kk, vv, enable_gqa=True)
        try:
            row["deq_sdpa_us"] = round(ms(deq) * 1e3, 2)
        except Exception as e:
            row["deq_sdpa_error"] = str(e)[:200]
        res["decode"].append(row)
        print("torch fp8 decode", row, flush=True)
        del q, k, v, k8, v8
        torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "torch_fp8.json")
