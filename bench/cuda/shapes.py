"""The issue-6 shapes, one place for the bench script, the torch side and the summary."""

DECODE = [(b, l) for b in (16, 64, 256) for l in (1024, 4096, 16384)]  # GQA 32/8, d128, bf16
DECODE_PAGE1 = [(64, 4096), (256, 4096), (16, 16384)]                   # page 1 vs 16
PREFILL = [(16384 // s, s) for s in (1024, 2048, 4096, 8192, 16384)]    # causal, 16 heads, d128


def decode_case(b, l, page=16):
    return f"decode:b={b},l={l},hq=32,hkv=8,d=128,dtype=bf16,page={page}"


def prefill_case(b, s, page=16):
    return f"extend:b={b},l={s},q={s},hq=16,hkv=16,d=128,dtype=bf16,page={page}"


def case_keys(case):
    """A case text's mode and keys (the harness may normalise the text: match on these)."""
    mode, _, kv = case.partition(":")
    return mode, dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
