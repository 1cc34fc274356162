"""fp8 KV decode against bf16 (bench/gpu/fp8_decode.sh): reads bench_fp8.json
(attnctl bench --json) and torch_fp8.json in OUT_DIR; prints per shape the
bf16 and fp8 medians, fp8 / bf16 (issue 20's bar: <= 0.60x at GQA 32/8, d128,
B >= 64, L >= 4k) and torch's figures; exit 1 when a shape misses the bar.
usage: fp8_summary.py OUT_DIR"""
import os, sys

from bench_json import load  # this folder


def key(case):
    mode, _, kv = case.partition(":")
    d = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
    return (int(d.get("b", 0)), int(d.get("l", 0)), d.get("kvdtype", d.get("dtype", "bf16")))


def main(out):
    ours = {key(c.get("case", "")): c for c in (load(os.path.join(out, "bench_fp8.json")) or {}).get("cases", [])}
    torch = {(r["b"], r["l"]): r for r in (load(os.path.join(out, "torch_fp8.json")) or {}).get("decode", [])}
    print(f"{'B':>4} {'L':>6} | {'bf16 us':>8} {'fp8 us':>8} {'fp8/bf16':>8} | {'torch bf16':>10} {'deq+sdpa':>9}")
    bad = 0
    for b in (64, 128):
        for l in (4096, 8192, 16384):
            a = ours.get((b, l, "bf16"), {}).get("median_us")
            f = ours.get((b, l, "fp8_e4m3"), {}).get("median_us")
            t = torch.get((b, l), {})
            r = f / a if a and f else None
            ok = r is not None and r <= 0.60
            bad += not ok
            print(f"{b:>4} {l:>6} | {a or 0:8.1f} {f or 0:8.1f} {(f'{r:.3f}x' if r else '-'):>8} | "
                  f"{t.get('sdpa_bf16_us', 0):10.1f} {t.get('deq_sdpa_us', 0):9.1f}  {'ok' if ok else 'MISS'}")
    print(f"shapes over 0.60x (or missing): {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
