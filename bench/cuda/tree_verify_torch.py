"""PyTorch beside cuda_attn's tree verify (bench/gpu/tree_verify.sh).

Shape: B 64, L 4096 keys per request (the 64 draft tokens included), GQA 32/8,
d128, bf16, contiguous KV (torch has no paged kernel).  Timed:
  decode_us   SDPA of one query token per request (cuDNN, else flash);
  tree_us     SDPA of the 64 draft tokens with a boolean mask [B, 1, 64, L] of
              the harness's tree=1 kind (each draft token sees its ancestors in
              a random tree, itself, and its prefix with about one key in ten
              hidden; request 1 its whole prefix), on the backend that takes a
              mask (cuDNN, else memory-efficient; K/V expanded to 32 heads
              where the backend needs it, outside the timing);
  eagle_us    the same with the harness's tree=2 kind, sglang's EAGLE mask: the
              whole prefix visible, a topk-4 draft tree over the 64 columns.
Writes JSON (GPU, date, commit, torch) to argv[1].

`--summary DIR` instead reads DIR/bench_verify.json (attnctl bench) and
DIR/torch_verify.json and prints verify / decode for both (issue 20: tree
verify <= 1.5x decode), for both mask kinds."""
import datetime, json, os, subprocess, sys

B, L, Q, HQ, HK, D = 64, 4096, 64, 32, 8, 128


def ms(fn):
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def eagle_parents(torch, g, q, topk=4):
    """sglang's EAGLE draft tree as parent[] (token 0 the root): step 1 gives
    the root topk children, each later step expands the topk best candidates
    of the step before with topk children each (a child's score its parent's
    plus a random log probability); the q - 1 best candidates overall become
    tokens 1.. in candidate order (a child scores below its parent, so its
    parent is chosen too).  The harness's eagle_tree (full_engine.c) in
    Python, on torch's generator."""
    def logp():
        return float(torch.log(1.0 - torch.rand(1, generator=g)))
    cpar, score = [-1] * topk, [logp() for _ in range(topk)]
    first = 0
    while len(cpar) < q - 1:
        step = range(first, len(cpar))
        beams = sorted(step, key=lambda c: (-score[c], c))[:topk]
        first = len(cpar)
        for b in beams:
            for _ in range(topk):
                cpar.append(b)
                score.append(score[b] + logp())
    chosen = set(sorted(range(len(cpar)), key=lambda c: (-score[c], c))[:q - 1])
    parent, tok = [-1], {}
    for c in range(len(cpar)):
        if c in chosen:
            tok[c] = len(parent)
            parent.append(0 if cpar[c] < 0 else tok[cpar[c]])
    return parent


def tree_mask(torch, dev, kind):
    """kind 1: the harness's tree=1 mask; kind 2: its tree=2 (EAGLE) mask."""
    g = torch.Generator().manual_seed(0)
    m = torch.zeros(B, 1, Q, L, dtype=torch.bool)
    m[:, :, :, : L - Q] = True
    for b in range(B):
        if kind == 2:
            parent = eagle_parents(torch, g, Q)
        else:
            parent = [-1] + [int(torch.randint(-1, j, (1,), generator=g)) for j in range(1, Q)]
            if b != 1:
                m[b, 0, :, : L - Q] = torch.randint(0, 10, (Q, L - Q), generator=g) != 0
        for j in range(Q):
            a = j
            while a >= 0:
                m[b, 0, j, L - Q + a] = True
                a = parent[a]
    return m.to(dev)


def run(out):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dev = "cuda"
    torch.manual_seed(0)
    commit = os.environ.get("SGL_ATTN_COMMIT") or subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"tool": "bench/cuda/tree_verify_torch.py", "gpu": torch.cuda.get_device_name(),
           "torch": torch.__version__, "date": datetime.datetime.utcnow().isoformat() + "Z", "commit": commit,
           "shape": {"b": B, "l": L, "q": Q, "hq": HQ, "hkv": HK, "d": D}}
    k = torch.randn(B, HK, L, D, dtype=torch.bfloat16, device=dev)
    v = torch.randn(B, HK, L, D, dtype=torch.bfloat16, device=dev)
    q1 = torch.randn(B, HQ, 1, D, dtype=torch.bfloat16, device=dev)
    qv = torch.randn(B, HQ, Q, D, dtype=torch.bfloat16, device=dev)
    mask, mask_eagle = tree_mask(torch, dev, 1), tree_mask(torch, dev, 2)
    kx = vx = None

    def timed(name, q, mask_, backends):
        nonlocal kx, vx
        for be in backends:
            for gqa in (True, False):
                if not gqa and kx is None:
                    kx, vx = k.repeat_interleave(HQ // HK, 1), v.repeat_interleave(HQ // HK, 1)
                kk, vv = (k, v) if gqa else (kx, vx)

                def fn():
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask_, enable_gqa=gqa)
                try:
                    fn()
                    torch.cuda.synchronize()
                    res[name + "_us"] = round(ms(fn) * 1e3, 2)
                    res[name + "_backend"] = be.name.lower() + ("" if gqa else " (K/V expanded)")
                    return
                except Exception as e:  # the backend does not take this call: the next one
                    res.setdefault(name + "_refused", []).append(f"{be.name} gqa={gqa}: {str(e)[:120]}")
    timed("decode", q1, None, (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION))
    masked = (SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)
    timed("tree", qv, mask, masked)
    timed("eagle", qv, mask_eagle, masked)
    for name in ("tree", "eagle"):
        if "decode_us" in res and name + "_us" in res:
            res[name + "_over_decode"] = round(res[name + "_us"] / res["decode_us"], 3)
    print("torch verify", {k_: v_ for k_, v_ in res.items() if k_.endswith(("_us", "_backend", "_decode"))}, flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


def summary(d):
    try:
        ours = json.load(open(os.path.join(d, "bench_verify.json")))
    except Exception as e:
        print(f"no attnctl bench result: {e}")
        ours = {"cases": []}
    t = {}
    for c in ours.get("cases", []):
        key = ("tree" if "tree=1" in c["case"] else "eagle" if "tree=2" in c["case"]
               else "chain" if c["case"].startswith("verify") else "decode")
        if c.get("verdict") == "pass" and "median_us" in c:
            t.setdefault(key, []).append(c["median_us"])
        else:
            print(f"  {key}: not timed: {c.get('verdict')} {c.get('message', '')}")
    if "decode" in t:
        dec = min(t["decode"])
        print(f"cuda_attn decode B64 L4k:          {dec:9.1f} us")
        for key in ("chain", "tree", "eagle"):
            if key in t:
                r = t[key][0] / dec
                verdict = ("met" if r <= 1.5 else "MISSED") if key != "chain" else "(no target)"
                print(f"cuda_attn {key:5s} verify q=64:        {t[key][0]:9.1f} us  = {r:.2f}x decode  {verdict}")
    try:
        tj = json.load(open(os.path.join(d, "torch_verify.json")))
        if "decode_us" in tj:
            print(f"torch SDPA decode ({tj.get('decode_backend')}):  {tj['decode_us']:9.1f} us")
        for key in ("tree", "eagle"):
            if key + "_us" in tj:
                print(f"torch SDPA {key:5s} q=64 ({tj.get(key + '_backend')}): {tj[key + '_us']:9.1f} us"
                      f"  = {tj.get(key + '_over_decode', float('nan')):.2f}x its decode")
                if key in t:
                    print(f"cuda_attn {key} verify / torch SDPA {key}: {t[key][0] / tj[key + '_us']:.2f}x"
                          " (below 1: ours faster)")
    except Exception as e:
        print(f"no torch result: {e}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        summary(sys.argv[2])
    else:
        run(sys.argv[1] if len(sys.argv) > 1 else "torch_verify.json")
