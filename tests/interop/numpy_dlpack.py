"""numpy_dlpack.py - Debian's NumPy (1.24) and cowstore exchange tensors
through the legacy DLPack ABI, both ways, with no copy (ctypes over
libcowstore.so; the Python module comes later).

Run with the interpreter that has python3-numpy (/usr/bin/python3):
    /usr/bin/python3 numpy_dlpack.py path/to/libcowstore.so
Prints "numpy_dlpack: N checks passed" or fails with an AssertionError.
"""
import ctypes
import gc
import os
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "support"))
from dlpack_ctypes import DLTensor  # noqa: E402

lib = ctypes.CDLL(sys.argv[1])
api = ctypes.pythonapi
checks = 0


def check(cond, what):
    global checks
    assert cond, what
    checks += 1


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "lazy_clones", "ctx_wraps", "eager_fallbacks", "materialize_copies",
        "materialize_steals", "bytes_copied", "external_copies",
        "pinned_clones", "snapshot_copies", "snapshot_persists")]


P = ctypes.c_void_p
I64 = ctypes.c_int64
lib.cow_last_error.restype = ctypes.c_char_p
for name, args in {
        "cow_tensor_arange": [ctypes.c_int, I64, P, ctypes.POINTER(P)],
        "cow_tensor_view": [P, ctypes.c_int, ctypes.POINTER(I64),
                            ctypes.POINTER(P)],
        "cow_tensor_lazy_clone": [P, ctypes.POINTER(P)],
        "cow_tensor_fill_": [P, ctypes.c_double],
        "cow_tensor_get_f64": [P, ctypes.POINTER(I64),
                               ctypes.POINTER(ctypes.c_double)],
        "cow_tensor_to_dlpack": [P, ctypes.c_uint, ctypes.POINTER(P)],
        "cow_tensor_from_dlpack": [P, ctypes.c_uint, ctypes.POINTER(P)],
        "cow_tensor_unpin": [P]}.items():
    getattr(lib, name).argtypes = args
    getattr(lib, name).restype = ctypes.c_int
for name in ("cow_tensor_release", "cow_stats_reset"):
    getattr(lib, name).restype = None
lib.cow_tensor_release.argtypes = [P]
lib.cow_tensor_const_data.argtypes = [P]
lib.cow_tensor_const_data.restype = P
lib.cow_tensor_storage.argtypes = [P]
lib.cow_tensor_storage.restype = P
lib.cow_storage_is_pinned.argtypes = [P]
lib.cow_storage_is_pinned.restype = ctypes.c_bool
lib.cow_stats_get.argtypes = [ctypes.POINTER(Stats)]
lib.cow_stats_get.restype = None
api.PyCapsule_New.argtypes = [P, ctypes.c_char_p, P]
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetPointer.restype = P
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int

FLOAT64, INT32 = 5, 2
READ_ONLY = 1
# Capsule names must outlive the capsules.
DLTENSOR = ctypes.c_char_p(b"dltensor")
USED = ctypes.c_char_p(b"used_dltensor")


def ok(status, what):
    assert status == 0, "%s: %s" % (what, lib.cow_last_error().decode())


def stats():
    s = Stats()
    lib.cow_stats_get(ctypes.byref(s))
    return s


def matrix():
    """A 3x4 float64 cowstore tensor 0..11."""
    a, t = P(), P()
    ok(lib.cow_tensor_arange(FLOAT64, 12, None, ctypes.byref(a)), "arange")
    ok(lib.cow_tensor_view(a, 2, (I64 * 2)(3, 4), ctypes.byref(t)), "view")
    lib.cow_tensor_release(a)
    return t


def get(t, *index):
    v = ctypes.c_double()
    ok(lib.cow_tensor_get_f64(t, (I64 * len(index))(*index),
                              ctypes.byref(v)), "get")
    return v.value


class Export:
    """What np.from_dlpack takes: an object with __dlpack__."""

    def __init__(self, managed):
        # No destructor: NumPy consumes the capsule (and renames it).
        self.capsule = api.PyCapsule_New(managed, DLTENSOR.value, None)

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def drop_on_thread(holder):
    """Drop the last Python reference (in the list @holder) on another
    thread."""
    th = threading.Thread(target=holder.clear)
    th.start()
    th.join()


def export(t, flags):
    m = P()
    ok(lib.cow_tensor_to_dlpack(t, flags, ctypes.byref(m)), "to_dlpack")
    return m


# 1. A writable export: NumPy's array is the tensor's memory, the storage
# is pinned while NumPy holds it, and a snapshot taken meanwhile copies.
lib.cow_stats_reset()
t = matrix()
arr = np.from_dlpack(Export(export(t, 0)))
check(arr.shape == (3, 4) and arr.dtype == np.float64, "shape and dtype")
check((arr == np.arange(12.0).reshape(3, 4)).all(), "values")
check(arr.ctypes.data == lib.cow_tensor_const_data(t), "zero copy")
check(lib.cow_storage_is_pinned(lib.cow_tensor_storage(t)), "pinned")
snap = P()
ok(lib.cow_tensor_lazy_clone(t, ctypes.byref(snap)), "lazy_clone")
check(stats().pinned_clones == 1, "the snapshot of a pinned tensor copies")
# NumPy drops its array on another thread: the deleter runs there.
holder = [arr]
del arr
drop_on_thread(holder)
gc.collect()
check(not lib.cow_storage_is_pinned(lib.cow_tensor_storage(t)),
      "NumPy's release of the array ran the deleter (unpinned)")

# 2. A read-only export is a snapshot: later writes do not show through.
ro = np.from_dlpack(Export(export(t, READ_ONLY)))
before = stats().bytes_copied
ok(lib.cow_tensor_fill_(t, -1.0), "fill_")
check(ro[2, 3] == 11.0 and get(t, 2, 3) == -1.0, "snapshot kept its bytes")
check(not ro.flags.writeable, "NumPy imports read-only")
check(stats().bytes_copied - before == 12 * 8,
      "the write copied once, the export had not")


holder = [ro]
del ro
drop_on_thread(holder)
gc.collect()
lib.cow_tensor_release(snap)
lib.cow_tensor_release(t)

# 3. Import from NumPy: the tensor aliases the array, is pinned for its
# life, and releasing it (on another thread) gives the array back.
a = np.arange(6, dtype=np.int32).reshape(2, 3)
base = sys.getrefcount(a)
cap = a.__dlpack__()
managed = api.PyCapsule_GetPointer(cap, DLTENSOR.value)
imp = P()
ok(lib.cow_tensor_from_dlpack(managed, 0, ctypes.byref(imp)), "from_dlpack")
check(api.PyCapsule_SetName(cap, USED.value) == 0, "capsule renamed")
del cap
check(lib.cow_tensor_const_data(imp) == a.ctypes.data, "zero copy import")
check(get(imp, 1, 2) == 5.0, "imported values")
a[0, 0] = 100
check(get(imp, 0, 0) == 100.0, "the import aliases NumPy's memory")
check(lib.cow_storage_is_pinned(lib.cow_tensor_storage(imp)),
      "a writable import is pinned for life")
clone = P()
ok(lib.cow_tensor_lazy_clone(imp, ctypes.byref(clone)), "clone of import")
a[0, 1] = 200
check(get(clone, 0, 1) == 1.0, "the snapshot does not share NumPy's bytes")
lib.cow_tensor_release(clone)
check(sys.getrefcount(a) > base, "the import holds the array")
th = threading.Thread(target=lib.cow_tensor_release, args=(imp,))
th.start()
th.join()
gc.collect()
check(sys.getrefcount(a) == base,
      "the last release called NumPy's deleter once (refcount %d, %d)"
      % (sys.getrefcount(a), base))

# 4. A read-only import of NumPy's memory: a write copies, NumPy's array
# keeps its values.
b = np.full(4, 7.0)
cap = b.__dlpack__()
ok(lib.cow_tensor_from_dlpack(api.PyCapsule_GetPointer(cap, DLTENSOR.value),
                              READ_ONLY, ctypes.byref(imp)), "read-only")
api.PyCapsule_SetName(cap, USED.value)
del cap
ok(lib.cow_tensor_fill_(imp, 1.0), "fill_ of a read-only import")
check((b == 7.0).all() and get(imp, 3) == 1.0, "NumPy's memory untouched")
lib.cow_tensor_release(imp)

# 5. Every dtype NumPy exchanges through DLPack (bool it refuses), both
# ways: an import has the matching dtype and NumPy's values, and NumPy
# reads an export of it back with the same dtype and bytes.
lib.cow_tensor_dtype.argtypes = [P]
lib.cow_tensor_dtype.restype = ctypes.c_int
DTYPES = {"int8": 6, "int16": 7, "int32": 2, "int64": 3, "uint8": 1,
          "uint16": 8, "uint32": 9, "uint64": 10, "float16": 11,
          "float32": 4, "float64": 5, "complex64": 13, "complex128": 14}
for name, code in DTYPES.items():
    a = (np.arange(5) * 3 - 2).astype(name)
    cap = a.__dlpack__()
    ok(lib.cow_tensor_from_dlpack(api.PyCapsule_GetPointer(
        cap, DLTENSOR.value), 0, ctypes.byref(imp)), "import " + name)
    api.PyCapsule_SetName(cap, USED.value)
    del cap
    check(lib.cow_tensor_dtype(imp) == code, "%s imports as dtype %d"
          % (name, lib.cow_tensor_dtype(imp)))
    check(get(imp, 4) == float(a[4].real), "%s: element 4 is %r, not %r"
          % (name, get(imp, 4), a[4]))
    back = np.from_dlpack(Export(export(imp, READ_ONLY)))
    check(back.dtype == a.dtype and back.tobytes() == a.tobytes(),
          "%s: NumPy reads the export back as %s" % (name, back.dtype))
    del back
    gc.collect()
    lib.cow_tensor_release(imp)

print("numpy_dlpack: %d checks passed (NumPy %s)" % (checks, np.__version__))
