"""Debug of hybrid_vgraph on the GPU (not shipped): every comparison's max diff."""
import os, sys, json, traceback
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for p in (os.path.join(REPO, "tests", "python"), os.path.join(REPO, "python")):
    sys.path.insert(0, p)
import torch
import sglattn.sglang as ss
ss.register()
import sgl_hybrid as sh

LOG = []
def close(a, b, tol):
    d = (a.double() - b.double()).abs()
    m = d.max().item() if d.numel() else 0.0
    ref = b.double().abs().max().item() if b.numel() else 0.0
    ok = m <= tol * max(1.0, ref) if tol else torch.equal(a, b)
    rec = {"max": m, "ref": ref, "ok": bool(ok), "shape": list(a.shape)}
    if not ok and d.dim() >= 1 and d.numel():
        flat = d.reshape(d.shape[0], -1).max(dim=1).values
        rec["bad_rows"] = [int(i) for i in torch.nonzero(flat > tol * max(1.0, ref)).flatten()[:40]]
        rec["nan_got"] = bool(torch.isnan(a.double()).any())
    LOG.append(rec)
    return True
sh._close = close

def run(label, fn):
    LOG.clear()
    try:
        fn()
        err = None
    except Exception as e:
        err = f"{type(e).__name__}: {e}"[:400] + traceback.format_exc()[-800:]
    bad = [r for r in LOG if not r["ok"]]
    print(f"== {label}: {len(LOG)} comparisons, {len(bad)} bad, error={err}")
    for i, r in enumerate(LOG):
        if not r["ok"]:
            print("   bad", i, json.dumps(r))
    sys.stdout.flush()

dt, name, tol = torch.bfloat16, "sglattn_cuda_attn", 2e-2
orig_init = sh.HybridGraphRunner.__init__
for cg in (True, False):
    def init(self, *a, _cg=cg, **k):
        k["cuda_graph"] = _cg
        orig_init(self, *a, **k)
    sh.HybridGraphRunner.__init__ = init
    run(f"verify cuda_graph={cg}", lambda: sh.verify_graphs_against_eager("cuda", dt, name, tol=tol))
    run(f"verify legacy cuda_graph={cg}", lambda: sh.verify_graphs_against_eager("cuda", dt, name, tol=tol, legacy=True))
    run(f"decode cuda_graph={cg}", lambda: sh.decode_graphs_against_eager("cuda", dt, name, tol=tol))
sh.HybridGraphRunner.__init__ = orig_init
# eager vs eager twins: same seeds, both eager, same steps (is eager deterministic?)
def twins():
    kw = dict(seed=11, draft_tokens=3, device="cuda", dtype=dt, backend=name)
    a = sh.HybridEngine(graphs=False, **kw); b = sh.HybridEngine(graphs=True, **kw)
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    g = torch.Generator().manual_seed(5)
    for e in (a, b):
        for r, s in {"a": 9, "b": 4, "c": 7, "d": 2}.items():
            e.add(r, s)
    pre = [("a", 9), ("b", 70), ("c", 5), ("d", 33)]
    x = a.inputs(sum(n for _, n in pre), g)
    for e in (a, b):
        e.run(e.batch(pre, ForwardMode.EXTEND), x)
    items = [(r, 3) for r in "abcd"]
    x = a.inputs(12, g)
    oa = a.run(a.batch(items, ForwardMode.TARGET_VERIFY), x)
    ob = b.run(b.batch(items, ForwardMode.TARGET_VERIFY), x)
    for o, w in zip(ob, oa):
        close(o[0] if o.dim() == 4 else o, w[0] if w.dim() == 4 else w, tol)
    print("   stack a", a.full.selection.label, "b", b.full.selection.label)
run("eager twins graphs=False vs graphs=True", twins)
