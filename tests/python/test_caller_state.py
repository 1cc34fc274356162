"""Caller-owned linear state through the package (ABI 1.2): a gdn/cpu_ref
stack whose linear layer keeps its state in torch tensors the test owns, as
sglang's MambaPool does, gives the same bits as the same calls on the
wrapper's own pool; state_batch commits a verify's step; bad state is
refused with the field named."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import sglattn  # noqa: E402

CFG = {"model_type": "qwen3_next", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
       "hidden_size": 256, "head_dim": 64, "full_attention_interval": 4, "linear_num_key_heads": 2,
       "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 8,
       "linear_conv_kernel_dim": 4, "torch_dtype": "float32"}
HK, HV, K, V, W = 2, 4, 16, 8, 4
CONV = 2 * HK * K + HV * V
SLOTS = 12  # the engine's pool: more slots than the wrapper's max_reqs


def stack(host):
    return host.create_stack(["gdn", "cpu_ref"], sglattn.Model.load(CFG, spec_tokens=3), max_reqs=4,
                             max_tokens=256, max_context=512)


def batch(mode, slots, new, prefix):
    bs = len(slots)
    t = lambda x: torch.tensor(x, dtype=torch.int32)  # noqa: E731
    lens = [p + n for p, n in zip(prefix, new)]
    r2t = torch.zeros(4, 512, dtype=torch.int32)
    ocl = torch.zeros(sum(new), dtype=torch.int64)
    kw = dict(extend_prefix_lens=t(prefix), extend_seq_lens=t(new), extend_prefix_lens_cpu=prefix,
              extend_seq_lens_cpu=new) if mode == "extend" else {}
    if mode == "verify":
        kw["tokens_per_req"] = new[0]
    return sglattn.Batch(mode, r2t, t(list(range(bs))), t(lens), ocl, seq_lens_cpu=lens,
                         state_indices=t(slots), **kw)


def test_caller_state_matches_the_pool(host):
    pool, mine = stack(host), stack(host)
    assert "caller_state" in pool.features and pool.supports("state_batch")
    g = torch.Generator().manual_seed(7)
    w = {"conv_weight": torch.randn(CONV, W, generator=g) * 0.5, "A_log": torch.rand(HV, generator=g),
         "dt_bias": torch.randn(HV, generator=g) * 0.1}
    # the engine's tensors, garbage at first: a request without a prefix never reads them
    st = {"conv_state": torch.full((SLOTS, CONV, W - 1), 7.0), "ssm_state": torch.full((SLOTS, HV, V, K), 7.0),
          "intermediate_conv_state": torch.zeros(SLOTS, 3, CONV, W - 1),
          "intermediate_ssm_state": torch.zeros(SLOTS, 3, HV, V, K)}
    pool_slots, my_slots = [1, 3], [5, 11]  # mine are past max_reqs: the engine's numbering
    lp, lm = pool.layer(0, None, None), mine.layer(0, None, None)
    done = [0, 0]
    for mode, new in [("extend", [9, 70]), ("decode", [1, 1]), ("verify", [3, 3]), ("decode", [1, 1])]:
        T = sum(new)
        x, a, b = torch.randn(T, CONV, generator=g), torch.randn(T, HV, generator=g), torch.randn(T, HV, generator=g)
        outs = []
        for be, layer, slots, extra in ((pool, lp, pool_slots, {}), (mine, lm, my_slots, st)):
            be.init_forward_metadata(batch(mode, slots, new, done))
            out = torch.full((T, HV, V), float("nan"))
            lin = sglattn.LinearInputs("gdn", keep_intermediate=mode == "verify", out=out, x=x, a=a, b=b,
                                       **w, **extra)
            (be.forward_decode if mode == "decode" else be.forward_extend)(layer, None, None, None, None, linear=lin)
            outs.append(out)
            if mode == "verify":  # request 0 takes draft 1, request 1 keeps its state
                steps = torch.tensor([1, -1], dtype=torch.int32)
                if extra:
                    be.state_batch("commit", torch.tensor(slots, dtype=torch.int32), steps=steps, state=lin)
                else:
                    be.state_batch("commit", torch.tensor(slots, dtype=torch.int32), steps=steps)
        assert torch.isfinite(outs[0]).all()
        assert torch.equal(outs[0], outs[1]), mode
        done = [d + n for d, n in zip(done, new)] if mode != "verify" else [done[0] + 2, done[1]]
    # the engine's tensors hold what the pool holds, slot for slot
    for ps, ms in zip(pool_slots, my_slots):
        assert not torch.equal(st["ssm_state"][ms], torch.full((HV, V, K), 7.0))
    lin = sglattn.LinearInputs("gdn", **st)
    mine.state_batch("copy", torch.tensor([0], dtype=torch.int32), src=torch.tensor([5], dtype=torch.int32),
                     state=lin)
    assert torch.equal(st["ssm_state"][0], st["ssm_state"][5])
    assert torch.equal(st["conv_state"][0], st["conv_state"][5])
    mine.state_batch("clear", torch.tensor([0, -1], dtype=torch.int32), state=lin)
    assert not st["ssm_state"][0].any() and not st["conv_state"][0].any()


def test_bad_caller_state_refused(host):
    be = stack(host)
    layer = be.layer(0, None, None)
    be.init_forward_metadata(batch("decode", [1], [1], [4]))
    lin = sglattn.LinearInputs("gdn", out=torch.empty(1, HV, V), x=torch.randn(1, CONV), a=torch.randn(1, HV),
                               b=torch.randn(1, HV), conv_weight=torch.randn(CONV, W), A_log=torch.rand(HV),
                               dt_bias=torch.zeros(HV), conv_state=torch.zeros(SLOTS, W - 1, CONV),
                               ssm_state=torch.zeros(SLOTS, HV, V, K))
    with pytest.raises(sglattn.Error, match=r"linear.conv_state has shape \[12, 3, 96\]; expected "
                                                   r"\[12, 96, 3\]"):
        be.forward_decode(layer, None, None, None, None, linear=lin)
    st = sglattn.LinearInputs("gdn", conv_state=torch.zeros(SLOTS, CONV, W - 1), ssm_state=torch.zeros(SLOTS, HV, V, K))
    with pytest.raises(sglattn.Error, match=r"dst\[1\] = 3 repeats dst\[0\]"):
        be.state_batch("clear", torch.tensor([3, 3], dtype=torch.int32), state=st)
    with pytest.raises(sglattn.InvalidArgumentError, match="state_batch op 'move'"):
        be.state_batch("move", torch.tensor([3], dtype=torch.int32), state=st)
