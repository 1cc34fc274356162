"""Ragged prefill against the d128 paged prefill (bench/gpu/ragged_lse.sh):
reads bench_ragged.json (attnctl bench --json: ragged qk 192 / v 128 and
qk 128 / v 128, the paged d128 extend with and without its save-KV launch)
and torch_ragged.json in OUT_DIR; prints per shape the TFLOP/s of each, the
ratio ragged 192/128 / paged d128 (issue 20's bar: >= 0.90 at every shape)
and torch's TFLOP/s on the same shapes; exit 1 when a shape misses the bar.
usage: ragged_summary.py OUT_DIR"""
import os, sys

from bench_json import load  # this folder
from shapes import case_keys as parse

SHAPES = [(4, 4096), (2, 8192), (1, 16384)]


def main(out):
    ours = {}
    for c in (load(os.path.join(out, "bench_ragged.json")) or {}).get("cases", []):
        mode, d = parse(c.get("case", ""))
        if mode == "ragged":
            key = ("ragged%s" % d.get("d", "192"), int(d["b"]), int(d["lq"]))
        else:
            key = ("paged" + ("_save0" if d.get("save") == "0" else ""), int(d["b"]), int(d["q"]))
        ours[key] = c.get("tflops")
    torch = {(r["dqk"], r["b"], r["s"]): r for r in (load(os.path.join(out, "torch_ragged.json")) or {}).get("prefill", [])}
    print("TFLOP/s (causal, 16 heads, bf16; FLOPs 2 (dqk + dv) per visible pair)")
    print(f"{'B':>2} {'S':>6} | {'rg192':>7} {'rg128':>7} {'paged':>7} {'pg s=0':>7} | {'192/paged':>9} {'192/pg0':>8} |"
          f" {'t192 fl':>7} {'t192 cud':>8} {'t128 fl':>7} {'t128 cud':>8}")
    bad = 0
    for b, s in SHAPES:
        r192, r128 = ours.get(("ragged192", b, s)), ours.get(("ragged128", b, s))
        pg, pg0 = ours.get(("paged", b, s)), ours.get(("paged_save0", b, s))
        ratio = r192 / pg0 if r192 and pg0 else None
        ratio_d = r192 / pg if r192 and pg else None
        ok = ratio is not None and ratio >= 0.90
        bad += not ok
        t1, t2 = torch.get((192, b, s), {}), torch.get((128, b, s), {})
        f = lambda x: f"{x:7.1f}" if x else "      -"
        print(f"{b:>2} {s:>6} | {f(r192)} {f(r128)} {f(pg)} {f(pg0)} | "
              f"{(f'{ratio_d:.3f}x' if ratio_d else '-'):>9} {(f'{ratio:.3f}x' if ratio else '-'):>8} | "
              f"{f(t1.get('flash_tflops'))} {f(t1.get('cudnn_tflops')):>8} {f(t2.get('flash_tflops'))} "
              f"{f(t2.get('cudnn_tflops')):>8}  {'ok' if ok else 'MISS'}")
    for r in torch.values():
        errs = {k: v for k, v in r.items() if k.endswith("_error")}
        if errs and r["b"] == SHAPES[0][0]:
            print(f"torch qk {r['dqk']} / v {r['dv']}: {errs}")
    print("bar: ragged qk192/v128 >= 0.90x the paged d128 prefill without its save-KV launch (pg s=0: attention only)")
    print(f"shapes under 0.90x (or missing): {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
