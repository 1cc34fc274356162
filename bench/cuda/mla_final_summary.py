# bench/cuda/mla_final_summary.py - the tables bench/gpu/final_mla.sh prints
# last: correctness, the variants beside the default (mla_gpu_bench, with the
# kernel each plan ran and a same-run check of that timer against attnctl
# bench), and last the ratio table of the defaults on issue 7's shapes against
# the targets, the card and the PyTorch matmul path of the same run.
#   python3 bench/cuda/mla_final_summary.py OUT_DIR [LAST_RECORD_JSON]
# LAST_RECORD_JSON: the bench_default.json of an earlier record run; the ratio
# table then adds "x last" (the earlier time / this one: below 1 is slower).
# Issue 7's counting: bytes = the latent cache read once (B L 576 x 2), FLOPs =
# 2 hq s_q L (576 + 512); the same for every tool here (attnctl's own GB/s also
# counts q, out and the page table, so it is not used).
import json
import math
import os
import re
import sys

MEM_T, MEM_G, CARD_BW = 3.2, 3.8, 4.26  # TB/s: target, goal, measured copy
CMP_T, CMP_G, RATIO_T = 450.0, 540.0, 2.8  # TFLOP/s target, goal; x torch target

out = sys.argv[1] if len(sys.argv) > 1 else "."
last_path = sys.argv[2] if len(sys.argv) > 2 else ""


def path(name):
    return os.path.join(out, name)


def read(name):
    try:
        with open(path(name)) as f:
            return f.read()
    except OSError:
        return ""


def load_json(name):
    text = read(name)
    for tail in ("", "\n]}\n", "]}\n"):  # a tool killed by its timeout leaves the list open
        try:
            return json.loads(text + tail) if text else None
        except ValueError:
            pass
    return None


def key_of(case):
    """(mode, b, l, q, hq) of an attnctl, mla_gpu_bench or torch case string."""
    m = re.match(r"(\w+):(.*)", case or "")
    if not m:
        return None
    kv = dict(p.split("=", 1) for p in m.group(2).split(",") if "=" in p)
    try:
        return (m.group(1), int(kv["b"]), int(kv["l"]), int(kv.get("q", 1)), int(kv["hq"]))
    except (KeyError, ValueError):
        return None


def name(k):
    return f"{k[0]} b{k[1]} l{k[2] // 1024}k hq{k[4]}" + (f"x{k[3]}" if k[3] > 1 else "")


def counts(k):
    mode, b, l, q, hq = k
    return b * l * 576 * 2, 2.0 * b * hq * q * l * (576 + 512)


def memory_bound(k):
    return k[4] * k[3] < 64


# ---------------------------------------------------------------- correctness
print("== correctness")
err = read("test_variants.err")
fails = sorted(set(re.findall(r"^VARIANT_(?:FAIL|HANG|FAULT) (\S+)", err, re.M)))
passed = set()
for f in sorted(os.listdir(out)) if os.path.isdir(out) else []:
    if re.match(r"test_mla_gpu_\d\.log$", f):
        for line in read(f).splitlines():
            m = re.match(r"\s*(.{36}) (\S+)\s+nmse ", line)
            if m and "FAILED" not in line:
                passed.add(m.group(2))
print("test_mla_gpu (quick) passed:", " ".join(sorted(passed - set(fails))) or "-")
print("test_mla_gpu failed        :", " ".join(fails) or "none")
for line in sorted(set(re.findall(r"^VARIANT_(?:FAIL|HANG|FAULT) .*$", err, re.M)))[:10]:
    print("   ", line[:160])
g = read("test_mla_gpu_graphs.log")
if g:
    print("graph replay:", "; ".join(l.strip() for l in g.splitlines() if "graph replay" in l or "FAILED" in l)[:300])
for f in ("check_auto.log", "check_mma.log"):
    t = read(f).strip().splitlines()
    if t:
        print(f"{f[:-4]:13s}:", t[-1][:150])

# ---------------------------------------------------------------- default (attnctl bench)
default = {}
dj = load_json("bench_default.json")
dlog = read("bench_default.log")
rows = [c for c in (dj or {}).get("cases", []) if "median_us" in c]
if not rows:  # no JSON (timeout): the table lines of the log
    for m in re.finditer(r"^  ((?:decode|verify)\S+)\s+([\d.]+)\s", dlog, re.M):
        rows.append({"case": m.group(1), "median_us": float(m.group(2))})
# a case's create / plan lines come before its table line (a case whose create
# failed has none): the last plan line seen belongs to the next table line
case_kernel, pending = {}, None
for line in dlog.splitlines():
    m = re.search(r"cuda_mla: plan: .*?runs (\w+) \(([^)]*)\)", line)
    if m:
        pending = (m.group(1), m.group(2))
        continue
    m = re.match(r"  ((?:decode|verify)\S+)\s", line)
    if m:
        case_kernel[m.group(1)] = pending or ("?", "")
        pending = None
for c in rows:
    k = key_of(c["case"])
    if k:
        default[k] = dict(us=c["median_us"], kernel=case_kernel.get(c["case"], ("?", ""))[0],
                          detail=case_kernel.get(c["case"], ("?", ""))[1])

last = {}
if last_path:
    try:
        with open(last_path) as f:
            for c in json.load(f).get("cases", []):
                k = key_of(c.get("case"))
                if k and "median_us" in c:
                    last[k] = c["median_us"]
    except (OSError, ValueError) as e:
        print(f"last record {last_path}: {e}")

torch = {}
for c in (load_json("mla_torch.json") or {}).get("cases", []):
    k = key_of(c.get("case"))
    if k and "median_us" in c:
        torch[k] = c["median_us"]

# ---------------------------------------------------------------- variants (mla_gpu_bench)
var = {}
bj = load_json("mla_bench.json")
berr = read("mla_bench.err")
# "running <case> <variant>" then that backend's create / plan lines
vk, cur = {}, None
for line in berr.splitlines():
    m = re.match(r"running (\S+) (\S+)$", line)
    if m:
        cur = (key_of(m.group(1)), m.group(2))
        continue
    m = re.search(r"cuda_mla: plan: .*?runs (\w+) \(([^)]*)\)", line)
    if m and cur:
        vk[cur] = (m.group(1), m.group(2))
for c in (bj or {}).get("cases", []):
    k = key_of(c["case"])
    if k:
        var.setdefault(k, {})[c["kernel"]] = dict(us=c["median_us"], kernel=vk.get((k, c["kernel"]), ("?", ""))[0])

if var:
    print()
    print("== variants beside the default (mla_gpu_bench; x default = the same tool's auto row, same staged shape)")
    print(f"{'shape':22s} {'variant':16s} {'ran':7s} {'us':>9s} {'TB/s':>6s} {'TF/s':>6s} {'x default':>9s}")
    for k in sorted(var, key=lambda k: (not memory_bound(k), k)):
        vs = var[k]
        base = vs.get("auto", {}).get("us")
        by, fl = counts(k)
        for v, r in sorted(vs.items(), key=lambda kv: kv[1]["us"]):
            x = f"{base / r['us']:9.3f}" if base else f"{'-':>9s}"
            print(f"{name(k):22s} {v:16s} {r['kernel']:7s} {r['us']:9.1f} {by / r['us'] / 1e6:6.2f} "
                  f"{fl / r['us'] / 1e6:6.0f} {x}")
    both = [(k, var[k]["auto"]["us"], default[k]["us"]) for k in var if "auto" in var[k] and k in default]
    if both:
        print("timer check, same run, same kernel (default): mla_gpu_bench / attnctl bench time = " +
              ", ".join(f"{name(k)} {a / d:.3f}" for k, a, d in both))

# ---------------------------------------------------------------- the ratio table (last)
print()
print("== issue 7, defaults as shipped (attnctl bench, min time 0.2 s); bytes = latent cache once, "
      f"FLOPs = 2 hq s_q L 1088; card copy {CARD_BW} TB/s")
print(f"{'shape':22s} {'kernel':7s} {'us':>8s} {'TB/s':>5s} {'/3.2':>5s} {'/3.8':>5s} {'/card':>5s} "
      f"{'TF/s':>5s} {'/450':>5s} {'/540':>5s} {'torch':>5s} {'x torch':>7s} {'/2.8':>5s} {'x last':>6s}  "
      "best variant (mla_gpu_bench)")
gm = {"mem": [], "cmp": [], "ratio": [], "last": []}
for k in sorted(set(default) | set(torch), key=lambda k: (not memory_bound(k), k[1], k[2])):
    by, fl = counts(k)
    d = default.get(k)
    t = torch.get(k)
    ttf = fl / t / 1e6 if t else 0
    best = ""
    if k in var and var[k]:
        bv, br = min(var[k].items(), key=lambda kv: kv[1]["us"])
        if bv != "auto" and "auto" in var[k]:
            unit = by / br["us"] / 1e6 if memory_bound(k) else fl / br["us"] / 1e6
            best = f"{bv} ({br['kernel']}) {unit:.2f} {'TB/s' if memory_bound(k) else 'TF/s'}, " \
                   f"{var[k]['auto']['us'] / br['us']:.2f}x default"
        elif bv == "auto":
            best = "the default"
    if not d:
        print(f"{name(k):22s} {'-':7s} {'(no default timing)':>8s}")
        continue
    tbs, tfs = by / d["us"] / 1e6, fl / d["us"] / 1e6
    xt = tfs / ttf if ttf else 0
    xl = last[k] / d["us"] if k in last else 0
    if xl:
        gm["last"].append(xl)
    mark = lambda v, t: f"{v / t:5.2f}"
    print(f"{name(k):22s} {d['kernel']:7s} {d['us']:8.1f} {tbs:5.2f} {mark(tbs, MEM_T)} {mark(tbs, MEM_G)} "
          f"{mark(tbs, CARD_BW)} {tfs:5.0f} {mark(tfs, CMP_T)} {mark(tfs, CMP_G)} "
          f"{ttf:5.0f} {xt:7.2f} {xt / RATIO_T if xt else 0:5.2f} {xl if xl else float('nan'):6.3f}  {best}")
    (gm["mem"] if memory_bound(k) else gm["cmp"]).append(tbs if memory_bound(k) else tfs)
    if not memory_bound(k) and xt:
        gm["ratio"].append(xt)


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


print(f"memory-bound (16 heads): geomean {geo(gm['mem']):.2f} TB/s = {geo(gm['mem']) / MEM_T:.2f} of the 3.2 target, "
      f"{geo(gm['mem']) / MEM_G:.2f} of the 3.8 goal, {geo(gm['mem']) / CARD_BW:.2f} of the card's copy")
print(f"compute-bound (128 rows): geomean {geo(gm['cmp']):.0f} TFLOP/s = {geo(gm['cmp']) / CMP_T:.2f} of 450, "
      f"{geo(gm['cmp']) / CMP_G:.2f} of 540; x torch {geo(gm['ratio']):.2f} = {geo(gm['ratio']) / RATIO_T:.2f} of 2.8")
if gm["last"]:
    print(f"against the last record ({last_path}): x last {min(gm['last']):.3f} - {max(gm['last']):.3f}, "
          f"geomean {geo(gm['last']):.3f} (earlier time / this one; below 0.98 is more than 2% slower)")
