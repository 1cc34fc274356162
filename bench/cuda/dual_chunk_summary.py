"""Dual chunk attention against plain attention (bench/gpu/dual_chunk.sh):
reads the attnctl bench --json files in OUT_DIR (bench_dc_decode.json,
bench_dc_decode_mma.json; bench_dc_prefill_<len>_<variant>.json, one case
each: plain (the defaults), mma (plain, kernel=mma), model and three (dual
chunk, with the defaults' conf), three_mma (dual chunk, kernel=mma)) and
prints per shape the plain medians (the defaults, and kernel=mma), the dual
chunk medians (the model's sizes; chunk 32768 / local 4096, all three parts)
and dual chunk / plain.  Issue 24's bar: <= 1.30x against the defaults; the
ratio to kernel=mma is dual chunk against the plain mma.sync kernels.  Then,
per prefill length, dual chunk with all three parts on the defaults' extend
(the wgmma DCA kernel on SM 9.0) against kernel=mma's (the mma DCA kernel).
Exit 1 when a shape misses the bar or is missing.
usage: dual_chunk_summary.py OUT_DIR"""
import glob, json, os, sys

# DC_LENS: the lengths dual_chunk.sh timed when it was given other ones
PREFILL_LENS = tuple(int(x) for x in os.environ.get("DC_LENS", "16384 32768 65536 131072").split())


def load(paths):
    rows = {}
    for path in paths:
        try:
            with open(path) as f:
                rows.update({c.get("case", ""): c for c in json.load(f).get("cases", [])})
        except Exception:
            pass
    return rows


def us(rows, case):
    return rows.get(case, {}).get("median_us")


def main(out):
    s = "hq=28,hkv=4,d=128,dtype=bf16,page=16"
    parts = {"model": "chunk=262144,local=8192,omp=262144", "3 parts": "chunk=32768,local=4096,omp=262144"}
    j = lambda name: os.path.join(out, name)
    auto = {"decode": load([j("bench_dc_decode.json")]),
            "prefill": load(sorted(glob.glob(j("bench_dc_prefill_*_plain.json")) +
                                   glob.glob(j("bench_dc_prefill_*_model.json")) +
                                   glob.glob(j("bench_dc_prefill_*_three.json"))))}
    mma = {"decode": load([j("bench_dc_decode_mma.json")]),
           "prefill": load(sorted(p for p in glob.glob(j("bench_dc_prefill_*_mma.json")) if "_three_mma" not in p))}
    shapes = [("decode", f"decode:b={b},l=262144,{s}") for b in (1, 8)]
    shapes += [("prefill", f"extend:b=1,l={n},q={n},{s}") for n in PREFILL_LENS]
    bad = 0
    print(f"{'shape':<40} {'plain us':>10} {'mma us':>10} | {'sizes':<8} {'dual us':>10} {'/plain':>7} {'/mma':>6}")
    for kind, case in shapes:
        p, pm = us(auto[kind], case), us(mma[kind], case)
        for name, extra in parts.items():
            d = us(auto[kind], f"{case},{extra}")
            r = d / p if d and p else None
            rm = d / pm if d and pm else None
            ok = r is not None and r <= 1.30
            bad += not ok
            label = case.split(",hq=")[0]
            print(f"{label:<40} {p or 0:10.1f} {pm or 0:10.1f} | {name:<8} {d or 0:10.1f} "
                  f"{(f'{r:.3f}x' if r else '-'):>7} {(f'{rm:.2f}x' if rm else '-'):>6}  {'ok' if ok else 'MISS'}")
    dmma = load(sorted(glob.glob(j("bench_dc_prefill_*_three_mma.json"))))
    print(f"\n{'prefill, three parts':<40} {'dual us':>10} {'dual mma':>10} {'/mma':>7}")
    for n in PREFILL_LENS:
        case = f"extend:b=1,l={n},q={n},{s},{parts['3 parts']}"
        d, dm = us(auto["prefill"], case), us(dmma, case)
        print(f"{case.split(',hq=')[0]:<40} {d or 0:10.1f} {dm or 0:10.1f} {(f'{d / dm:.3f}x' if d and dm else '-'):>7}")
    print(f"shapes over 1.30x against the defaults (or missing): {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
