"""The package surface: loading, the layout check, plugins, models, selection,
errors, tensors (torch direct, DLPack capsules from torch and numpy) and a
backend run on cpu_ref against a float64 reference."""
from __future__ import annotations

import ctypes
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import sglattn
from sglattn import _abi, _lib
from sglattn.errors import error_for_status

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(REPO, "examples", "models", "llama-3.1-8b.json")


def llama(layers=2, hq=4, hkv=2, d=64, dtype="float32"):
    return {"model_type": "llama", "num_hidden_layers": layers, "num_attention_heads": hq,
            "num_key_value_heads": hkv, "hidden_size": hq * d, "head_dim": d, "torch_dtype": dtype}


# ------------------------------------------------------------------ loading
def test_loaded_library_and_layout():
    lib = _lib.load()
    assert os.path.samefile(sglattn.library_path, os.environ.get("SGLATTN_LIB", sglattn.library_path))
    assert sglattn.abi_version[0] == 1
    sizes = lib.layout["structs"]
    for name, cls in _abi.MIRRORS.items():
        assert sizes[name]["size"] == ctypes.sizeof(cls), name
        assert lib.struct_size(name.encode()) == ctypes.sizeof(cls), name
    assert lib.struct_size(b"no_such_struct") == 0 and lib.struct_size(None) == 0
    assert lib.layout["constants"]["SGL_ATTN_E_STATE"] == -7
    # snprintf-style: the full length back, what fits written and terminated
    fn = lib.cdll.sgl_attn_layout_json
    full = fn(None, 0)
    buf = ctypes.create_string_buffer(b"x" * 16)
    assert fn(buf, 10) == full
    assert buf.raw[:10] == b'{"version\0' and buf.raw[10:16] == b"x" * 6  # nothing past size
    assert full == len(json.dumps(lib.layout, separators=(",", ":")))


def _layer_mirror(fields):
    return type("sgl_attn_layer", (ctypes.Structure,), {"_fields_": fields})


def test_wrong_mirror_is_refused_naming_struct_and_field():
    layout = _lib.load().layout
    good = list(_abi.sgl_attn_layer._fields_)
    # k_cache and v_cache swapped with a 4-byte field in between: offsets move
    bad = good[:11] + [("k_cache", ctypes.c_uint32), ("v_cache", ctypes.c_void_p)] + good[13:]
    with pytest.raises(sglattn.AbiError, match=r"sgl_attn_layer\.k_cache: the package's mirror has it at offset 48 "
                                               r"with size 4; libsglattn has offset 48, size 8"):
        _abi.check_layout(layout, {"sgl_attn_layer": _layer_mirror(bad)})
    extra = good + [("not_in_the_library", ctypes.c_int32)]
    with pytest.raises(sglattn.AbiError, match=r"sgl_attn_layer\.not_in_the_library: .*library is older"):
        _abi.check_layout(layout, {"sgl_attn_layer": _layer_mirror(extra)})
    dl = type("DLTensor", (ctypes.Structure,), {"_fields_": list(_abi.DLTensor._fields_) + [("x", ctypes.c_int64)]})
    with pytest.raises(sglattn.AbiError, match=r"DLTensor\.x"):
        _abi.check_layout(layout, {"DLTensor": dl})
    with pytest.raises(sglattn.AbiError, match=r"constant SGL_ATTN_E_STATE is -9"):
        _abi.check_layout(layout, {}, {"SGL_ATTN_E_STATE": -9})
    with pytest.raises(sglattn.AbiError, match=r"ABI 2\.0"):
        _abi.check_layout(dict(layout, abi=[2, 0]), {})
    _abi.check_layout(layout)  # the shipped mirrors pass


def test_a_newer_library_with_appended_fields_is_accepted():
    layout = json.loads(json.dumps(_lib.load().layout))
    s = layout["structs"]["sgl_attn_batch"]
    s["fields"].append(["appended_later", s["size"], 8, "int64_t"])
    s["size"] += 8
    _abi.check_layout(layout)
    layout["structs"]["DLTensor"]["size"] += 8
    with pytest.raises(sglattn.AbiError, match="DLTensor: sizeof"):
        _abi.check_layout(layout)


def test_library_not_found_says_what_was_tried(tmp_path):
    with pytest.raises(sglattn.LibraryNotFoundError, match=r"SGLATTN_LIB: /nonexistent/libsglattn.so.1: no such"):
        _lib.find_library(env={"SGLATTN_LIB": "/nonexistent/libsglattn.so.1"})
    # the package alone, outside the checkout, in an environment with nothing to find
    shutil.copytree(os.path.join(REPO, "python", "sglattn"), tmp_path / "sglattn",
                    ignore=shutil.ignore_patterns("_install.py", "__pycache__"))
    env = {"PATH": "/usr/bin:/bin", "PKG_CONFIG_PATH": str(tmp_path), "PKG_CONFIG_LIBDIR": str(tmp_path),
           "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, "-c", "import sglattn"], cwd=tmp_path, env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()
    i = next(n for n, line in enumerate(err) if line.startswith("sglattn.errors.LibraryNotFoundError"))
    assert err[i].endswith("libsglattn not found; tried, in order:")
    assert err[i + 1].strip().startswith("pkg-config:")
    assert err[i + 2].strip().startswith("the system loader: libsglattn.so.1: cannot open shared object file")
    assert "set SGLATTN_LIB" in err[i + 3]
    # in a checkout, the build tree comes before pkg-config
    where = [w for w, _ in _lib.candidates(env={}, here=os.path.join(REPO, "python", "sglattn"))]
    assert where[0] == "the source checkout's build tree" and where[-1] == "the system loader"


# ------------------------------------------------------------------ plugins
def test_plugins_have_the_list_plugins_json_fields(host, build_dir):
    out = subprocess.run([os.path.join(build_dir, "bin", "attnctl"), "list-plugins", "--json", "--no-isolate"],
                         capture_output=True, text=True, check=True).stdout
    want = json.loads(out)["plugins"]
    got = [p.to_dict() for p in host.plugins()]
    assert got == want
    cpu = host.plugin("cpu_ref")
    assert cpu.usable and cpu.role == "full" and cpu.platform == "cpu" and cpu.source == "embedded"
    assert "torch_native" in cpu.aliases and "decode" in cpu.devices[0].features
    with pytest.raises(sglattn.NotFoundError, match="no plugin named 'nope'"):
        host.plugin("nope")


def test_search_paths_and_conf(host):
    sources = [s for _, s, _ in host.search_paths()]
    assert "drop-in" in sources
    assert host.conf_path.endswith("sglattn.json")


# ------------------------------------------------------------------- models
def test_model_from_dict_file_dir_and_struct(tmp_path):
    m = sglattn.Model.load(llama(layers=3, hq=8, hkv=2, d=64), tp_size=2)
    # torch_dtype float32 is served in float16: sglang's dtype=auto (docs/model.md)
    assert (m.num_layers, m.num_q_heads, m.num_kv_heads, m.head_dim_qk, m.dtype) == (3, 4, 1, 64, "f16")
    assert m.full_attention_layers == [0, 1, 2] and not m.is_hybrid
    (tmp_path / "config.json").write_text(json.dumps(llama(dtype="bfloat16")))
    for src in (str(tmp_path / "config.json"), str(tmp_path), tmp_path):
        assert sglattn.Model.load(src).dtype == "bf16"
    m2 = sglattn.Model.load(m, page_size=16, kv_dtype="bf16")
    assert (m2.page_size, m2.kv_dtype, m.page_size) == (16, "bf16", 0)
    assert sglattn.Model.load(LLAMA).num_q_heads == 32
    with pytest.raises(sglattn.InvalidArgumentError, match="num_attention_heads"):
        sglattn.Model.load({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64})
    with pytest.raises(AttributeError, match="no field 'nope'"):
        m.nope = 1


def test_hybrid_model_and_full_attention_view():
    cfg = {"model_type": "qwen3_next", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
           "hidden_size": 256, "head_dim": 64, "full_attention_interval": 4, "linear_num_key_heads": 2,
           "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
           "linear_conv_kernel_dim": 4, "torch_dtype": "float32"}
    m = sglattn.Model.load(cfg)
    assert m.is_hybrid and m.hybrid_kind_name == "gdn" and m.full_attention_layers == [3]
    f = m.as_full_attention_only()
    assert not f.is_hybrid and f.full_attention_layers == [0, 1, 2, 3] and f.full_layers_of_source == [3]


# ---------------------------------------------------------------- selection
def test_select_and_explain_match_attnctl(host, build_dir):
    sel = host.select(LLAMA)
    assert sel.ok and sel.stack == ["cpu_ref"] and not sel.split and sel.device == 0
    assert sel.full_attention_layers == list(range(32))
    out = subprocess.run([os.path.join(build_dir, "bin", "attnctl"), "select", "--model", LLAMA, "--explain"],
                         capture_output=True, text=True, check=True).stdout
    assert sel.explain().splitlines() == out.rstrip("\n").splitlines()
    assert any(v.plugin == "cpu_ref" and v.taken for v in sel.verdicts)


def test_select_refusal_carries_the_verdicts(host):
    with pytest.raises(sglattn.NotFoundError) as e:
        host.select(LLAMA, backend="no_such_backend")
    assert "no_such_backend" in str(e.value)
    assert e.value.selection is not None and "candidates, in order:" in e.value.selection.explain()
    with pytest.raises(sglattn.InvalidArgumentError, match="not both"):
        host.select(LLAMA, backend="cpu_ref", decode_backend="cpu_ref")


# ------------------------------------------------------------------- errors
def test_one_exception_class_per_status():
    classes = {-1: sglattn.InvalidArgumentError, -2: sglattn.UnsupportedError, -3: sglattn.OutOfMemoryError,
               -4: sglattn.DeviceError, -5: sglattn.AbiError, -6: sglattn.NotFoundError, -7: sglattn.StateError,
               -8: sglattn.InternalError}
    names = {-1: "invalid", -2: "unsupported", -3: "nomem", -4: "device", -5: "abi", -6: "not_found", -7: "state",
             -8: "internal"}
    for status, cls in classes.items():
        e = error_for_status(status, "the plugin's words", "call")
        assert type(e) is cls and e.status == status and e.status_name == names[status]
        assert e.message == "the plugin's words" and isinstance(e, sglattn.Error)
        assert str(e) == f"call: the plugin's words [{names[status]}]"
    assert isinstance(error_for_status(-99, "x"), sglattn.InternalError)
    assert issubclass(sglattn.InvalidArgumentError, ValueError)


# ------------------------------------------------------------------ backend
class Case:
    """A small ragged extend on cpu_ref: pools, a batch, and the float64 answer."""

    def __init__(self, host, lens=(5, 9), prefix=(0, 3), hq=4, hkv=2, d=64, slots=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.hq, self.hkv, self.d = hq, hkv, d
        self.model = sglattn.Model.plain(hq, hkv, d, num_layers=1, dtype="f32")
        self.backend = host.create_stack(["cpu_ref"], self.model, max_reqs=4, max_tokens=64, max_context=64)
        self.kp = torch.randn(slots, hkv, d, generator=g)
        self.vp = torch.randn(slots, hkv, d, generator=g)
        self.r2t = torch.zeros(4, 64, dtype=torch.int32)
        perm = (torch.randperm(slots - 1, generator=g) + 1).tolist()
        tot = [p + n for p, n in zip(prefix, lens)]
        for i, L in enumerate(tot):
            self.r2t[i, :L] = torch.tensor(perm[:L])
            perm = perm[L:]
        self.lens, self.prefix, self.tot = list(lens), list(prefix), tot
        T = sum(lens)
        self.q = torch.randn(T, hq, d, generator=g)
        self.k = torch.randn(T, hkv, d, generator=g)
        self.v = torch.randn(T, hkv, d, generator=g)
        self.ocl = torch.cat([self.r2t[i, p:p + n] for i, (p, n) in enumerate(zip(prefix, lens))]).long()
        self.pos = torch.cat([torch.arange(p, p + n) for p, n in zip(prefix, lens)])

    def batch(self, **over):
        kw = dict(positions=self.pos, extend_prefix_lens=torch.tensor(self.prefix, dtype=torch.int32),
                  extend_seq_lens=torch.tensor(self.lens, dtype=torch.int32), seq_lens_cpu=self.tot,
                  extend_prefix_lens_cpu=self.prefix, extend_seq_lens_cpu=self.lens)
        kw.update(over)
        return sglattn.Batch("extend", self.r2t, torch.arange(len(self.lens), dtype=torch.int32),
                             torch.tensor(self.tot, dtype=torch.int32), self.ocl, **kw)

    def reference(self):
        kp, vp = self.kp.double().clone(), self.vp.double().clone()
        kp[self.ocl], vp[self.ocl] = self.k.double(), self.v.double()
        out, o, r = torch.empty(self.q.shape, dtype=torch.float64), 0, self.hq // self.hkv
        for i, (p, n) in enumerate(zip(self.prefix, self.lens)):
            idx = self.r2t[i, :p + n].long()
            K, V = kp[idx].repeat_interleave(r, 1), vp[idx].repeat_interleave(r, 1)
            s = torch.einsum("qhd,khd->hqk", self.q[o:o + n].double(), K) / math.sqrt(self.d)
            s.masked_fill_(torch.arange(p + n).view(1, -1) > torch.arange(p, p + n).view(-1, 1), -math.inf)
            out[o:o + n] = torch.einsum("hqk,khd->qhd", s.softmax(-1), V)
            o += n
        return out


def test_backend_extend_matches_float64_and_saves_kv(host):
    c = Case(host)
    ref = c.reference()
    c.backend.init_forward_metadata(c.batch())
    layer = c.backend.layer(0, c.kp, c.vp)
    out = torch.full_like(c.q, float("nan"))
    c.backend.forward_extend(layer, c.q, c.k, c.v, out)
    assert (out.double() - ref).abs().max() < 1e-5
    assert torch.equal(c.kp[c.ocl], c.k) and torch.equal(c.vp[c.ocl], c.v)
    # flattened q/out ([T, H*D]), as sglang passes them, through the same layer
    out2 = torch.zeros(c.q.shape[0], c.hq * c.d)
    c.backend.forward_extend(layer, c.q.reshape(-1, c.hq * c.d), c.k, c.v, out2, save_kv_cache=False)
    assert (out2.view_as(out) - out).abs().max() == 0


def test_validate_takes_flat_and_strided_q_and_checks_abi_1_2_fields(host):
    """The validation layer accepts what docs/abi.md invites: the flattened
    [T, H*D] q and out, and q as a view into a fused qkv buffer; and an ABI 1.2
    field (a tree mask) reaches cpu_ref, which serves it (TREE_MASK) and refuses
    it by name in an extend batch."""
    c = Case(host)
    ref = c.reference()
    v = host.create_stack(["validate", "cpu_ref"], c.model, max_reqs=4, max_tokens=64, max_context=64)
    v.init_forward_metadata(c.batch())
    layer = v.layer(0, c.kp, c.vp)
    out = torch.zeros(c.q.shape[0], c.hq * c.d)
    v.forward_extend(layer, c.q.reshape(-1, c.hq * c.d), c.k, c.v, out)
    assert (out.view_as(c.q).double() - ref).abs().max() < 1e-5
    qkv = torch.cat([c.q.reshape(-1, c.hq * c.d), c.k.reshape(-1, c.hkv * c.d), c.v.reshape(-1, c.hkv * c.d)], 1)
    q_view = qkv[:, :c.hq * c.d].view(-1, c.hq, c.d)
    assert not q_view.is_contiguous()
    out3 = torch.zeros_like(c.q)
    v.forward_extend(layer, q_view, c.k, c.v, out3, save_kv_cache=False)
    assert (out3.double() - ref).abs().max() < 1e-5
    mask = torch.ones(sum(n * t for n, t in zip(c.lens, c.tot)), dtype=torch.uint8)
    indptr = torch.tensor([0, c.lens[0] * c.tot[0], mask.numel()], dtype=torch.int32)
    with pytest.raises(sglattn.Error, match="custom_mask is set in forward_mode 1; it is a target-verify"):
        v.init_forward_metadata(c.batch(custom_mask=mask, mask_indptr=indptr))
    with pytest.raises(sglattn.Error, match="custom_mask is set in forward_mode 1; it is a target-verify"):
        c.backend.init_forward_metadata(c.batch(custom_mask=mask, mask_indptr=indptr))


DS32 = {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "num_hidden_layers": 1,
        "num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": 8, "index_n_heads": 4, "index_head_dim": 128,
        "torch_dtype": "bfloat16", "hidden_size": 512}


def test_dsa_sparse_mla_over_topk_indices_matches_float64(host):
    """DeepSeek sparse attention on cpu_ref: each token attends over the pool
    slots of its topk_indices row only (-1 skipped); the next forward
    without indices is dense again."""
    g = torch.Generator().manual_seed(3)
    sel = host.select(DS32)
    assert sel.stack == ["cpu_ref"]
    be = sel.create(max_reqs=2, max_tokens=16, max_context=32)
    assert "sparse_mla" in be.dsa_ops and "indexer" in be.dsa_ops
    hq, D, Dv, slots = 4, 576, 512, 64
    pool = torch.randn(slots, 1, D, generator=g).bfloat16()
    r2t = torch.zeros(2, 32, dtype=torch.int32)
    r2t[0, :10] = torch.arange(1, 11)
    r2t[1, :6] = torch.arange(20, 26)
    seq = [10, 6]
    ocl = torch.tensor([10, 25], dtype=torch.int32)
    q = torch.randn(2, hq, D, generator=g).bfloat16()
    b = sglattn.Batch("decode", r2t, torch.arange(2, dtype=torch.int32), torch.tensor(seq, dtype=torch.int32), ocl,
                      seq_lens_cpu=seq)
    be.init_forward_metadata(b)
    layer = be.layer(0, pool, None, sm_scale=0.05)
    topk = torch.tensor([[3, 7, -1, 10, 1, -1, -1, 5], [-1, 22, 25, -1, -1, -1, -1, -1]], dtype=torch.int32)
    layer.set_topk(topk)
    out = torch.empty(2, hq, Dv, dtype=torch.bfloat16)
    be.forward_decode(layer, q, None, None, out, save_kv_cache=False)
    P = pool.double()[:, 0]
    for t in range(2):
        idx = topk[t][topk[t] >= 0].long()
        s = torch.einsum("hd,kd->hk", q[t].double(), P[idx]) * 0.05
        ref = torch.einsum("hk,kd->hd", s.softmax(-1), P[idx, :Dv])
        assert (out[t].double() - ref).abs().max() < 2e-2
    layer.set_topk(None)
    dense = torch.empty_like(out)
    be.forward_decode(layer, q, None, None, dense, save_kv_cache=False)
    assert (dense.double() - out.double()).abs().max() > 1e-2
    be.close()


def test_forward_before_metadata_is_a_state_error(host):
    c = Case(host)
    layer = c.backend.layer(0, c.kp, c.vp)
    with pytest.raises(sglattn.StateError) as e:
        c.backend.forward_extend(layer, c.q, c.k, c.v, torch.empty_like(c.q))
    assert e.value.status == -7 and e.value.message == c.backend.last_error != ""


def test_plugin_messages_reach_the_exception(host):
    c = Case(host)
    c.backend.init_forward_metadata(c.batch())
    layer = c.backend.layer(0, c.kp, c.vp)
    with pytest.raises(sglattn.InvalidArgumentError, match=r"q has shape \[3, 4, 64\]; expected \[14, 4, 64\]"):
        c.backend.forward_extend(layer, c.q[:3], c.k, c.v, torch.empty_like(c.q))
    with pytest.raises(sglattn.InvalidArgumentError, match=r"^init_forward_metadata: batch.seq_lens_sum = 14"):
        c.backend.init_forward_metadata(c.batch(seq_lens_sum=14))


def test_strides_are_passed_as_they_are(host):
    """A non-compact q is described with its strides: cpu_ref takes a view
    into a wider buffer (a fused qkv) and gives the compact copy's result, and
    refuses a q whose rows are not contiguous.  The cached descriptor follows
    the tensor from call to call."""
    c = Case(host)
    c.backend.init_forward_metadata(c.batch())
    layer = c.backend.layer(0, c.kp, c.vp)
    out = torch.empty_like(c.q)
    c.backend.forward_extend(layer, c.q, c.k, c.v, out, save_kv_cache=False)
    wide = torch.cat([c.q, c.q], dim=2)[:, :, :c.d]  # same shape, row stride 128
    assert wide.shape == c.q.shape and not wide.is_contiguous()
    out1 = torch.empty_like(c.q)
    c.backend.forward_extend(layer, wide, c.k, c.v, out1, save_kv_cache=False)
    assert torch.equal(out, out1)
    columns = c.q.transpose(1, 2).contiguous().transpose(1, 2)  # head dim not contiguous
    assert columns.shape == c.q.shape and columns.stride(2) != 1
    with pytest.raises(sglattn.UnsupportedError, match="q.strides"):
        c.backend.forward_extend(layer, columns, c.k, c.v, out1, save_kv_cache=False)
    out2 = torch.empty_like(c.q)
    c.backend.forward_extend(layer, wide.contiguous(), c.k, c.v, out2, save_kv_cache=False)
    assert torch.equal(out, out2)
    with pytest.raises(sglattn.UnsupportedError, match="q has dtype int64"):
        c.backend.forward_extend(layer, c.q.long(), c.k, c.v, out2, save_kv_cache=False)


class Wrapped:
    """Only the DLPack protocol, over a torch tensor: the capsule path."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return torch.utils.dlpack.to_dlpack(self.t)

    def __dlpack_device__(self):
        return (1, 0)


def test_dlpack_capsules_from_numpy_and_torch(host):
    c = Case(host)
    ref = c.reference()
    b = c.batch(positions=c.pos.numpy(), extend_prefix_lens=np.array(c.prefix, dtype=np.int32),
                extend_seq_lens=np.array(c.lens, dtype=np.int64))
    assert isinstance(b.tensor("positions"), np.ndarray)
    c.backend.init_forward_metadata(b)
    kp, vp = c.kp.numpy().copy(), c.vp.numpy().copy()
    layer = c.backend.layer(0, kp, vp)
    out = np.full(c.q.shape, np.nan, dtype=np.float32)
    c.backend.forward_extend(layer, c.q.numpy(), c.k.numpy(), c.v.numpy(), out)
    assert np.abs(out.astype(np.float64) - ref.numpy()).max() < 1e-5
    assert np.array_equal(kp[c.ocl.numpy()], c.k.numpy())
    out_t = torch.full_like(c.q, float("nan"))
    c.backend.forward_extend(layer, Wrapped(c.q), Wrapped(c.k), Wrapped(c.v), Wrapped(out_t), save_kv_cache=False)
    assert (out_t.double() - ref).abs().max() < 1e-5
    # back to torch tensors on the same layer: the fast path re-describes
    out_t2 = torch.full_like(c.q, float("nan"))
    c.backend.forward_extend(layer, c.q, c.k, c.v, out_t2, save_kv_cache=False)
    assert torch.equal(out_t, out_t2)


def test_not_an_array_is_a_type_error(host):
    c = Case(host)
    with pytest.raises(TypeError, match="cannot pass str as a tensor"):
        c.backend.layer(0, "k", "v")


def test_graph_and_state_ops_on_cpu_ref(host):
    c = Case(host)
    assert "graph_capture" not in c.backend.features and "spec_decode" in c.backend.features
    assert c.backend.supports("init_graph_state") and not c.backend.supports("state_clear")
    with pytest.raises(sglattn.UnsupportedError, match="cpu_ref does not capture graphs"):
        c.backend.init_graph_state(8, 8)
    with pytest.raises(sglattn.UnsupportedError, match="cpu_ref has no state_clear"):
        c.backend.state_clear(0)
    assert c.backend.graph_seq_len_fill_value() == 1
    c.backend.close()
    c.backend.close()  # idempotent


def test_close_host_while_a_backend_lives():
    h = sglattn.Host()
    c = Case(h)
    h.close()
    c.backend.init_forward_metadata(c.batch())
    layer = c.backend.layer(0, c.kp, c.vp)
    out = torch.empty_like(c.q)
    c.backend.forward_extend(layer, c.q, c.k, c.v, out)
    assert (out.double() - c.reference()).abs().max() < 1e-5
