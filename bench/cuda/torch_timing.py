"""The timer of the benches that run PyTorch in the same process (dsa_torch.py,
dsa_indexer_torch.py, prefill_torch.py): on a GPU, three warm-up calls, then
five batches of calls (each about min_s seconds long, `least` (3) to 2000
calls) between two CUDA events; the median batch's time per call.  On the
CPU (a dry run) one call's wall time."""
import time

import torch


def timed(fn, dev: str, min_s: float = 0.3, least: int = 3) -> float:
    if dev == "cpu":
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    torch.cuda.synchronize()
    one = max(e0.elapsed_time(e1) / 1e3, 1e-6)
    n = max(least, min(2000, int(min_s / one)))
    meds = []
    for _ in range(5):
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        torch.cuda.synchronize()
        meds.append(e0.elapsed_time(e1) / 1e3 / n)
    meds.sort()
    return meds[len(meds) // 2]
