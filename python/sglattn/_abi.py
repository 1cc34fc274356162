"""ctypes mirrors of the public structs (host/sgl_attn.h, abi/sgl_attn_abi.h,
DLPack 0.6) and the check that holds them to the loaded library's layout.

The library exports its own layout (sgl_attn_layout_json: every struct's
size and every field's offset and size, computed by the compiler that built
it).  check_layout() compares each mirror against it field by field; any
difference is an AbiError that names the struct and the field, raised at
import, before any call could pass a misread struct.

Pointer fields that carry tensors are c_void_p so the hot path can store
addresses as plain ints; the check still holds their offsets and sizes.
"""
from __future__ import annotations

import ctypes as C
from typing import Any, Dict, List, Mapping, Type

from .errors import AbiError

# ----------------------------------------------------------------- constants
# Names as in the headers; check_layout() compares each value with the library's.
SGL_ATTN_ABI_MAJOR = 1
SGL_ATTN_NAME_MAX = 63
SGL_ATTN_REASON_MAX = 256
SGL_ATTN_REASON_LONG_MAX = 1024
SGL_ATTN_MAX_LAYERS = 1024
SGL_ATTN_MAX_LIST = 16

SGL_ATTN_OK = 0
SGL_ATTN_E_INVALID = -1
SGL_ATTN_E_UNSUPPORTED = -2
SGL_ATTN_E_NOMEM = -3
SGL_ATTN_E_DEVICE = -4
SGL_ATTN_E_ABI = -5
SGL_ATTN_E_NOT_FOUND = -6
SGL_ATTN_E_STATE = -7
SGL_ATTN_E_INTERNAL = -8

SGL_ATTN_PLATFORM_NONE = 0
SGL_ATTN_PLATFORM_CPU = 1
SGL_ATTN_PLATFORM_CUDA = 2
SGL_ATTN_PLATFORM_HIP = 3
SGL_ATTN_PLATFORM_XPU = 4
SGL_ATTN_PLATFORM_NPU = 5

SGL_ATTN_ROLE_FULL = 1
SGL_ATTN_ROLE_HYBRID = 2
SGL_ATTN_ROLE_LAYER = 3

SGL_ATTN_HYBRID_NONE = 0
SGL_ATTN_HYBRID_GDN = 1
SGL_ATTN_HYBRID_CUSTOM = 7

SGL_ATTN_DT_F32 = 1 << 0
SGL_ATTN_DT_F16 = 1 << 1
SGL_ATTN_DT_BF16 = 1 << 2
SGL_ATTN_DT_F64 = 1 << 3
SGL_ATTN_DT_FP8_E4M3 = 1 << 4
SGL_ATTN_DL_FLOAT8_E4M3_CODE = 0x80

SGL_ATTN_KIND_MHA = 1 << 0
SGL_ATTN_KIND_GQA = 1 << 1
SGL_ATTN_KIND_MQA = 1 << 2
SGL_ATTN_KIND_MLA = 1 << 3
SGL_ATTN_KIND_CROSS = 1 << 4

SGL_ATTN_FEAT_EXTEND = 1 << 0
SGL_ATTN_FEAT_DECODE = 1 << 1
SGL_ATTN_FEAT_SLIDING_WINDOW = 1 << 2
SGL_ATTN_FEAT_SOFTCAP = 1 << 3
SGL_ATTN_FEAT_SINKS = 1 << 4
SGL_ATTN_FEAT_GRAPH_CAPTURE = 1 << 5
SGL_ATTN_FEAT_SPEC_DECODE = 1 << 6
SGL_ATTN_FEAT_MLA_EXTEND = 1 << 7
SGL_ATTN_FEAT_DIFF_HEAD_DIMS = 1 << 8
# ABI 1.2
SGL_ATTN_FEAT_TREE_MASK = 1 << 9
SGL_ATTN_FEAT_DRAFT_EXTEND = 1 << 10
SGL_ATTN_FEAT_RAGGED = 1 << 11
SGL_ATTN_FEAT_LSE = 1 << 12
SGL_ATTN_FEAT_PAGE_TABLE = 1 << 13
SGL_ATTN_FEAT_SLOT_MAP = 1 << 14
SGL_ATTN_FEAT_CALLER_STATE = 1 << 15
SGL_ATTN_FEAT_ATTN_TYPES = 1 << 16
SGL_ATTN_FEAT_ENCODER_LOC = 1 << 17
SGL_ATTN_FEAT_FP8_SCALES = 1 << 18
SGL_ATTN_FEAT_MLA_ROPE_SPLIT = 1 << 19
SGL_ATTN_FEAT_GRAPH_DEVICE_PLAN = 1 << 20
SGL_ATTN_FEAT_GRAPH_VERIFY = 1 << 21
SGL_ATTN_FEAT_STRIDED_QKV = 1 << 22
SGL_ATTN_FEAT_DUAL_CHUNK = 1 << 23  # dual chunk attention

SGL_ATTN_TYPE_CAUSAL = 0
SGL_ATTN_TYPE_BIDIRECTIONAL = 1
SGL_ATTN_TYPE_ENCODER_ONLY = 2

SGL_ATTN_STATE_CLEAR = 1
SGL_ATTN_STATE_COPY = 2
SGL_ATTN_STATE_COMMIT = 3
SGL_ATTN_STATE_TRACK = 4

SGL_ATTN_DL_FLOAT8_E4M3_CODE = 0x80
SGL_ATTN_DL_FLOAT8_E4M3FN_CODE = 10
SGL_ATTN_DL_FLOAT8_E5M2_CODE = 12
# caps.dsa_ops (ABI 1.2, DeepSeek sparse attention)
SGL_ATTN_DSA_SPARSE_MLA = 1 << 0
SGL_ATTN_DSA_INDEXER = 1 << 1
SGL_ATTN_DSA_KV_FP8_RECORD = 1 << 2

SGL_ATTN_MODE_IDLE = 0
SGL_ATTN_MODE_EXTEND = 1
SGL_ATTN_MODE_DECODE = 2
SGL_ATTN_MODE_TARGET_VERIFY = 3
SGL_ATTN_MODE_DRAFT_EXTEND = 4

CONSTANTS: Dict[str, int] = {k: v for k, v in dict(globals()).items()
                             if k.startswith("SGL_ATTN_") and isinstance(v, int)}

# DLPack 0.6 device types used here
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLROCM = 10
# DLPack type codes
kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLBfloat = 4

u8, u16, u32, u64 = C.c_uint8, C.c_uint16, C.c_uint32, C.c_uint64
i32, i64 = C.c_int32, C.c_int64
vp, cp = C.c_void_p, C.c_char_p


def chars(n: int) -> Any:
    return C.c_char * n


# ------------------------------------------------------------------- DLPack
class DLDevice(C.Structure):
    _fields_ = [("device_type", i32), ("device_id", i32)]


class DLDataType(C.Structure):
    _fields_ = [("code", u8), ("bits", u8), ("lanes", u16)]


class DLTensor(C.Structure):
    _fields_ = [("data", vp), ("device", DLDevice), ("ndim", i32), ("dtype", DLDataType),
                ("shape", vp), ("strides", vp), ("byte_offset", u64)]


DL_DELETER = C.CFUNCTYPE(None, vp)


class DLManagedTensor(C.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", vp), ("deleter", DL_DELETER)]


# ------------------------------------------------------------ host (sgl_attn.h)
LOG_FN = C.CFUNCTYPE(None, vp, C.c_int, cp)


class sgl_attn_host_options(C.Structure):
    _fields_ = [("struct_size", u32), ("plugin_path", cp), ("ignore_env_path", i32),
                ("no_default_dir", i32), ("conf_path", cp), ("no_conf", i32), ("isolate_probes", i32),
                ("probe_timeout_ms", i32), ("never_unload", i32), ("log", LOG_FN), ("log_user", vp),
                ("log_level", i32), ("validate", i32), ("caps_file", cp)]


class sgl_attn_plugin_info(C.Structure):
    _fields_ = [("struct_size", u32), ("status", i32), ("reason", chars(512)), ("path", chars(4096)),
                ("source", chars(64)), ("name", chars(SGL_ATTN_NAME_MAX + 1)), ("version", chars(32)),
                ("description", chars(160)), ("license", chars(32)), ("platform", i32), ("role", i32),
                ("hybrid_kind", i32), ("custom_kind", chars(32)), ("abi_major", u16), ("abi_minor", u16),
                ("n_aliases", u32), ("aliases", chars(32) * SGL_ATTN_MAX_LIST),
                ("n_model_types", u32), ("model_types", chars(32) * SGL_ATTN_MAX_LIST),
                ("n_devices", u32)]


class sgl_attn_select_request(C.Structure):
    _fields_ = [("struct_size", u32), ("backend", cp), ("prefill_backend", cp), ("decode_backend", cp),
                ("platform", i32), ("is_draft", i32), ("validate", i32), ("cuda_graph", i32),
                ("no_cpu_fallback", i32)]


class sgl_attn_verdict(C.Structure):
    _fields_ = [("plugin", chars(SGL_ATTN_NAME_MAX + 1)), ("device", i32), ("taken", i32), ("score", i32),
                ("stage", chars(16)), ("rule", chars(48)), ("message", chars(384))]


class sgl_attn_create_options(C.Structure):
    _fields_ = [("struct_size", u32), ("max_reqs", i32), ("max_tokens", i32), ("max_context", i32)]


# -------------------------------------------------------- ABI (sgl_attn_abi.h)
class sgl_attn_head_dims(C.Structure):
    _fields_ = [("qk", u16), ("v", u16)]


class sgl_attn_caps(C.Structure):
    _fields_ = [("struct_size", u32), ("available", u32), ("reason", chars(SGL_ATTN_REASON_MAX)),
                ("device_name", chars(96)), ("arch_name", chars(48)), ("arch_major", i32), ("arch_minor", i32),
                ("arch_min_major", i32), ("arch_min_minor", i32), ("arch_max_major", i32),
                ("arch_max_minor", i32), ("memory_bytes", u64), ("compute_units", u32), ("attn_kinds", u32),
                ("q_dtypes", u32), ("kv_dtypes", u32), ("features", u32), ("head_dim_qk_max", u32),
                ("head_dim_v_max", u32), ("n_head_dims", u32),
                ("head_dims", sgl_attn_head_dims * SGL_ATTN_MAX_LIST), ("page_size_max", u32),
                ("n_page_sizes", u32), ("page_sizes", u32 * SGL_ATTN_MAX_LIST), ("max_gqa_ratio", u32),
                ("score", i32), ("state_dtypes", u32), ("reserved_v1_1_tail_", u32),
                ("reason_long", chars(SGL_ATTN_REASON_LONG_MAX)), ("dsa_ops", u32)]


class sgl_attn_model(C.Structure):
    _fields_ = [("struct_size", u32), ("name", chars(64)), ("model_type", chars(64)), ("num_layers", i32),
                ("num_q_heads", i32), ("num_kv_heads", i32), ("head_dim_qk", i32), ("head_dim_v", i32),
                ("dtype", u32), ("kv_dtype", u32), ("is_mla", i32), ("kv_lora_rank", i32),
                ("qk_rope_head_dim", i32), ("qk_nope_head_dim", i32), ("v_head_dim", i32),
                ("is_encoder_decoder", i32), ("sliding_window", i32), ("logit_softcap", C.c_float),
                ("has_sinks", i32), ("index_topk", i32), ("page_size", i32), ("is_draft", i32),
                ("spec_tokens", i32), ("hybrid_kind", u32), ("hybrid_custom_kind", chars(32)),
                ("full_attention_mask", u64 * (SGL_ATTN_MAX_LAYERS // 64)),
                ("sparse_layer_mask", u64 * (SGL_ATTN_MAX_LAYERS // 64)),
                ("lin_num_k_heads", i32), ("lin_num_v_heads", i32), ("lin_head_k_dim", i32),
                ("lin_head_v_dim", i32), ("lin_conv_kernel", i32), ("lin_hidden", i32),
                ("lin_state_dtype", u32), ("sparse_topk_blocks", i32), ("sparse_block_size", i32),
                ("reserved_v1_1_tail_", u32), ("config_dtype", u32), ("attn_type", i32),
                ("index_n_heads", i32), ("index_head_dim", i32),
                ("dca_chunk_size", i32), ("dca_local_size", i32),
                ("dca_original_max_position", i32), ("dca_sparse", i32), ("dca_sparse_threshold", i32),
                ("dca_reserved_", i32)]


class sgl_attn_batch(C.Structure):
    _fields_ = [("struct_size", u32), ("forward_mode", i32), ("batch_size", i32), ("num_tokens", i32),
                ("page_size", i32), ("tokens_per_req", i32), ("reserved_", i32), ("seq_lens_sum", i64),
                ("req_to_token", vp), ("req_pool_indices", vp), ("seq_lens", vp),
                ("extend_prefix_lens", vp), ("extend_seq_lens", vp), ("out_cache_loc", vp),
                ("positions", vp), ("encoder_lens", vp), ("seq_lens_cpu", vp),
                ("extend_prefix_lens_cpu", vp), ("extend_seq_lens_cpu", vp), ("encoder_lens_cpu", vp),
                ("state_indices", vp), ("stream", vp),
                # ABI 1.2
                ("custom_mask", vp), ("mask_indptr", vp), ("page_table", vp), ("encoder_out_cache_loc", vp)]


class sgl_attn_layer(C.Structure):
    _fields_ = [("struct_size", u32), ("layer_id", i32), ("num_q_heads", i32), ("num_kv_heads", i32),
                ("head_dim_qk", i32), ("head_dim_v", i32), ("sm_scale", C.c_float),
                ("logit_softcap", C.c_float), ("sliding_window", i32), ("is_cross", i32), ("sinks", vp),
                ("k_cache", vp), ("v_cache", vp), ("k_scale", C.c_float), ("v_scale", C.c_float),
                # ABI 1.2
                ("slot_map", vp), ("attn_type", i32), ("q_descale", C.c_float), ("k_scale_tensor", vp),
                ("v_scale_tensor", vp), ("q_descale_tensor", vp)]


class sgl_attn_linear_io(C.Structure):
    _fields_ = [("struct_size", u32), ("kind", i32), ("x", vp), ("a", vp), ("b", vp), ("conv_weight", vp),
                ("conv_bias", vp), ("A_log", vp), ("dt_bias", vp), ("D", vp), ("decay", vp), ("out", vp),
                ("keep_intermediate", i32), ("use_qk_l2norm", i32),
                # ABI 1.2: caller-owned state
                ("conv_state", vp), ("ssm_state", vp), ("intermediate_conv_state", vp),
                ("intermediate_ssm_state", vp), ("state_indices", vp)]


class sgl_attn_dual_chunk(C.Structure):
    _fields_ = [("struct_size", u32), ("chunk_size", i32), ("local_size", i32), ("original_max_position", i32),
                ("q_succ", vp), ("q_inter", vp)]


class sgl_attn_forward_args(C.Structure):
    _fields_ = [("struct_size", u32), ("save_kv_cache", i32), ("layer", vp), ("batch", vp), ("q", vp),
                ("k", vp), ("v", vp), ("out", vp), ("linear", vp),
                # ABI 1.2
                ("lse", vp), ("q_rope", vp), ("k_rope", vp), ("topk_indices", vp), ("dual_chunk", vp)]


class sgl_attn_graph_args(C.Structure):
    _fields_ = [("struct_size", u32), ("batch_size", i32), ("num_tokens", i32), ("forward_mode", i32),
                ("batch", vp), ("stream", vp)]


class sgl_attn_ragged_args(C.Structure):
    _fields_ = [("struct_size", u32), ("batch_size", i32), ("num_q_heads", i32), ("num_kv_heads", i32),
                ("head_dim_qk", i32), ("head_dim_v", i32), ("sm_scale", C.c_float), ("logit_softcap", C.c_float),
                ("causal", i32), ("max_seqlen_q", i32), ("max_seqlen_k", i32), ("reserved_", i32),
                ("q", vp), ("k", vp), ("v", vp), ("cu_seqlens_q", vp), ("cu_seqlens_k", vp),
                ("cu_seqlens_q_cpu", vp), ("cu_seqlens_k_cpu", vp), ("out", vp), ("lse", vp), ("stream", vp)]


class sgl_attn_state_batch_args(C.Structure):
    _fields_ = [("struct_size", u32), ("op", i32), ("count", i32), ("dst", vp), ("src", vp), ("steps", vp),
                ("state", vp), ("stream", vp)]


FN_META = C.CFUNCTYPE(C.c_int, vp, vp)
FN_GRAPH_STATE = C.CFUNCTYPE(C.c_int, vp, i32, i32)
FN_FILL = C.CFUNCTYPE(i32, vp)
FN_LAST_ERROR = C.CFUNCTYPE(vp, vp)
FN_DESTROY = C.CFUNCTYPE(None, vp)
FN_STATE_CLEAR = C.CFUNCTYPE(C.c_int, vp, i32)
FN_STATE_COPY = C.CFUNCTYPE(C.c_int, vp, i32, i32)


class sgl_attn_backend_ops(C.Structure):
    _fields_ = [("struct_size", u32), ("init_forward_metadata", FN_META), ("forward_extend", FN_META),
                ("forward_decode", FN_META), ("init_graph_state", FN_GRAPH_STATE),
                ("init_forward_metadata_capture", FN_META), ("init_forward_metadata_replay", FN_META),
                ("graph_seq_len_fill_value", FN_FILL), ("last_error", FN_LAST_ERROR),
                ("destroy", FN_DESTROY), ("state_clear", FN_STATE_CLEAR), ("state_copy", FN_STATE_COPY),
                ("state_commit", FN_META),
                # ABI 1.2
                ("forward_ragged", FN_META), ("init_forward_metadata_in_graph", FN_META),
                ("state_batch", FN_META), ("indexer_topk", FN_META)]


class sgl_attn_backend(C.Structure):
    _fields_ = [("ops", C.POINTER(sgl_attn_backend_ops)), ("ops_size", u32), ("device", i32),
                ("host_reserved", vp)]


FN_DEV_ALLOC = C.CFUNCTYPE(C.c_int, i32, C.c_size_t, C.POINTER(vp))
FN_DEV_FREE = C.CFUNCTYPE(C.c_int, i32, vp)
FN_DEV_COPY = C.CFUNCTYPE(C.c_int, i32, vp, vp, C.c_size_t)
FN_DEV_SYNC = C.CFUNCTYPE(C.c_int, i32, vp)
FN_DEV_STREAM_CREATE = C.CFUNCTYPE(C.c_int, i32, C.POINTER(vp))
FN_DEV_ERROR_STRING = C.CFUNCTYPE(cp, C.c_int)


class sgl_attn_device_ops(C.Structure):
    _fields_ = [("struct_size", u32), ("alloc", FN_DEV_ALLOC), ("free", FN_DEV_FREE),
                ("copy_to_device", FN_DEV_COPY), ("copy_to_host", FN_DEV_COPY), ("synchronize", FN_DEV_SYNC),
                ("stream_create", FN_DEV_STREAM_CREATE), ("stream_destroy", FN_DEV_SYNC),
                ("error_string", FN_DEV_ERROR_STRING)]


# Every mirror the package uses, by the C name check_layout looks up.
MIRRORS: Dict[str, Type[C.Structure]] = {
    c.__name__: c for c in (
        DLDevice, DLDataType, DLTensor, DLManagedTensor, sgl_attn_host_options, sgl_attn_plugin_info,
        sgl_attn_select_request, sgl_attn_verdict, sgl_attn_create_options, sgl_attn_head_dims,
        sgl_attn_caps, sgl_attn_model, sgl_attn_batch, sgl_attn_layer, sgl_attn_linear_io,
        sgl_attn_dual_chunk, sgl_attn_forward_args, sgl_attn_graph_args, sgl_attn_ragged_args,
        sgl_attn_state_batch_args, sgl_attn_backend_ops, sgl_attn_backend,
        sgl_attn_device_ops)
}

# Laid out inside another struct or an array: the library's size must equal
# the mirror's.  Every other mirror is read or written through a pointer
# within its struct_size (or, for the verdict and the backend header, read
# field by field), so a newer library may have appended fields.
EXACT_SIZE = frozenset({"DLDevice", "DLDataType", "DLTensor", "DLManagedTensor", "sgl_attn_head_dims"})


def check_layout(layout: Mapping[str, Any], mirrors: Mapping[str, Type[C.Structure]] = MIRRORS,
                 constants: Mapping[str, int] = CONSTANTS, where: str = "libsglattn") -> None:
    """Raise AbiError unless every mirror matches the library's layout: each
    mirrored field at the same offset with the same size, sizes as EXACT_SIZE
    says, and every constant the package uses equal to the library's."""
    abi = layout.get("abi") or [None, None]
    if abi[0] != SGL_ATTN_ABI_MAJOR:
        raise AbiError(f"{where} speaks ABI {abi[0]}.{abi[1]}; this package mirrors ABI "
                       f"{SGL_ATTN_ABI_MAJOR}.x", "layout check")
    structs = layout.get("structs") or {}
    for name, cls in mirrors.items():
        lib = structs.get(name)
        if lib is None:
            raise AbiError(f"{where} (ABI {abi[0]}.{abi[1]}) has no struct {name}, which the package "
                           f"mirrors", "layout check")
        have: Dict[str, List[int]] = {f[0]: [int(f[1]), int(f[2])] for f in lib["fields"]}
        for field in cls._fields_:
            fname = field[0]
            desc = getattr(cls, fname)
            if fname not in have:
                raise AbiError(f"{name}.{fname}: the package's mirror has this field but {where} "
                               f"(ABI {abi[0]}.{abi[1]}) does not: the library is older than the package",
                               "layout check")
            off, size = have[fname]
            if desc.offset != off or desc.size != size:
                raise AbiError(f"{name}.{fname}: the package's mirror has it at offset {desc.offset} with "
                               f"size {desc.size}; {where} has offset {off}, size {size}", "layout check")
        mine = C.sizeof(cls)
        if name in EXACT_SIZE and lib["size"] != mine:
            raise AbiError(f"{name}: sizeof is {mine} in the package's mirror and {lib['size']} in {where}; "
                           f"it is laid out inside other structs, so they must be equal", "layout check")
        if lib["size"] < mine:
            raise AbiError(f"{name}: sizeof is {mine} in the package's mirror but {lib['size']} in {where}",
                           "layout check")
    lib_consts = layout.get("constants") or {}
    for cname, value in constants.items():
        if cname in lib_consts and lib_consts[cname] != value:
            raise AbiError(f"constant {cname} is {value} in the package and {lib_consts[cname]} in {where}",
                           "layout check")
