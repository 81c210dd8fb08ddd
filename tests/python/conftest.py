"""Shared fixtures and helpers for the cowstore Python test suites.

Run with Debian's interpreter (it has NumPy 1.24, PyTorch 1.13, pytest and
hypothesis):

    PYTHONPATH=build/py/python /usr/bin/python3 -m pytest -q tests/python

Environment:
- COWSTORE_PY_SKIP_TORCH=1 skips every PyTorch test (the `torch` fixture),
  e.g. under ASan with libasan preloaded, where torch may misbehave.
- COWSTORE_PY_THREAD_SECONDS: wall time of the thread test (default 20).
- COWSTORE_HYPOTHESIS_PROFILE: "cowstore" (default: 150 derandomized
  examples per property, the same every run) or "cowstore-long" (2000
  random examples, for a longer hunt by hand).

Helpers used by several files are plain functions here; the test files
import them with `from conftest import ...` (pytest puts this folder on
sys.path: the default "prepend" import mode, no __init__.py).
"""
import ctypes
import gc
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import cowstore

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "support"))
from dlpack_ctypes import DLDataType, DLDevice, DLTensor  # noqa: E402

# ---------------------------------------------------------------------------
# Hypothesis: deterministic examples (CI reruns see the same programs).

settings.register_profile(
    "cowstore",
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "cowstore-long",
    max_examples=2000,
    deadline=None,
    derandomize=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("COWSTORE_HYPOTHESIS_PROFILE", "cowstore"))

# ---------------------------------------------------------------------------
# Dtypes.

ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
              "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
              "complex64", "complex128")
# Every dtype NumPy has (all but bfloat16).
NUMPY_DTYPES = tuple(d for d in ALL_DTYPES if d != "bfloat16")
# The dtypes NumPy 1.24 exports through DLPack (it refuses bool).
NUMPY_DLPACK_DTYPES = tuple(d for d in NUMPY_DTYPES if d != "bool")
# The dtypes PyTorch 1.13 exchanges through DLPack. It has no uint16, uint32
# or uint64, and although it has bool, 1.13 refuses to export it ("Bool type
# is not supported by dlpack") and to import it ("Unsupported code 6",
# kDLBool): test_roundtrip.py checks that refusal separately.
TORCH_DLPACK_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16",
                       "bfloat16", "float32", "float64", "complex64",
                       "complex128")
INT_DTYPES = ("int8", "int16", "int32", "int64")
UINT_DTYPES = ("uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
            "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "float16": 2,
            "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8,
            "complex128": 16}
# Buffer-protocol formats (docs/python.md); bfloat16 has none.
FORMATS = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h",
           "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
           "uint64": "Q", "float16": "e", "float32": "f", "float64": "d",
           "complex64": "Zf", "complex128": "Zd"}


def sample(dtype, shape, seed=0):
    """A NumPy array of `dtype` and `shape` with small distinct-ish values
    that every dtype represents exactly (and a few negatives for signed
    ones). `seed` shifts the pattern."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    k = np.arange(n, dtype=np.int64) + seed
    if dtype == "bool":
        v = (k % 3) == 0
    elif dtype in UINT_DTYPES:
        v = k % 13
    elif dtype in INT_DTYPES:
        v = k % 11 - 5
    elif dtype in FLOAT_DTYPES:
        v = (k % 17 - 8) * 0.5
    elif dtype in COMPLEX_DTYPES:
        v = (k % 9 - 4) * 0.5 + 1j * (k % 5 - 2)
    else:
        raise ValueError(dtype)
    return np.ascontiguousarray(v.astype(np.dtype(dtype)).reshape(shape))


def addr(a):
    """The address of a NumPy array's element [0, ..., 0]."""
    return a.__array_interface__["data"][0]


def same_strides(shape, a, b):
    """Strides agree wherever they matter: dimensions of size 1 may have any
    stride (NumPy gives a new axis 0, PyTorch its neighbour's extent), and a
    tensor with no elements has no meaningful strides."""
    shape, a, b = tuple(shape), tuple(a), tuple(b)
    if len(shape) != len(a) or len(a) != len(b):
        return False
    if 0 in shape:
        return True
    return all(n == 1 or x == y for n, x, y in zip(shape, a, b))


def collect():
    """Run the cyclic collector until nothing more is found."""
    for _ in range(3):
        if gc.collect() == 0:
            break


def live_bytes():
    return cowstore.memory_stats()["live_bytes"]


def np_equal(a, b):
    """Exact equality of values and shape, NaN equal to NaN."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    np.testing.assert_array_equal(a, b)
    return True


def to_numpy_values(t):
    """The values of a cowstore tensor as a NumPy array (a copy through
    tolist(), the path that involves no buffer or DLPack export)."""
    if t.dtype == "bfloat16":
        return np.array(t.tolist(), dtype=np.float32).reshape(t.shape)
    return np.array(t.tolist(), dtype=np.dtype(t.dtype)).reshape(t.shape)


def gil_pauses(runs, tries=5, enough=0.5):
    """For each of @runs ({name: callable}), the longest stretch of one call
    during which another Python thread (a ticker appending timestamps)
    ran nothing, as a fraction of the call's time: the best of up to
    @tries calls, stopping at the first below @enough. A call that holds
    the GIL throughout gives 1.0; one that releases it, far less."""
    import sys
    import threading
    import time
    stamps = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    th = threading.Thread(target=ticker)
    th.start()
    results = {}
    try:
        for name, run in runs.items():
            best = None
            for _ in range(tries):
                n0 = len(stamps)
                t0 = time.perf_counter()
                r = run()
                t1 = time.perf_counter()
                del r
                inside = [s for s in stamps[n0:] if t0 <= s <= t1]
                edges = [t0] + inside + [t1]
                gap = max(b - a for a, b in zip(edges, edges[1:]))
                ratio = gap / (t1 - t0)
                best = ratio if best is None else min(best, ratio)
                if best < enough:
                    break
            results[name] = best
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(old)
    return results


# ---------------------------------------------------------------------------
# ctypes access to capsules and the buffer protocol.

api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                              ctypes.c_void_p]
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_IsValid.restype = ctypes.c_int
api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_name(cap):
    return api.PyCapsule_GetName(cap).decode()


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor),
                            ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion),
                                     ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", DELETER_V),
                                     ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

DLPACK_FLAG_READ_ONLY = 1 << 0
DLPACK_FLAG_IS_COPIED = 1 << 1

kDLCPU, kDLCUDA = 1, 2
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool = 0, 1, 2, 4, 5, 6


def capsule_struct(cap):
    """The DLManagedTensor(Versioned) a live (unused) capsule points at."""
    name = capsule_name(cap)
    ptr = api.PyCapsule_GetPointer(cap, name.encode())
    if name == "dltensor":
        return ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor)).contents
    if name == "dltensor_versioned":
        return ctypes.cast(
            ptr, ctypes.POINTER(DLManagedTensorVersioned)).contents
    raise AssertionError("not an unused DLPack capsule: %r" % name)


class HandMadeDLPack:
    """A DLPack producer made by hand with ctypes: memory from a NumPy array
    (kept alive here), any device/dtype/version/flags, and a deleter that
    counts its calls. capsule() returns a fresh capsule with no destructor
    (so only a consumer calls the deleter)."""

    def __init__(self, array, device=(kDLCPU, 0), dtype=None, versioned=False,
                 version=(1, 0), flags=0, name=None, lanes=1):
        self.array = array
        self.calls = 0
        self.versioned = versioned
        self.shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        self.strides = (ctypes.c_int64 * max(array.ndim, 1))(
            *[s // array.itemsize for s in array.strides])
        if dtype is None:
            kind = array.dtype.kind
            code = {"i": kDLInt, "u": kDLUInt, "f": kDLFloat,
                    "c": kDLComplex, "b": kDLBool}[kind]
            dtype = (code, array.itemsize * 8)
        dl = DLTensor()
        dl.data = addr(array)
        dl.device = DLDevice(*device)
        dl.ndim = array.ndim
        dl.dtype = DLDataType(dtype[0], dtype[1], lanes)
        dl.shape = self.shape
        dl.strides = self.strides
        dl.byte_offset = 0
        if versioned:
            self.managed = DLManagedTensorVersioned()
            self.managed.version = DLPackVersion(*version)
            self.managed.flags = flags
            self._deleter = DELETER_V(self._on_delete)
            default_name = b"dltensor_versioned"
        else:
            self.managed = DLManagedTensor()
            self._deleter = DELETER(self._on_delete)
            default_name = b"dltensor"
        self.managed.dl_tensor = dl
        self.managed.manager_ctx = None
        self.managed.deleter = self._deleter
        self.name = default_name if name is None else name

    def _on_delete(self, _ptr):
        self.calls += 1

    def capsule(self):
        return api.PyCapsule_New(ctypes.addressof(self.managed), self.name,
                                 None)


class Py_buffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
                ("internal", ctypes.c_void_p)]


api.PyObject_GetBuffer.restype = ctypes.c_int
api.PyObject_GetBuffer.argtypes = [ctypes.py_object,
                                   ctypes.POINTER(Py_buffer), ctypes.c_int]
api.PyBuffer_Release.restype = None
api.PyBuffer_Release.argtypes = [ctypes.POINTER(Py_buffer)]

PyBUF_SIMPLE = 0
PyBUF_WRITABLE = 0x0001
PyBUF_FORMAT = 0x0004
PyBUF_ND = 0x0008
PyBUF_STRIDES = 0x0010 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x0020 | PyBUF_STRIDES
PyBUF_F_CONTIGUOUS = 0x0040 | PyBUF_STRIDES
PyBUF_ANY_CONTIGUOUS = 0x0080 | PyBUF_STRIDES
PyBUF_INDIRECT = 0x0100 | PyBUF_STRIDES
PyBUF_FULL_RO = PyBUF_INDIRECT | PyBUF_FORMAT
PyBUF_RECORDS = PyBUF_STRIDES | PyBUF_WRITABLE | PyBUF_FORMAT


class Buffer:
    """PyObject_GetBuffer(obj, flags) through ctypes, as a context manager
    that releases the buffer. A refused request raises the exporter's
    exception from __init__ (ctypes.pythonapi checks the error indicator)."""

    def __init__(self, obj, flags):
        self.held = False
        self.view = Py_buffer()
        api.PyObject_GetBuffer(obj, ctypes.byref(self.view), flags)
        self.held = True

    def release(self):
        if self.held:
            api.PyBuffer_Release(ctypes.byref(self.view))
            self.held = False

    def __enter__(self):
        return self.view

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        self.release()


class _ArrayInterface:
    pass


def writable_array(t):
    """A writable NumPy array over `t`'s memory obtained through a writable
    buffer request (PyBUF_RECORDS: strides, format, writable), as a consumer
    that means to write asks for it. The buffer is released when the array
    (its base holds it) goes. NumPy 1.24's own np.asarray() asks for a
    read-only buffer (PyMemoryView_FromObject), so it cannot be used to
    make this request."""
    b = Buffer(t, PyBUF_RECORDS)
    v = b.view
    h = _ArrayInterface()
    h.__array_interface__ = {
        "version": 3,
        "data": (v.buf or 0, bool(v.readonly)),
        "shape": tuple(v.shape[i] for i in range(v.ndim)),
        "strides": tuple(v.strides[i] for i in range(v.ndim)),
        "typestr": np.dtype(t.dtype).str,
    }
    h.buffer = b
    return np.asarray(h)


# ---------------------------------------------------------------------------
# Fixtures.

@pytest.fixture(scope="session")
def torch():
    """PyTorch, or a skip: not installed, or COWSTORE_PY_SKIP_TORCH=1."""
    if os.environ.get("COWSTORE_PY_SKIP_TORCH") == "1":
        pytest.skip("COWSTORE_PY_SKIP_TORCH=1")
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_process_state():
    """Every test starts and ends with the process-wide modes it found: the
    reshape mode, the shadow policy and the memory limit."""
    mode = cowstore.get_reshape_mode()
    policy = cowstore.get_shadow_policy()
    limit = cowstore.memory_limit()
    try:
        yield
    finally:
        cowstore.set_reshape_mode(mode)
        cowstore.set_shadow_policy(policy)
        cowstore.set_memory_limit(limit)
