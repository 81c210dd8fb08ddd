"""ctypes_host.py LIBRARY - Python's ctypes loads libcowstore.so (a dlopen)
and runs lazy clone, materialise and release, on the main thread and on two
threads at once."""
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
lib.cow_storage_new.argtypes = [ctypes.c_size_t, P, ctypes.POINTER(P)]
lib.cow_storage_lazy_clone.argtypes = [P, ctypes.POINTER(P)]
lib.cow_storage_mutable_data.argtypes = [P, ctypes.POINTER(P)]
lib.cow_storage_const_data.argtypes = [P]
lib.cow_storage_const_data.restype = P
lib.cow_storage_release.argtypes = [P]
lib.cow_storage_release.restype = None
lib.cow_last_error.restype = ctypes.c_char_p
N = 1 << 20


def check(status):
    if status != 0:
        raise SystemExit("ctypes host: FAIL: " +
                         lib.cow_last_error().decode())


def exercise(seed):
    a, b, p = P(), P(), P()
    check(lib.cow_storage_new(N, None, ctypes.byref(a)))
    check(lib.cow_storage_mutable_data(a, ctypes.byref(p)))
    if ctypes.string_at(p, N) != bytes(N):
        raise SystemExit("ctypes host: FAIL: not zero-filled")
    ctypes.memset(p, seed, N)
    check(lib.cow_storage_lazy_clone(a, ctypes.byref(b)))
    if lib.cow_storage_const_data(a) != lib.cow_storage_const_data(b):
        raise SystemExit("ctypes host: FAIL: the clone does not share")
    check(lib.cow_storage_mutable_data(b, ctypes.byref(p)))
    if p.value == lib.cow_storage_const_data(a):
        raise SystemExit("ctypes host: FAIL: the write did not copy")
    ctypes.memset(p, (seed + 1) & 0xff, N)
    if ctypes.string_at(lib.cow_storage_const_data(a), N) != bytes([seed]) * N:
        raise SystemExit("ctypes host: FAIL: the write reached the source")
    lib.cow_storage_release(a)
    lib.cow_storage_release(b)


def worker(seed, errors):
    try:
        for i in range(50):
            exercise((seed + i) & 0xff)
    except BaseException as e:  # SystemExit too: a thread must report it
        errors.append(e)


exercise(5)
errors = []
threads = [threading.Thread(target=worker, args=(s, errors)) for s in (20, 90)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    raise SystemExit(str(errors[0]))
print("ctypes host: ok")
