"""PyTorch SDPA beside cuda_attn's forward_ragged (bench/gpu/ragged_lse.sh).

Shapes (bench/gpu/ragged_lse.sh's): causal, 16 heads, bf16, B x S in
(4, 4096), (2, 8192), (1, 16384), head dims qk 192 / v 128 (DeepSeek's MLA
prefill) and 128 / 128.  Per shape and dims, each SDPA backend that takes it
(flash, cuDNN, efficient) is timed; one that refuses the shape is recorded
with its error.  FLOPs as attnctl bench counts them: 2 (dqk + dv) per visible
(query, key) pair and head, the causal half (S (S + 1) / 2 pairs per request).
Writes JSON (GPU, date, commit, torch) to argv[1]."""
import datetime, json, os, subprocess, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

SHAPES = [(4, 4096), (2, 8192), (1, 16384)]
DIMS = [(192, 128), (128, 128)]
HEADS = 16
BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def ms(fn):
    return do_bench(fn, warmup=10, rep=50, return_mode="median")


def main(out):
    dev = "cuda"
    torch.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"tool": "bench/cuda/ragged_torch.py", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": datetime.datetime.utcnow().isoformat() + "Z", "commit": commit, "prefill": []}
    for dqk, dv in DIMS:
        for b, s in SHAPES:
            q = torch.randn(b, HEADS, s, dqk, dtype=torch.bfloat16, device=dev)
            k = torch.randn(b, HEADS, s, dqk, dtype=torch.bfloat16, device=dev)
            v = torch.randn(b, HEADS, s, dv, dtype=torch.bfloat16, device=dev)
            flops = 2.0 * (dqk + dv) * HEADS * b * s * (s + 1) / 2
            row = {"b": b, "s": s, "dqk": dqk, "dv": dv, "flops": flops}
            for name, be in BACKENDS:
                def run():
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                try:
                    run()
                    t = ms(run)
                    row[name + "_us"] = round(t * 1e3, 2)
                    row[name + "_tflops"] = round(flops / (t * 1e-3) / 1e12, 2)
                except Exception as e:
                    row[name + "_error"] = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
            res["prefill"].append(row)
            print("torch ragged prefill", row, flush=True)
            del q, k, v
            torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "torch_ragged.json")
