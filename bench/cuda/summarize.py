"""The closing table: ours (attnctl bench --json) against torch in the same run.

usage: summarize.py OUT_DIR  (reads bench_<variant>*.json and torch.json there)
Decode ratios: ours paged TB/s over cuDNN / flash contiguous TB/s (targets:
>= 0.9x cuDNN at B >= 64, L >= 4k; >= 1.5x flash).  Prefill: ours TFLOP/s over
flash (>= 1.0x) and cuDNN (>= 0.9x at s >= 4k).  Page 1 over page 16 time."""
import glob, os, re, sys

sys.path.insert(0, os.path.dirname(__file__))
from bench_json import load  # noqa: E402
from shapes import DECODE, DECODE_PAGE1, PREFILL, decode_case, prefill_case  # noqa: E402


def ours_by_case(out):
    """variant -> case -> result (the harness's normalised case text may differ: match by keys)."""
    res = {}
    for p in sorted(glob.glob(os.path.join(out, "bench_*.json"))):
        m = re.match(r"bench_([a-z0-9]+)", os.path.basename(p))
        j = load(p)
        if not j or not m:
            continue
        for c in j.get("cases", []):
            res.setdefault(m.group(1), {})[key(c.get("case", ""))] = c
    return res


def key(case):
    mode, _, kv = case.partition(":")
    d = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
    return (mode, d.get("b"), d.get("l"), d.get("page", "16"))


def main(out):
    torch = load(os.path.join(out, "torch.json")) or {"decode": [], "prefill": []}
    ours = ours_by_case(out)
    tdec = {(r["b"], r["l"]): r for r in torch.get("decode", [])}
    tpre = {(r["b"], r["s"]): r for r in torch.get("prefill", [])}
    print(f"\n== decode GQA 32/8 d128 bf16 (TB/s; ours paged page 16, torch contiguous)  GPU {torch.get('gpu')}")
    print(f"{'B':>4} {'L':>6} | " + " ".join(f"{v:>7}" for v in ours) + " | flash  cudnn | best/cudnn best/flash")
    for b, l in DECODE:
        t = tdec.get((b, l), {})
        vals = [ours[v].get(key(decode_case(b, l)), {}).get("gbps") for v in ours]
        tb = [x / 1e3 if x else None for x in vals]
        best = max([x for x in tb if x] or [0])
        fl, cu = t.get("flash_TBps"), t.get("cudnn_TBps")
        r1 = f"{best / cu:.2f}x" if best and cu else "-"
        r2 = f"{best / fl:.2f}x" if best and fl else "-"
        print(f"{b:>4} {l:>6} | " + " ".join(f"{x:7.2f}" if x else "      -" for x in tb) +
              f" | {fl or 0:5.2f} {cu or 0:6.2f} | {r1:>9} {r2:>10}")
    print("\n== page 1 vs page 16 (median us; target: page 1 <= 1.10x)")
    for v in ours:
        for b, l in DECODE_PAGE1:
            a = ours[v].get(key(decode_case(b, l, 1)), {}).get("median_us")
            c = ours[v].get(key(decode_case(b, l, 16)), {}).get("median_us")
            if a and c:
                print(f"{v:>7} b={b} l={l}: page1 {a:.1f} us, page16 {c:.1f} us, ratio {a / c:.3f}")
    print("\n== prefill causal 16 heads d128 bf16 (TFLOP/s)")
    print(f"{'B':>3} {'S':>6} | " + " ".join(f"{v:>7}" for v in ours) + " | flash  cudnn | best/flash best/cudnn")
    for b, s in PREFILL:
        t = tpre.get((b, s), {})
        vals = [ours[v].get(key(prefill_case(b, s)), {}).get("tflops") for v in ours]
        best = max([x for x in vals if x] or [0])
        fl, cu = t.get("flash_TFLOPs"), t.get("cudnn_TFLOPs")
        r1 = f"{best / fl:.2f}x" if best and fl else "-"
        r2 = f"{best / cu:.2f}x" if best and cu else "-"
        print(f"{b:>3} {s:>6} | " + " ".join(f"{x:7.1f}" if x else "      -" for x in vals) +
              f" | {fl or 0:5.1f} {cu or 0:6.1f} | {r1:>10} {r2:>10}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
