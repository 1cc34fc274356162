#!/usr/bin/env python3
"""The Python cost of a layer forward through the sglattn package.

The stack is the no-op plugin (tests/host/fakes/noop.c: every op returns at
once), so what a call costs is the package's Python and ctypes: describing
q, k, v and out (the cached path: same shapes as the last call) and the
foreign call.  Measured with the thread's CPU time (time.thread_time), the
best of several repetitions, so time the process spends descheduled on a
shared machine does not count.

    python3 bench/python/overhead.py --plugins build/tests/python/plugins [--device cuda] [--json out.json]

Rows:
  ctypes_call          sgl_attn_forward_decode through ctypes with prepared
                       arguments: the floor any ctypes binding pays
  backend_forward      Backend.forward_decode(layer, q, k, v, out): four torch
                       tensors the caller owns
  adapter_forward      sglattn.sglang's forward_decode as sglang calls it
                       (through the stub sglang), output allocation included
  adapter_forward_alloc_free   the same minus a torch.empty of the output
                       measured alone (what the adapter adds beyond the
                       allocation every sglang backend makes)
  adapter_metadata     init_forward_metadata of a decode batch (per batch, not
                       per layer)
  tensor_check_one     the fast path's check of one tensor (backend_forward
                       makes four), and read_* each torch read inside it
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(REPO, "python"), os.path.join(REPO, "tests", "python")]


def best_ns(fn, n: int, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time()
        fn(n)
        best = min(best, (time.thread_time() - t0) / n * 1e9)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plugins", default=os.path.join(REPO, "build", "tests", "python", "plugins"),
                    help="directory holding noop.so")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--bs", type=int, default=64, help="decode batch size (tokens per call)")
    ap.add_argument("--json")
    a = ap.parse_args()

    import torch
    import sglattn
    import sglattn.sglang as ss
    from sgl_driver import Engine

    dev, dt = a.device, torch.float16  # what noop claims (f32, f16)
    host = sglattn.Host(a.plugins)
    hq, hkv, d, bs = 32, 8, 128, a.bs
    model = sglattn.Model.plain(hq, hkv, d, num_layers=1, dtype="f16")
    be = host.create_stack(["noop"], model, max_reqs=bs, max_tokens=bs, max_context=64)
    pool = torch.zeros(bs * 64 + 1, hkv, d, dtype=dt, device=dev)
    r2t = torch.zeros(bs, 64, dtype=torch.int32, device=dev)
    lens = torch.ones(bs, dtype=torch.int32, device=dev)
    batch = sglattn.Batch("decode", r2t, torch.arange(bs, dtype=torch.int32, device=dev), lens,
                          torch.arange(1, bs + 1, device=dev), seq_lens_cpu=[1] * bs)
    be.init_forward_metadata(batch)
    layer = be.layer(0, pool, pool)
    q = torch.randn(bs, hq * d, dtype=dt, device=dev)
    k = torch.randn(bs, hkv, d, dtype=dt, device=dev)
    v = torch.randn(bs, hkv, d, dtype=dt, device=dev)
    out = torch.empty_like(q)

    lib = sglattn._lib.load()
    call, ptr, ref = lib.fwd_decode, be._ptr, layer.args_ref
    fwd = be.forward_decode

    def ctypes_call(n: int) -> None:
        for _ in range(n):
            call(ptr, ref)

    def backend_forward(n: int) -> None:
        for _ in range(n):
            fwd(layer, q, k, v, out)

    fwd(layer, q, k, v, out)
    rows = {"ctypes_call": best_ns(ctypes_call, a.n, a.reps), "backend_forward": best_ns(backend_forward, a.n, a.reps)}

    # Where backend_forward's time goes: the fast path's check of one tensor
    # (what it does for each of q, k, v and out), and each torch read in it,
    # net of an empty loop's cost.
    T = torch.Tensor
    s0, d0, g0 = q.shape, q.dtype, q.get_device()

    def empty(n: int) -> None:
        for _ in range(n):
            pass

    def one_check(n: int) -> None:
        for _ in range(n):
            if type(q) is T and q.shape == s0 and q.dtype is d0 and q.get_device() == g0 and q.is_contiguous():
                q.data_ptr()

    reads = {
        "read_type": lambda n: [type(q) is T for _ in range(n)],
        "read_shape_eq": lambda n: [q.shape == s0 for _ in range(n)],
        "read_dtype": lambda n: [q.dtype is d0 for _ in range(n)],
        "read_get_device": lambda n: [q.get_device() for _ in range(n)],
        "read_is_contiguous": lambda n: [q.is_contiguous() for _ in range(n)],
        "read_data_ptr": lambda n: [q.data_ptr() for _ in range(n)],
        "read_nothing": lambda n: [None for _ in range(n)],
    }
    base = best_ns(empty, a.n, a.reps)
    rows["tensor_check_one"] = best_ns(one_check, a.n, a.reps) - base
    nothing = best_ns(reads.pop("read_nothing"), a.n, a.reps)
    for name, f_ in reads.items():
        rows[name] = best_ns(f_, a.n, a.reps) - nothing

    # the sglang adapter over the same no-op stack, driven like sglang
    eng = Engine(lambda r: ss.SglAttnBackend(r, backend="noop", host_=host), layers=1, hq=hq, hkv=hkv, d=d,
                 dtype=dt, device=dev, max_reqs=bs + 1, max_context=64, pool_tokens=bs * 64)
    rids = [eng.add() for _ in range(bs)]
    eng.step(eng.extend_batch([(r, 1) for r in rids]))
    fb = eng.decode_batch(rids)
    sab = eng.backend
    sab.init_forward_metadata(fb)
    lay = eng.layers[0]
    kk, vv = k.view(bs, hkv, d), v.view(bs, hkv, d)
    sab.forward_decode(q, kk, vv, lay, fb)

    def adapter_forward(n: int) -> None:
        f = sab.forward_decode
        for _ in range(n):
            f(q, kk, vv, lay, fb)

    tdev = torch.device(dev)

    def alloc(n: int) -> None:  # the allocation the adapter makes, as it makes it
        for _ in range(n):
            torch.empty((bs, hq * d), dtype=dt, device=tdev)

    def metadata(n: int) -> None:
        for _ in range(n):
            sab.init_forward_metadata(fb)

    rows["adapter_forward"] = best_ns(adapter_forward, a.n, a.reps)
    rows["output_alloc"] = best_ns(alloc, a.n, a.reps)
    rows["adapter_forward_alloc_free"] = rows["adapter_forward"] - rows["output_alloc"]
    rows["adapter_metadata"] = best_ns(metadata, max(a.n // 20, 100), a.reps)

    res = {
        "what": "Python cost per layer forward through sglattn (no-op plugin), ns, best of reps, thread CPU time",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": os.environ.get("SGL_ATTN_COMMIT", ""), "device": dev, "bs": bs,
        "python": platform.python_version(), "torch": torch.__version__, "cpu": platform.processor() or platform.machine(),
        "load_average": os.getloadavg(), "ns": {k_: round(v_, 1) for k_, v_ in rows.items()},
        "target_ns": 2000,
    }
    if dev.startswith("cuda"):
        res["gpu"] = torch.cuda.get_device_name(0)
    for k_, v_ in rows.items():
        print(f"{k_:28s} {v_:8.0f} ns")
    print(f"backend_forward is {rows['backend_forward'] / 2000:.2f} of the 2 us target; "
          f"load average {os.getloadavg()[0]:.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
