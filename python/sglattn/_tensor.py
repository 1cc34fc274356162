"""Arrays as DLTensors.

A torch tensor (CPU or CUDA) is described directly: data pointer, shape,
strides (NULL when compact, as DLPack 0.6 allows), dtype and device, with no
capsule and no copy; the TensorRef keeps the tensor alive.  Any other object
with __dlpack__ (a numpy array on the CPU, ...) goes through its capsule: the
DLTensor inside the producer's DLManagedTensor is used in place and the
capsule is kept alive (it frees the tensor when collected).  Host index
lists (sglang's extend_*_lens_cpu are Python lists) become int64 arrays of
our own.

torch and numpy are never imported here: a torch tensor is recognised only
when torch is already loaded.
"""
from __future__ import annotations

import ctypes as C
import sys
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _abi as A

_pyapi = C.pythonapi
_capsule_get_pointer = _pyapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = C.c_void_p
_capsule_get_pointer.argtypes = [C.py_object, C.c_char_p]
_capsule_is_valid = _pyapi.PyCapsule_IsValid
_capsule_is_valid.restype = C.c_int
_capsule_is_valid.argtypes = [C.py_object, C.c_char_p]

# torch dtype name -> (DLPack code, bits)
_TORCH_DTYPES: Dict[str, Tuple[int, int]] = {
    "float32": (A.kDLFloat, 32), "float16": (A.kDLFloat, 16), "bfloat16": (A.kDLBfloat, 16),
    "float64": (A.kDLFloat, 64), "int32": (A.kDLInt, 32), "int64": (A.kDLInt, 64), "int16": (A.kDLInt, 16),
    "int8": (A.kDLInt, 8), "uint8": (A.kDLUInt, 8), "bool": (A.kDLUInt, 8),
    "float8_e4m3fn": (A.SGL_ATTN_DL_FLOAT8_E4M3_CODE, 8),
}
_dtype_cache: Dict[Any, Tuple[int, int]] = {}


def torch_module() -> Any:
    """torch if the process has imported it, else None."""
    return sys.modules.get("torch")


def is_torch_tensor(obj: Any) -> bool:
    t = sys.modules.get("torch")
    return t is not None and isinstance(obj, t.Tensor)


def torch_dl_dtype(dtype: Any) -> Tuple[int, int]:
    r = _dtype_cache.get(dtype)
    if r is None:
        name = str(dtype).rsplit(".", 1)[-1]
        if name not in _TORCH_DTYPES:
            raise TypeError(f"torch dtype {dtype} has no DLPack type sglattn passes (expected one of "
                            f"{', '.join(sorted(_TORCH_DTYPES))})")
        r = _dtype_cache[dtype] = _TORCH_DTYPES[name]
    return r


def torch_dl_device(t: Any) -> Tuple[int, int]:
    dev = t.device
    if dev.type == "cpu":
        return A.kDLCPU, 0
    if dev.type == "cuda":
        # torch on ROCm reports "cuda" too; its DLPack device is ROCm
        hip = getattr(sys.modules["torch"].version, "hip", None)
        return (A.kDLROCM if hip else A.kDLCUDA), int(dev.index or 0)
    raise TypeError(f"tensor on device {dev}: sglattn passes CPU and CUDA torch tensors "
                    f"(other devices through __dlpack__)")


class TensorRef:
    """One DLTensor and the objects that keep its memory alive.  `addr` is
    the DLTensor's address, what the ABI's `const DLTensor *` fields take."""

    __slots__ = ("dl", "shape", "strides", "owner", "addr", "__weakref__")

    def __init__(self) -> None:
        self.dl = A.DLTensor()
        self.shape: Any = None
        self.strides: Any = None
        self.owner: Any = None
        self.addr = C.addressof(self.dl)

    # ------------------------------------------------------------- torch
    def set_torch(self, t: Any) -> "TensorRef":
        ndim = t.dim()
        code, bits = torch_dl_dtype(t.dtype)
        dtype, dev = self.dl.dtype, self.dl.device
        dtype.code, dtype.bits, dtype.lanes = code, bits, 1
        dev.device_type, dev.device_id = torch_dl_device(t)
        if self.shape is None or len(self.shape) != max(ndim, 1):
            self.shape = (C.c_int64 * max(ndim, 1))()
            self.strides = (C.c_int64 * max(ndim, 1))()
        shape, strides = t.shape, t.stride()
        for i in range(ndim):
            self.shape[i] = shape[i]
            self.strides[i] = strides[i]
        self.dl.ndim = ndim
        self.dl.shape = C.addressof(self.shape)
        self.dl.strides = None if t.is_contiguous() else C.addressof(self.strides)
        self.dl.byte_offset = 0
        self.dl.data = t.data_ptr() or None
        self.owner = t
        return self

    # ------------------------------------------------------------ dlpack
    def set_dlpack(self, obj: Any, stream: Optional[int] = None) -> "TensorRef":
        dev_type = None
        if hasattr(obj, "__dlpack_device__"):
            dev_type, _ = obj.__dlpack_device__()
        if dev_type in (A.kDLCPU, A.kDLCUDAHost, None):
            capsule = obj.__dlpack__()
        else:
            capsule = obj.__dlpack__(stream=stream if stream else None)
        if not _capsule_is_valid(capsule, b"dltensor"):
            raise TypeError(f"{type(obj).__name__}.__dlpack__() did not return an unconsumed 'dltensor' capsule")
        ptr = _capsule_get_pointer(capsule, b"dltensor")
        managed = A.DLManagedTensor.from_address(ptr)
        # Point at the producer's DLTensor; the capsule owns it and frees it
        # (its deleter) when collected, after this ref lets go.
        self.dl = managed.dl_tensor
        self.addr = ptr + A.DLManagedTensor.dl_tensor.offset
        self.shape = self.strides = None
        self.owner = (capsule, obj)
        return self

    # ------------------------------------------------------------- lists
    def set_host_ints(self, values: Sequence[int]) -> "TensorRef":
        n = len(values)
        arr = (C.c_int64 * max(n, 1))(*values)
        self.shape = (C.c_int64 * 1)(n)
        self.strides = None
        self.dl.data = C.addressof(arr)
        self.dl.device.device_type, self.dl.device.device_id = A.kDLCPU, 0
        self.dl.ndim = 1
        self.dl.dtype.code, self.dl.dtype.bits, self.dl.dtype.lanes = A.kDLInt, 64, 1
        self.dl.shape = C.addressof(self.shape)
        self.dl.strides = None
        self.dl.byte_offset = 0
        self.owner = arr
        return self


def describe(obj: Any, stream: Optional[int] = None) -> TensorRef:
    """A TensorRef for a torch tensor, a __dlpack__ object, or a list/tuple
    of ints (an int64 host array)."""
    if is_torch_tensor(obj):
        return TensorRef().set_torch(obj)
    if hasattr(obj, "__dlpack__"):
        return TensorRef().set_dlpack(obj, stream)
    if isinstance(obj, (list, tuple)):
        return TensorRef().set_host_ints([int(v) for v in obj])
    raise TypeError(f"cannot pass {type(obj).__name__} as a tensor: expected a torch tensor, an object with "
                    f"__dlpack__ (numpy...), or a list of ints")


def dims(ref: TensorRef) -> Tuple[int, ...]:
    sh = C.cast(C.c_void_p(ref.dl.shape), C.POINTER(C.c_int64))
    return tuple(sh[i] for i in range(ref.dl.ndim))


def is_device_ref(ref: TensorRef) -> bool:
    return ref.dl.device.device_type not in (A.kDLCPU, A.kDLCUDAHost)
