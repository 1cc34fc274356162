"""The bench shapes, one place for the bench scripts, the torch side and the summaries."""

DECODE = [(b, l) for b in (16, 64, 256) for l in (1024, 4096, 16384)]  # GQA 32/8, d128, bf16
DECODE_PAGE1 = [(64, 4096), (256, 4096), (16, 16384)]                   # page 1 vs 16
PREFILL = [(16384 // s, s) for s in (1024, 2048, 4096, 8192, 16384)]    # causal, 16 heads, d128


def decode_case(b, l, page=16):
    return f"decode:b={b},l={l},hq=32,hkv=8,d=128,dtype=bf16,page={page}"


def prefill_case(b, s, page=16):
    return f"extend:b={b},l={s},q={s},hq=16,hkv=16,d=128,dtype=bf16,page={page}"


# Issue 23's prefills final_prefill does not time (bench/gpu/prefill_dims.sh): head dims 64 / 128 /
# 256 at 2048 / d heads (FA3's benchmark grid), causal and not (attn=1: every new token sees all of
# its request's keys), b x s = 16k tokens, bf16, page 16.  small: a dry run's sizes.
def prefill_dims(small=False):
    lens = (64,) if small else (1024, 4096, 16384)
    tokens = 64 if small else 16384
    return [(d, causal, tokens // s, s) for d in (64, 128, 256) for causal in (1, 0) for s in lens]


def prefill_dims_heads(d, small=False):
    return 2048 // d // (8 if small else 1)


def prefill_dims_case(b, s, d, causal, small=False, page=16):
    h = prefill_dims_heads(d, small)
    return f"extend:b={b},l={s},q={s},hq={h},hkv={h},d={d},dtype=bf16,page={page}" + ("" if causal else ",attn=1")


# Issue 23's absorbed MLA extend / prefill (bench/gpu/mla_extend.sh): one latent head, q and the
# pool 576 wide, values its first 512, page 64; (hq, b, l, q): prefills of b x s = 16k tokens and
# chunked-prefill extends (q new tokens over l - q cached), at 128 heads and at 16.
def mla_extend(small=False):
    if small:
        return [(16, 2, 64, 64), (16, 1, 96, 32)]
    return [(128, 16, 1024, 1024), (128, 4, 4096, 4096), (128, 1, 16384, 16384),
            (128, 4, 8192, 1024), (128, 1, 16384, 4096), (16, 4, 4096, 4096), (16, 1, 16384, 16384)]


def mla_extend_case(hq, b, l, q):
    return f"extend:b={b},l={l},q={q},hq={hq},mla=1,dtype=bf16,page=64"


def case_keys(case):
    """A case text's mode and keys (the harness may normalise the text: match on these)."""
    mode, _, kv = case.partition(":")
    return mode, dict(x.split("=", 1) for x in kv.split(",") if "=" in x)


def bench_cases(part, small=False, check=False):
    """attnctl's cases of a part's shapes (check: one smaller case a shape kind, whose float64
    reference is quick, at the benched head counts)."""
    if part == "dims":
        lens = {(d, c): (1, 64 if small else 1024) for d, c, _, _ in prefill_dims(small)}
        if check:
            return [prefill_dims_case(b, s, d, c, small) for (d, c), (b, s) in lens.items()]
        return [prefill_dims_case(b, s, d, c, small) for d, c, b, s in prefill_dims(small)]
    if check:  # a prefill and an extend over a prefix at each head count
        heads = sorted({s[0] for s in mla_extend(small)})
        n, (l, q) = (48, (80, 16)) if small else (512, (640, 128))
        return [mla_extend_case(h, 1, n, n) for h in heads] + [mla_extend_case(h, 2, l, q) for h in heads]
    return [mla_extend_case(*s) for s in mla_extend(small)]


if __name__ == "__main__":  # shapes.py dims|mla [--small] [--check]: "--case CASE ..." for attnctl
    import sys
    print(" ".join("--case " + c for c in bench_cases(sys.argv[1], "--small" in sys.argv, "--check" in sys.argv)))
