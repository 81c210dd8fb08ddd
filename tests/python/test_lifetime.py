"""Lifetimes: every producer's deleter runs exactly once, capsules are
consumed at most once, nothing leaks and no reference cycle keeps memory
alive (docs/python.md, "DLPack" and "The buffer protocol")."""
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import cowstore
from conftest import (DLPACK_FLAG_IS_COPIED, DLPACK_FLAG_READ_ONLY,
                      HandMadeDLPack, addr, capsule_name, collect,
                      live_bytes, writable_array)


class Counter:
    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1


def refcount(obj):
    return sys.getrefcount(obj) - 1  # without getrefcount's argument


# ---------------------------------------------------------------------------
# Producers get their references back exactly once

def test_numpy_import_releases_the_array_once():
    a = np.arange(64, dtype=np.float64)
    rc = refcount(a)
    t = cowstore.from_dlpack(a)
    assert refcount(a) > rc  # the export holds the array
    v = t[3:9]
    s = v.lazy_clone()
    w = t.reshape(8, 8)
    del t
    collect()
    assert refcount(a) > rc  # views still hold the storage
    del v, w
    collect()
    # the eager clone owns its copy and holds nothing of a
    assert refcount(a) == rc
    assert s.tolist() == [float(i) for i in range(3, 9)]


def test_numpy_import_finaliser_runs_once_when_the_last_view_goes():
    owner = np.arange(32, dtype=np.int32)
    fin = Counter()
    weakref.finalize(owner, fin)
    t = cowstore.from_dlpack(owner[4:])  # the export holds a view of owner
    v = t[::2]
    del owner
    collect()
    assert fin.n == 0
    assert v[0].item() == 4
    del t
    collect()
    assert fin.n == 0
    del v
    collect()
    assert fin.n == 1


def test_from_buffer_releases_the_buffer_once():
    ba = bytearray(64)
    rc = refcount(ba)
    t = cowstore.from_buffer(ba, dtype="float32")
    assert t.shape == (16,)
    with pytest.raises(BufferError):
        ba.append(1)  # exported: cannot resize
    c = t.lazy_clone()  # writable buffer: pinned for life, an eager copy
    u = t[2:5]
    del t
    collect()
    with pytest.raises(BufferError):
        ba.append(1)
    del u
    collect()
    assert refcount(ba) == rc
    ba.append(1)  # released: resizable again
    assert len(ba) == 65
    assert c.numel() == 16


def test_from_buffer_read_only_releases_after_the_last_share():
    b = bytes(bytearray(range(32)))
    rc = refcount(b)
    t = cowstore.from_buffer(b, dtype="uint8")
    c = t.lazy_clone()  # shares the bytes lazily: holds the buffer too
    del t
    collect()
    assert refcount(b) > rc
    assert c[31].item() == 31
    c.fill_(0)  # the copy lets go of the read-only memory
    collect()
    assert refcount(b) == rc
    assert b == bytes(range(32))


def test_torch_import_releases_torch_storage_once(torch):
    # torch.from_numpy's storage holds the NumPy array until ATen's last
    # reference to the storage goes: the array's refcount shows whether
    # cowstore gave its reference back, once.
    a = np.arange(100, dtype=np.float32)
    rc = refcount(a)
    x = torch.from_numpy(a)
    assert refcount(a) == rc + 1
    t = cowstore.from_dlpack(x)
    assert t.data_ptr() == addr(a)
    del x
    collect()
    assert refcount(a) == rc + 1  # t holds the storage
    v = t[10:20]
    del t
    collect()
    x2 = torch.from_dlpack(v)  # round trip through cowstore
    assert x2.data_ptr() == addr(a) + 40
    del v
    collect()
    assert refcount(a) == rc + 1  # x2 holds cowstore's export
    x2.fill_(1)
    assert a[10] == 1.0
    del x2
    collect()
    assert refcount(a) == rc


def test_import_released_on_another_thread():
    a = np.arange(16, dtype=np.int64)
    rc = refcount(a)
    box = [cowstore.from_dlpack(a)]

    def drop():
        del box[0]
        gc.collect()

    th = threading.Thread(target=drop)
    th.start()
    th.join()
    collect()
    assert refcount(a) == rc


def test_export_consumer_released_on_another_thread():
    t = cowstore.arange(16, dtype="float32")
    box = [np.from_dlpack(t)]
    assert t.is_pinned()
    th = threading.Thread(target=box.clear)
    th.start()
    th.join()
    collect()
    assert not t.is_pinned()


# ---------------------------------------------------------------------------
# Hand-made producers: the deleter is counted exactly

def test_hand_made_capsule_deleter_runs_once():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    p = HandMadeDLPack(a)
    cap = p.capsule()
    t = cowstore.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    assert t.data_ptr() == addr(a)
    assert t.tolist() == a.tolist()
    assert p.calls == 0
    v = t.T
    del t
    collect()
    assert p.calls == 0
    del v
    collect()
    assert p.calls == 1
    del cap
    collect()
    assert p.calls == 1


@pytest.mark.parametrize("flags", [0, DLPACK_FLAG_READ_ONLY,
                                   DLPACK_FLAG_IS_COPIED])
def test_hand_made_versioned_capsule_deleter_runs_once(flags):
    a = np.arange(6, dtype=np.int16)
    keep = a.copy()
    p = HandMadeDLPack(a, versioned=True, flags=flags)
    cap = p.capsule()
    t = cowstore.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned"
    assert t.data_ptr() == addr(a)
    assert t.is_read_only() == bool(flags & DLPACK_FLAG_READ_ONLY)
    # only a writable, not copied import is pinned for life
    assert t.is_pinned() == (flags == 0)
    c = t.lazy_clone()
    assert c.shares_data(t) == (flags != 0)
    c.fill_(9)
    if flags != DLPACK_FLAG_IS_COPIED:
        np.testing.assert_array_equal(a, keep)
    del c, t
    collect()
    assert p.calls == 1


def test_error_paths_run_the_deleter_once():
    # A refused import calls the producer's deleter before raising.
    a = np.arange(4, dtype=np.float32)
    for kw in [dict(device=(2, 0)), dict(dtype=(2, 8)), dict(lanes=4),
               dict(versioned=True, version=(2, 0))]:
        p = HandMadeDLPack(a, **kw)
        cap = p.capsule()
        with pytest.raises((BufferError, TypeError, ValueError)) as e:
            cowstore.from_dlpack(cap)
        assert str(e.value)
        collect()
        assert p.calls == 1, kw
        # and the capsule is taken over: a second try is refused, no call
        with pytest.raises((BufferError, TypeError, ValueError)):
            cowstore.from_dlpack(cap)
        collect()
        assert p.calls == 1, kw


# ---------------------------------------------------------------------------
# Capsules consumed twice, or never

def test_capsule_consumed_twice_raises():
    t = cowstore.arange(4, dtype="int32")
    cap = t.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    u = cowstore.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    with pytest.raises((BufferError, TypeError, ValueError)) as e:
        cowstore.from_dlpack(cap)
    assert str(e.value)
    assert u.tolist() == [0, 1, 2, 3]
    # The import of our own export released it (issue 36: u is a view of
    # t's storage): the deleter ran once, one pin and one unpin.
    assert u.shares_storage(t)
    assert not t.is_pinned()
    del u
    collect()
    assert not t.is_pinned()
    del cap
    collect()
    assert not t.is_pinned()


def test_numpy_capsule_consumed_twice_raises():
    a = np.arange(5, dtype=np.uint16)
    rc = refcount(a)
    cap = a.__dlpack__()
    t = cowstore.from_dlpack(cap)
    with pytest.raises((BufferError, TypeError, ValueError)):
        cowstore.from_dlpack(cap)
    del t, cap
    collect()
    assert refcount(a) == rc


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 3)])
def test_capsule_dropped_unconsumed_runs_the_deleter(max_version):
    collect()
    t = cowstore.arange(8, dtype="float64")
    start = live_bytes()
    cap = t.__dlpack__(max_version=max_version)
    expect = "dltensor" if max_version is None or max_version[0] < 1 \
        else "dltensor_versioned"
    assert capsule_name(cap) == expect
    assert t.is_pinned()
    del cap
    collect()
    assert not t.is_pinned()
    assert live_bytes() == start


@pytest.mark.parametrize("kw", [dict(copy=True), dict(read_only=True),
                                dict(max_version=(1, 0), copy=True)])
def test_copy_and_read_only_capsules_dropped_free_their_memory(kw):
    collect()
    start = live_bytes()
    t = cowstore.arange(1000, dtype="float32")
    cap = t.__dlpack__(**kw)
    assert not t.is_pinned()
    del cap
    collect()
    assert t.tolist() == [float(i) for i in range(1000)]
    del t
    collect()
    assert live_bytes() == start


def test_numpy_capsule_dropped_unconsumed_gives_the_array_back():
    a = np.arange(3.0)
    rc = refcount(a)
    cap = a.__dlpack__()
    del cap
    collect()
    assert refcount(a) == rc


# ---------------------------------------------------------------------------
# No leaks, no cycles

def workload():
    t = cowstore.arange(4096, dtype="float32").reshape(64, 64)
    c = t.lazy_clone()
    c += 1
    v = t.T[1:30:3]
    e = v.clone()
    s = (t + c).sum()
    m = memoryview(v)
    n = np.from_dlpack(c)
    a = t.numpy()
    b = np.asarray(t)
    r = t.numpy(read_only=True)
    u = cowstore.from_dlpack(a)
    cap = t.__dlpack__(max_version=(1, 0))
    cap2 = c.__dlpack__(copy=True)
    w = cowstore.from_dlpack(cap2)
    x = cowstore.from_buffer(bytearray(256), dtype="int64")
    y = x.lazy_clone()
    y.fill_(3)
    z = cowstore.tensor([[1, 2], [3, 4]], dtype="int16")
    return [t, c, v, e, s, m, n, a, r, u, cap, w, x, y, z, b]


def test_no_leak_after_objects_go():
    collect()
    start = live_bytes()
    objs = workload()
    assert live_bytes() > start
    objs[5].release()
    del objs
    collect()
    assert live_bytes() == start


def test_no_reference_cycles():
    # With the cyclic collector off, reference counting alone must give
    # every byte back: no cycle among the objects the module makes.
    collect()
    start = live_bytes()
    gc.disable()
    try:
        objs = workload()
        objs[5].release()
        del objs
        assert live_bytes() == start
    finally:
        gc.enable()


def test_tensor_refcounts_return():
    t = cowstore.arange(10, dtype="int64")
    rc = refcount(t)
    views = [t[1:], t.T, t.reshape(2, 5), t.unsqueeze(0), t.lazy_clone()]
    arrays = [np.asarray(t), t.numpy(), memoryview(t), writable_array(t),
              t.numpy(read_only=True), np.from_dlpack(t)]
    caps = [t.__dlpack__(), t.__dlpack__(read_only=True)]
    u = cowstore.asarray(t)
    assert u is t
    del views, arrays, caps, u
    collect()
    assert refcount(t) == rc
    assert not t.is_pinned()


def test_torch_round_trips_free_everything(torch):
    collect()
    start = live_bytes()
    for _ in range(50):
        t = cowstore.arange(256, dtype="float32")
        x = torch.from_dlpack(t)
        u = cowstore.from_dlpack(x)
        y = torch.from_dlpack(u[5:])
        y.add_(1)
        del t, x, u, y
    collect()
    assert live_bytes() == start


def test_memory_stats_counts_tensors():
    collect()
    start = cowstore.memory_stats()
    t = cowstore.zeros((1 << 16,), dtype="float64")
    mid = cowstore.memory_stats()
    assert mid["live_bytes"] - start["live_bytes"] >= (1 << 16) * 8
    assert mid["live_allocs"] > start["live_allocs"]
    assert mid["allocs"] > start["allocs"]
    del t
    collect()
    end = cowstore.memory_stats()
    assert end["live_bytes"] == start["live_bytes"]
    assert end["live_allocs"] == start["live_allocs"]
    assert end["frees"] > start["frees"]
