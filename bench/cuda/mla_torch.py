# bench/cuda/mla_torch.py - the PyTorch matmul path of MLA decode (the anchor
# method of ../shared/bench/anchors_torch.py, copied here so it travels with
# the repo) on issue 7's shapes, in the same run as cuda_mla's bench.
#   python3 bench/cuda/mla_torch.py OUT.json
# Contiguous latent cache [B, L, 576] (torch has no paged MLA kernel); scores
# in fp32 softmax, P in bf16, value = the first 512 dims.  FLOPs counted as
# 2 hq s_q L (576 + 512), bytes as the latent cache read once.
import json, math, sys
import torch
from triton.testing import do_bench

SHAPES = [  # (mode, B, L, s_q, hq)
    ("decode", 64, 4096, 1, 16), ("decode", 64, 16384, 1, 16), ("decode", 64, 32768, 1, 16),
    ("decode", 128, 4096, 1, 16), ("decode", 128, 16384, 1, 16), ("decode", 128, 32768, 1, 16),
    ("decode", 128, 4096, 1, 128), ("decode", 128, 8192, 1, 128),
    ("verify", 128, 4096, 2, 64), ("verify", 128, 8192, 2, 64),
]

def main():
    dev = "cuda"
    torch.manual_seed(0)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": []}
    for mode, B, L, sq, hq in SHAPES:
        name = f"{mode}:b={B},l={L},q={sq},hq={hq},page=64"
        try:
            q = torch.randn(B, hq * sq, 576, dtype=torch.bfloat16, device=dev)
            kv = torch.randn(B, L, 576, dtype=torch.bfloat16, device=dev)
            def f():
                s = torch.matmul(q, kv.transpose(1, 2)) * (1 / math.sqrt(192))
                p = torch.softmax(s.float(), -1).to(torch.bfloat16)
                return torch.matmul(p, kv[:, :, :512])
            t = do_bench(f, warmup=25, rep=100, return_mode="median") * 1e-3
            row = {"case": name, "median_us": t * 1e6, "tbps": B * L * 576 * 2 / t / 1e12,
                   "tflops": 2 * B * hq * sq * L * (576 + 512) / t / 1e12}
            del q, kv
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001 - report and go on
            row = {"case": name, "error": str(e)[:200]}
        out["cases"].append(row)
        print("torch", row, flush=True)
    json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "mla_torch.json", "w"), indent=1)

if __name__ == "__main__":
    main()
