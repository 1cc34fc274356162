"""The tables of issue 23's untimed prefills: ours (attnctl bench --json) beside
PyTorch (prefill_torch.py) from the same device call.

  prefill_summary.py dims OUT_DIR [--small]  bench_dims.json + torch_dims.json (bench/gpu/prefill_dims.sh)
  prefill_summary.py mla OUT_DIR [--small]   bench_mla.json + torch_mla.json (bench/gpu/mla_extend.sh)

Ratios are times: the torch row's time / ours (above 1: ours is faster), so
they do not depend on how either side counts FLOPs.  TFLOP/s: ours in
attnctl's count (2 * heads * visible pairs * (dqk + dv)), which prefill_torch.py
uses for its rows too; an expanded MLA row's TFLOP/s is in its own 192 / 128
dims.  Writes summary_<part>.json beside them; exit 0 (a table, not a gate)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from bench_json import load  # noqa: E402
from shapes import (case_keys, mla_extend, mla_extend_case, prefill_dims, prefill_dims_case,  # noqa: E402
                    prefill_dims_heads)


def ours(out, part):
    """case keys -> attnctl's row (its case text may be normalised: match on the keys)."""
    j = load(os.path.join(out, f"bench_{part}.json")) or {}
    return {tuple(sorted(case_keys(c.get("case", ""))[1].items())): c for c in j.get("cases", [])}


def find(rows, case):
    return rows.get(tuple(sorted(case_keys(case)[1].items())), {})


def cell(x, w=8, p=1):
    return f"{x:{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"


def ratio(t_torch_us, t_ours_us):
    return t_torch_us / t_ours_us if t_torch_us and t_ours_us else None


def torch_notes(tor):
    """Each torch formulation's largest error against float64 over the shapes, and its errors."""
    worst = {}
    for r in tor.values():
        for k, v in r.items():
            if k.endswith("_nmse"):
                worst[k[:-5]] = max(worst.get(k[:-5], 0.0), v)
    if worst:
        print("torch vs float64 (sampled rows, largest nmse): " +
              ", ".join(f"{k} {v:.1e}" for k, v in sorted(worst.items())))
    for e in sorted({f"{k[:-6]}: {v}" for r in tor.values() for k, v in r.items() if k.endswith("_error")})[:8]:
        print("torch error:", e[:160])


def dims(out, small):
    rows = ours(out, "dims")
    tj = load(os.path.join(out, "torch_dims.json")) or {}
    tor = {(r["d"], r["causal"], r["b"], r["s"]): r for r in tj.get("rows", [])}
    print(f"anchors: torch SDPA flash / cuDNN, {tj.get('gpu', '?')}, torch {tj.get('torch', '?')}, "
          f"{tj.get('date', '?')} (contiguous, no save-KV; ours include the save-KV launch)" if tor else
          "anchors: none (torch_dims.json missing)")
    print("prefill TFLOP/s: 2048 / d heads, b x s = 16k tokens, bf16, page 16; x = torch time / ours")
    print(f"{'d':>4} {'mask':>7} {'S':>6} {'ours':>8} {'flash':>8} {'cuDNN':>8} {'x flash':>8} {'x cuDNN':>8}")
    summary = []
    for d, causal, b, s in prefill_dims(small):
        o = find(rows, prefill_dims_case(b, s, d, causal, small))
        t = tor.get((d, causal, b, s), {})
        r = {"d": d, "causal": causal, "b": b, "s": s, "heads": prefill_dims_heads(d, small),
             "ours_us": o.get("median_us"), "ours_tflops": o.get("tflops"),
             "flash_us": t.get("flash_us"), "cudnn_us": t.get("cudnn_us"),
             "x_flash": ratio(t.get("flash_us"), o.get("median_us")),
             "x_cudnn": ratio(t.get("cudnn_us"), o.get("median_us"))}
        summary.append(r)
        print(f"{d:>4} {'causal' if causal else 'full':>7} {s:>6} {cell(r['ours_tflops'])} "
              f"{cell(t.get('flash_tflops'))} {cell(t.get('cudnn_tflops'))} {cell(r['x_flash'], 8, 2)} {cell(r['x_cudnn'], 8, 2)}")
    torch_notes(tor)
    return summary


def mla(out, small):
    rows = ours(out, "mla")
    tj = load(os.path.join(out, "torch_mla.json")) or {}
    tor = {(r["hq"], r["b"], r["l"], r["q"]): r for r in tj.get("rows", [])}
    print(f"anchors: torch {tj.get('torch', '?')}, {tj.get('gpu', '?')}, {tj.get('date', '?')}" if tor else
          "anchors: none (torch_mla.json missing)")
    print("absorbed MLA extend (576 / 512, page 64, bf16, save included): us and ours' TFLOP/s (FlashMLA's count);")
    print("torch: best SDPA over the absorbed shapes, the matmul path, cuDNN over the expanded 192 / 128 heads")
    print("(+proj: with the up-projection); x = torch time / ours")
    print(f"{'hq':>4} {'b':>3} {'l':>6} {'q':>6} {'ours us':>9} {'TFLOP/s':>8} {'sdpa us':>9} {'matmul':>9} "
          f"{'expand':>9} {'+proj':>9} {'x sdpa':>7} {'x matm':>7} {'x expd':>7} {'x +proj':>7}")
    summary = []
    for hq, b, l, n in mla_extend(small):
        o = find(rows, mla_extend_case(hq, b, l, n))
        t = tor.get((hq, b, l, n), {})
        sd = [(t[k], k[5:-3]) for k in t if k.startswith("sdpa_") and k.endswith("_us")]
        best = min(sd) if sd else (None, None)
        ou = o.get("median_us")
        r = {"hq": hq, "b": b, "l": l, "q": n, "ours_us": ou, "ours_tflops": o.get("tflops"),
             "sdpa_best_us": best[0], "sdpa_best": best[1], "matmul_us": t.get("matmul_us"),
             "expanded_cudnn_us": t.get("expanded_cudnn_us"), "expanded_cudnn_proj_us": t.get("expanded_cudnn_proj_us")}
        r.update({"x_sdpa": ratio(best[0], ou), "x_matmul": ratio(r["matmul_us"], ou),
                  "x_expanded": ratio(r["expanded_cudnn_us"], ou),
                  "x_expanded_proj": ratio(r["expanded_cudnn_proj_us"], ou)})
        summary.append(r)
        print(f"{hq:>4} {b:>3} {l:>6} {n:>6} {cell(ou, 9)} {cell(r['ours_tflops'])} {cell(best[0], 9)} "
              f"{cell(r['matmul_us'], 9)} {cell(r['expanded_cudnn_us'], 9)} {cell(r['expanded_cudnn_proj_us'], 9)} "
              f"{cell(r['x_sdpa'], 7, 2)} {cell(r['x_matmul'], 7, 2)} {cell(r['x_expanded'], 7, 2)} "
              f"{cell(r['x_expanded_proj'], 7, 2)}")
    torch_notes(tor)
    return summary


def main(argv):
    if len(argv) < 3 or argv[1] not in ("dims", "mla"):
        print(__doc__)
        return 2
    part, out, small = argv[1], argv[2], "--small" in argv[3:]
    summary = (dims if part == "dims" else mla)(out, small)
    with open(os.path.join(out, f"summary_{part}.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
