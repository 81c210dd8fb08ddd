"""Snapshot isolation at the boundary: lazy clones of wrapped memory, read-only
memory (np.memmap mode="r", bytes) that is never written, producers that
write their memory after a snapshot, pins held by writable views, and
read-only views that are snapshots (docs/python.md, docs/interop.md)."""
import mmap

import numpy as np
import pytest

import cowstore
from conftest import addr, collect, writable_array


def stats():
    return cowstore.stats()


# ---------------------------------------------------------------------------
# Lazy clones of a wrapped NumPy array

@pytest.mark.parametrize("wrap", ["from_dlpack", "from_buffer", "asarray"])
def test_lazy_clone_of_wrapped_numpy_array_written_in_cowstore(wrap):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = a.copy()
    t = getattr(cowstore, wrap)(a)
    assert t.data_ptr() == addr(a)
    s = t.lazy_clone()
    # the owner may write a at any time: the clone cannot share its bytes
    assert not s.shares_data(t)
    assert s.data_ptr() != addr(a)
    s += 1
    s *= 2
    s[0] = -1
    s.fill_(5)
    np.testing.assert_array_equal(a, before)
    assert s.tolist() == [[5.0] * 4] * 3
    # and the array's own writes do not reach the clone
    a += 100
    assert s.tolist() == [[5.0] * 4] * 3
    assert t[0, 0].item() == 100.0


def test_clone_of_view_of_wrapped_array():
    a = np.arange(20, dtype=np.int64).reshape(4, 5)
    t = cowstore.from_dlpack(a)
    v = t[1:3, ::2]
    s = v.lazy_clone()
    s.fill_(0)
    np.testing.assert_array_equal(a, np.arange(20).reshape(4, 5))
    a[1, 0] = 77
    assert s.tolist() == [[0, 0, 0], [0, 0, 0]]
    assert v[0, 0].item() == 77


# ---------------------------------------------------------------------------
# Read-only memory: a read-only np.memmap and a bytes object

@pytest.fixture
def ro_memmap(tmp_path):
    path = tmp_path / "data.f32"
    data = np.arange(4096, dtype=np.float32)
    path.write_bytes(data.tobytes())
    m = np.memmap(path, dtype=np.float32, mode="r", shape=(4096,))
    assert not m.flags.writeable
    return path, data, m


def test_read_only_memmap_is_never_written(ro_memmap):
    path, data, m = ro_memmap
    original = path.read_bytes()
    t = cowstore.from_buffer(m)
    assert t.is_read_only()
    assert t.data_ptr() == addr(m)  # zero copy
    assert t.shape == (4096,) and t.dtype == "float32"
    c = t.lazy_clone()
    assert c.shares_data(t)  # read-only memory is shared lazily
    assert c.data_ptr() == addr(m)
    cowstore.reset_stats()
    # write through the clone: it copies, the mapping is untouched
    c += 1
    assert c.data_ptr() != addr(m)
    assert c[10].item() == 11.0
    # write through the original wrapper: it copies too (read-only memory)
    t.fill_(-3)
    t[5] = 9
    assert t.data_ptr() != addr(m)
    assert t[5].item() == 9.0 and t[6].item() == -3.0
    assert cowstore.stats()["external_copies"] >= 2
    # views and a second clone of the original share nothing with the file
    d = t[100:200:3].lazy_clone()
    d *= 0
    np.testing.assert_array_equal(np.asarray(m), data)
    assert path.read_bytes() == original
    assert c[10].item() == 11.0
    del t, c, d
    collect()
    assert path.read_bytes() == original


def test_read_only_memmap_views_written_through_numpy(ro_memmap):
    path, data, m = ro_memmap
    original = path.read_bytes()
    t = cowstore.from_buffer(m).reshape(64, 64)
    v = t.T[3:9]
    arr = v.numpy()  # writable: materialised away from the mapping
    arr[:] = 42
    assert (to_list_flat(v) == [42.0] * v.numel())
    assert path.read_bytes() == original
    np.testing.assert_array_equal(np.asarray(m), data)
    del arr


def to_list_flat(t):
    return np.asarray(t.tolist()).ravel().tolist()


def test_read_only_mmap_module_buffer(tmp_path):
    # The standard library's read-only mmap: a read-only buffer too.
    path = tmp_path / "bytes.bin"
    path.write_bytes(bytes(range(256)) * 16)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        t = cowstore.from_buffer(mm, dtype="uint8")
        assert t.is_read_only()
        assert t.numel() == 4096
        c = t.lazy_clone()
        c.fill_(1)
        t += 1
        assert t[255].item() == 0 and t[0].item() == 1
        del t, c
        collect()
        mm.close()  # fails with BufferError if an export were still held
    assert path.read_bytes() == bytes(range(256)) * 16


def test_bytes_object_is_never_written():
    b = bytes(bytearray(range(16)))
    t = cowstore.from_buffer(b, dtype="uint8")
    assert t.is_read_only()
    assert t.shape == (16,)
    c = t.lazy_clone()
    assert c.shares_data(t)
    c.fill_(7)
    t += 1
    t[3] = 200
    assert b == bytes(range(16))
    assert c.tolist() == [7] * 16
    assert t.tolist() == [i + 1 for i in range(16)][:3] + [200] + \
        [i + 1 for i in range(4, 16)]
    # writable views of a read-only wrapper are its own copy
    u = cowstore.from_buffer(b, dtype="int32", shape=(2, 2))
    n = u.numpy()
    n[:] = 0
    assert b == bytes(range(16))


def test_read_only_import_of_a_writable_producer():
    a = np.arange(8, dtype=np.float64)
    t = cowstore.from_dlpack(a, read_only=True)
    assert t.is_read_only()
    c = t.lazy_clone()
    assert c.shares_data(t)
    t.fill_(1)
    c *= 3
    np.testing.assert_array_equal(a, np.arange(8))
    u = cowstore.from_buffer(a, read_only=True)
    assert u.is_read_only()
    u += 1
    np.testing.assert_array_equal(a, np.arange(8))


# ---------------------------------------------------------------------------
# PyTorch writes its memory after a cowstore snapshot

def test_torch_write_after_snapshot(torch):
    x = torch.arange(16, dtype=torch.float32)
    t = cowstore.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr()
    s = t.lazy_clone()
    v = t[4:12].lazy_clone()
    x.mul_(10)
    x[0] = -1
    assert s.tolist() == [float(i) for i in range(16)]
    assert v.tolist() == [float(i) for i in range(4, 12)]
    assert t[1].item() == 10.0  # t aliases x
    # and s's writes do not reach x
    s.fill_(0)
    assert x[2].item() == 20.0


def test_torch_writes_its_import_of_a_cowstore_tensor(torch):
    t = cowstore.arange(8, dtype="int64")
    x = torch.from_dlpack(t)
    assert t.is_pinned()
    s = t.lazy_clone()  # taken while torch holds a writable export
    assert not s.shares_data(t)
    x.add_(100)
    assert s.tolist() == list(range(8))
    assert t.tolist() == [i + 100 for i in range(8)]
    del x
    collect()
    assert not t.is_pinned()
    w = t.lazy_clone()
    assert w.shares_data(t)


def test_export_materialises_a_lazy_clone(torch):
    base = cowstore.arange(6, dtype="float32")
    t = base.lazy_clone()
    assert t.shares_data(base)
    x = torch.from_dlpack(t)  # t gets its own bytes before torch writes them
    assert not t.shares_data(base)
    x.fill_(3)
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert t.tolist() == [3.0] * 6


# ---------------------------------------------------------------------------
# Writable NumPy views of a cowstore tensor pin it

@pytest.mark.parametrize("how", ["writable_buffer", "numpy"])
def test_writable_numpy_view_pins(how):
    t = cowstore.arange(10, dtype="float64")
    assert not t.is_pinned()
    arr = {"writable_buffer": writable_array,
           "numpy": lambda x: x.numpy()}[how](t)
    assert addr(arr) == t.data_ptr()
    assert t.is_pinned()
    assert arr.flags.writeable
    s = t.lazy_clone()  # taken while the array lives: an eager copy
    assert not s.shares_data(t)
    arr[:] = -1
    assert s.tolist() == [float(i) for i in range(10)]
    assert t.tolist() == [-1.0] * 10
    del arr
    collect()
    assert not t.is_pinned()
    u = t.lazy_clone()
    assert u.shares_data(t)


def test_pins_nest_and_each_release_counts():
    t = cowstore.zeros((4,), dtype="int32")
    a = writable_array(t)
    b = t.numpy()
    c = np.from_dlpack(t)
    del a
    collect()
    assert t.is_pinned()
    del b
    collect()
    assert t.is_pinned()
    del c
    collect()
    assert not t.is_pinned()


def test_writable_view_of_lazy_clone_does_not_reach_the_original():
    base = cowstore.arange(5, dtype="int16")
    t = base.lazy_clone()
    arr = t.numpy()
    arr[0] = 99
    assert base.tolist() == [0, 1, 2, 3, 4]
    assert t.tolist() == [99, 1, 2, 3, 4]


def test_view_of_tensor_pins_the_storage():
    t = cowstore.arange(12, dtype="float32").reshape(3, 4)
    arr = t[1].numpy()  # a view's array pins the whole storage
    assert t.is_pinned()
    s = t.lazy_clone()
    arr[:] = 0
    assert s[1].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert t[1].tolist() == [0.0] * 4
    del arr
    collect()
    assert not t.is_pinned()


# ---------------------------------------------------------------------------
# Read-only buffers and exports are snapshots

def test_np_asarray_follows_the_request_numpy_makes():
    # docs/python.md says np.asarray(t) asks for a writable buffer first;
    # NumPy 1.24 asks for a read-only one (PyMemoryView_FromObject). Either
    # way the contract of that request holds.
    t = cowstore.arange(8, dtype="float32")
    a = np.asarray(t)
    assert addr(a) == t.data_ptr()
    if a.flags.writeable:
        assert t.is_pinned()
        s = t.lazy_clone()
        a[:] = 0
        assert s.tolist() == [float(i) for i in range(8)]
    else:
        assert not t.is_pinned()
        t.fill_(3)
        np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32))
    del a
    collect()
    assert not t.is_pinned()


def test_memoryview_is_a_snapshot_and_does_not_materialise():
    t = cowstore.arange(1000, dtype="float32")
    base = t.lazy_clone()  # t is copy-on-write: a materialisation would copy
    cowstore.reset_stats()
    m = memoryview(t)
    assert m.readonly
    assert not t.is_pinned()
    assert cowstore.stats()["materialize_copies"] == 0
    assert cowstore.stats()["materialize_steals"] == 0
    assert m[999] == 999.0
    assert bytes(m) == np.arange(1000, dtype=np.float32).tobytes()
    t.fill_(1)  # the write does not show through the buffer
    t[0] = 5
    assert m[0] == 0.0 and m[999] == 999.0
    assert t[999].item() == 1.0
    assert base[999].item() == 999.0
    m.release()


def test_bytes_of_tensor_does_not_materialise():
    t = cowstore.arange(100, dtype="int64")
    s = t.lazy_clone()
    cowstore.reset_stats()
    b = bytes(s)
    assert b == np.arange(100, dtype=np.int64).tobytes()
    assert cowstore.stats()["materialize_copies"] == 0
    assert s.shares_data(t)


def test_numpy_read_only_is_a_snapshot():
    t = cowstore.arange(6, dtype="int32").reshape(2, 3)
    cowstore.reset_stats()
    r = t.numpy(read_only=True)
    assert not r.flags.writeable
    assert not t.is_pinned()
    assert cowstore.stats()["materialize_copies"] == 0
    assert addr(r) == t.data_ptr()  # O(1): it shares the bytes
    with pytest.raises(ValueError):
        r[0, 0] = 1
    t += 10
    np.testing.assert_array_equal(r, np.arange(6).reshape(2, 3))
    assert t.tolist() == [[10, 11, 12], [13, 14, 15]]


def test_read_only_dlpack_export_is_a_snapshot():
    t = cowstore.arange(6, dtype="float64")

    class Producer:
        def __dlpack__(self, stream=None):
            return t.__dlpack__(read_only=True)

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    cowstore.reset_stats()
    n = np.from_dlpack(Producer())
    assert not t.is_pinned()
    assert addr(n) == t.data_ptr()
    assert cowstore.stats()["materialize_copies"] == 0
    t.fill_(-2)
    np.testing.assert_array_equal(n, np.arange(6))
    assert t.tolist() == [-2.0] * 6


def test_read_only_export_to_cowstore_is_a_snapshot():
    t = cowstore.arange(4, dtype="float32")
    u = cowstore.from_dlpack(t.__dlpack__(max_version=(1, 0), read_only=True))
    # The export's snapshot itself (issue 36: not read-only memory on a
    # second storage): a lazy clone, sharing t's bytes until either writes.
    assert not u.shares_storage(t) and u.shares_data(t)
    u += 1
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert u.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_cowstore_to_cowstore_writable_import_aliases():
    t = cowstore.arange(4, dtype="float32")
    u = cowstore.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr()
    # A view of t's storage (issue 36), and the export's pin went with the
    # import: lazy clones of either share until a write.
    assert u.shares_storage(t)
    assert not t.is_pinned() and not u.is_pinned()
    u.fill_(8)
    assert t.tolist() == [8.0] * 4
    s = t.lazy_clone()
    u.fill_(9)
    assert s.tolist() == [8.0] * 4
    del u
    collect()
    assert not t.is_pinned()
