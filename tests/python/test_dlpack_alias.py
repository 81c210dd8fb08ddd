"""from_dlpack of a cowstore tensor (issue 36): the import is a tensor on
the exported tensor's own storage, so the module's per-storage locks order
it against its source, as they order any two views of one storage.

Before the fix the import wrapped the exported memory in a second storage:
u aliased t's bytes under another lock, and a thread taking np.asarray(u)
while another filled t saw torn snapshots (the issue: 153 torn of 16,311 in
a release build). The thread test here fills t with one distinct value
after another and checks that every snapshot of u holds a single value;
FILLS and SIZE are counts, not times."""
import faulthandler
import threading

import numpy as np
import pytest

import cowstore
from conftest import collect

SIZE = 1 << 18        # float32 elements: a fill releases the GIL
FILLS = 600           # distinct values the writer fills t with


def run_threads(threads, limit):
    """Runs `threads` as daemons and joins them, `limit` seconds in all; a
    thread still running then fails the test with every stack printed."""
    for th in threads:
        th.daemon = True
        th.start()
    for th in threads:
        th.join(limit)
    if any(th.is_alive() for th in threads):
        faulthandler.dump_traceback(all_threads=True)
        raise AssertionError("a thread did not finish in %.0f s" % limit)


def imports():
    """The ways to import a cowstore tensor t: the tensor itself (its
    writable versioned export), a versioned capsule, a legacy capsule."""
    return {
        "tensor": lambda t: cowstore.from_dlpack(t),
        "versioned capsule": lambda t: cowstore.from_dlpack(
            t.__dlpack__(max_version=(1, 0))),
        "legacy capsule": lambda t: cowstore.from_dlpack(t.__dlpack__()),
    }


@pytest.mark.parametrize("how", sorted(imports()))
def test_import_is_a_view_of_the_same_storage(how):
    t = cowstore.arange(6, dtype="float64")
    u = imports()[how](t)
    assert u.shares_storage(t)
    assert u.data_ptr() == t.data_ptr()
    assert u.shape == t.shape and u.strides == t.strides
    # The import released the export: nothing pins the storage, so a
    # lazy clone shares it, and a write through either is seen by both.
    assert not t.is_pinned() and not u.is_pinned()
    s = t.lazy_clone()
    assert s.shares_data(t)
    u.fill_(3)
    assert t.tolist() == [3.0] * 6
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    t += 1
    assert u.tolist() == [4.0] * 6
    del t, s
    collect()
    assert u.tolist() == [4.0] * 6


def test_import_of_a_view_keeps_its_layout():
    base = cowstore.arange(12, dtype="float32").reshape(3, 4)
    v = base.T[1:3]
    u = cowstore.from_dlpack(v)
    assert u.shares_storage(base)
    assert (u.shape, u.strides, u.offset) == (v.shape, v.strides, v.offset)
    assert u.tolist() == v.tolist()


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_read_only_export_imports_as_a_snapshot(max_version):
    t = cowstore.arange(4, dtype="float32")
    u = cowstore.from_dlpack(t.__dlpack__(max_version=max_version,
                                          read_only=True))
    assert not u.shares_storage(t)
    assert u.shares_data(t)  # O(1): a lazy clone, nothing copied
    t.fill_(7)
    assert u.tolist() == [0.0, 1.0, 2.0, 3.0]
    u += 1
    assert t.tolist() == [7.0] * 4
    assert u.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_read_only_import_of_a_writable_export_is_a_snapshot():
    t = cowstore.arange(4, dtype="float32")
    u = cowstore.from_dlpack(t, read_only=True)
    assert not t.is_pinned()
    assert not u.shares_storage(t) and u.shares_data(t)
    u.fill_(5)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t.fill_(6)
    assert u.tolist() == [5.0] * 4


@pytest.mark.parametrize("how", sorted(imports()))
def test_snapshots_of_the_import_are_never_torn(how):
    """One thread fills t with 1, 2, ..., FILLS; another takes
    np.asarray(u) (a read-only snapshot of the import) until the writer is
    done, and every snapshot must hold one value of those. No lock in the
    test: the module orders u's reads against t's writes (one storage)."""
    t = cowstore.zeros((SIZE,), dtype="float32")
    u = imports()[how](t)
    done = threading.Event()
    torn = []
    seen = [0]

    def writer():
        try:
            for k in range(1, FILLS + 1):
                t.fill_(float(k))
        finally:
            done.set()

    def reader():
        while not done.is_set() or seen[0] == 0:
            a = np.asarray(u)
            lo, hi = float(a.min()), float(a.max())
            seen[0] += 1
            if lo != hi or lo != int(lo) or not 0 <= lo <= FILLS:
                torn.append((lo, hi))

    run_threads([threading.Thread(target=writer),
                 threading.Thread(target=reader)], 600)
    assert not torn, ("%d of %d snapshots of the import were torn, e.g. "
                      "min %g, max %g" % (len(torn), seen[0], *torn[0]))
    assert u.tolist()[:3] == [float(FILLS)] * 3
