# The card's two ceilings, measured in the same run as our kernels: device
# copy bandwidth (bytes read + written) and the bf16 GEMM rate, as in
# anchors_torch.py.  Writes JSON (GPU, date, commit) to argv[1].
import datetime, json, os, sys
import torch
from triton.testing import do_bench

res = {"tool": "bench/anchors/ceilings.py", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
       "date": datetime.datetime.utcnow().isoformat() + "Z", "commit": os.environ.get("SGL_ATTN_COMMIT", "unknown")}
a = torch.empty(2 * 1024**3, dtype=torch.float16, device="cuda").normal_()
b = torch.empty_like(a)
t = do_bench(lambda: b.copy_(a), warmup=25, rep=100, return_mode="median")
res["copy_TBps"] = 2 * a.numel() * 2 / (t * 1e-3) / 1e12
del a, b
x = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
y = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
t = do_bench(lambda: x @ y, warmup=25, rep=100, return_mode="median")
res["gemm_bf16_TFLOPs"] = 2 * 8192**3 / (t * 1e-3) / 1e12
json.dump(res, open(sys.argv[1], "w"), indent=1)
print(f"copy {res['copy_TBps']:.2f} TB/s, bf16 GEMM {res['gemm_bf16_TFLOPs']:.0f} TFLOP/s")
