"""PyTorch SDPA (flash, cuDNN) on the issue-6 shapes, in the same run as ours.

Decode: contiguous KV (torch has no paged kernel), one query token, GQA 32/8,
d128, bf16; bandwidth counts K and V read once (2*B*Hkv*L*d*2 bytes).
Prefill: causal, 16 heads, d128, bf16, B*S = 16k; TFLOP/s = 4*B*H*S^2*d/2.
Writes JSON (GPU, date, commit, torch) to argv[1].  TORCH_PARTS=prefill (or
decode) runs one half only."""
import datetime, json, os, subprocess, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(__file__))
from shapes import DECODE, PREFILL  # noqa: E402

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def ms(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def main(out):
    dev = "cuda"
    torch.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"tool": "bench/cuda/torch_side_by_side.py", "gpu": torch.cuda.get_device_name(),
           "torch": torch.__version__, "date": datetime.datetime.utcnow().isoformat() + "Z",
           "commit": commit, "decode": [], "prefill": []}
    parts = os.environ.get("TORCH_PARTS", "decode,prefill").split(",")
    for b, l in (DECODE if "decode" in parts else []):
        hq, hk, d = 32, 8, 128
        q = torch.randn(b, hq, 1, d, dtype=torch.bfloat16, device=dev)
        k = torch.randn(b, hk, l, d, dtype=torch.bfloat16, device=dev)
        v = torch.randn(b, hk, l, d, dtype=torch.bfloat16, device=dev)
        nbytes = 2 * b * hk * l * d * 2
        row = {"b": b, "l": l}
        for name, be in BACKENDS.items():
            try:
                with sdpa_kernel(be):
                    t = ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                row[name + "_us"] = round(t * 1e3, 2)
                row[name + "_TBps"] = round(nbytes / (t * 1e-3) / 1e12, 3)
            except Exception as e:  # a backend that refuses the shape
                row[name + "_error"] = str(e)[:200]
        res["decode"].append(row)
        print("torch decode", row, flush=True)
        del q, k, v
    for b, s in (PREFILL if "prefill" in parts else []):
        h, d = 16, 128
        q, k, v = (torch.randn(b, h, s, d, dtype=torch.bfloat16, device=dev) for _ in range(3))
        flops = 4 * b * h * s * s * d / 2
        row = {"b": b, "s": s}
        for name, be in BACKENDS.items():
            try:
                with sdpa_kernel(be):
                    t = ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                row[name + "_us"] = round(t * 1e3, 2)
                row[name + "_TFLOPs"] = round(flops / (t * 1e-3) / 1e12, 1)
            except Exception as e:
                row[name + "_error"] = str(e)[:200]
        res["prefill"].append(row)
        print("torch prefill", row, flush=True)
        del q, k, v
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "torch_side_by_side.json")
