"""Threads: four Python threads clone, write, export and release shared
tensors for COWSTORE_PY_THREAD_SECONDS seconds (default 20) in total, and
check the values after every write. The module releases the GIL around
copies, materialisation and ops over data, so large tensors (64K to 1M
elements) run in parallel for real.

Users need no locks (docs/python.md, "Threads": the module serialises ops
per storage). test_threads_share_tensors_with_no_locks checks exactly that:
no lock at all, and every op seen whole. In test_threads_clone_write_release
each shared tensor has a lock only so that the test knows the value every
element must hold when it reads or snapshots it; the snapshots are then
used, written and handed to other threads with no lock at all, while the
shared tensors keep being written."""
import faulthandler
import os
import queue
import random
import threading
import time

import numpy as np

import cowstore
from conftest import collect, gil_pauses, live_bytes

SECONDS = float(os.environ.get("COWSTORE_PY_THREAD_SECONDS", "20"))
THREADS = 4
SIZES = (17, 1000, 1 << 16, 1 << 20)  # elements, float32


def run_threads(threads, limit):
    """Starts `threads` as daemon threads and joins them, `limit` seconds
    in all. A thread still running after that fails the test with every
    thread's stack printed; being a daemon, it cannot keep the interpreter
    from exiting (a hung thread would otherwise outlive pytest's report)."""
    for th in threads:
        th.daemon = True
        th.start()
    end = time.monotonic() + limit
    for th in threads:
        th.join(max(0.0, end - time.monotonic()))
    if any(th.is_alive() for th in threads):
        faulthandler.dump_traceback(all_threads=True)
        raise AssertionError("a thread did not finish in %.0f s" % limit)


class Shared:
    """A shared tensor, its lock, and the value all its elements hold."""

    def __init__(self, n):
        self.t = cowstore.zeros((n,), dtype="float32")
        self.value = 0.0
        self.lock = threading.Lock()


def assert_all(t, value, what):
    """Every element of `t` equals `value` (through an O(1) read-only
    snapshot and NumPy, so a 1M-element check is cheap)."""
    a = t.numpy(read_only=True)
    lo, hi = (a.min(), a.max()) if a.size else (value, value)
    assert lo == value and hi == value, \
        "%s: expected all %r, got min %r max %r (%d elements)" % (
            what, value, lo, hi, a.size)


def worker(seed, shared, handoff, deadline, errors, counts):
    rng = random.Random(seed)
    done = 0
    try:
        while time.monotonic() < deadline:
            s = shared[rng.randrange(len(shared))]
            op = rng.random()
            if op < 0.25:
                # write the shared tensor (serialised by its lock)
                with s.lock:
                    v = float(rng.randrange(-1000, 1000))
                    kind = rng.randrange(3)
                    if kind == 0:
                        s.t.fill_(v)
                    elif kind == 1:
                        s.t += v - s.value
                    else:
                        s.t[:] = v
                    s.value = v
                    assert_all(s.t, v, "shared write")
            elif op < 0.65:
                # snapshot under the lock, then use it with no lock while
                # the others keep writing the shared tensor
                with s.lock:
                    snap = s.t.lazy_clone() if rng.random() < 0.8 \
                        else s.t.clone()
                    v = s.value
                assert_all(snap, v, "snapshot")
                snap += 1
                assert_all(snap, v + 1, "snapshot += 1")
                snap *= 2
                assert_all(snap, (v + 1) * 2, "snapshot *= 2")
                w = (v + 1) * 2
                if rng.random() < 0.5:
                    view = snap[1::2]
                    view.fill_(-5)
                    assert_all(view, -5.0, "view fill")
                    assert snap[0].item() == w
                    w = None  # mixed values now
                if w is not None and rng.random() < 0.5:
                    # hand it to another thread, with its value
                    try:
                        handoff.put_nowait(("tensor", snap, w))
                    except queue.Full:
                        pass
            elif op < 0.8:
                # export to NumPy (DLPack or a writable array), write through
                # NumPy, hand the array to another thread to release
                with s.lock:
                    snap = s.t.lazy_clone()
                    v = s.value
                if rng.random() < 0.5:
                    arr = np.from_dlpack(snap)
                    assert addr_of(arr) == snap.data_ptr()
                    assert snap.is_pinned()
                    assert (arr == v).all()
                    expect = v
                else:
                    arr = snap.numpy()  # writable: materialised and pinned
                    assert snap.is_pinned()
                    arr[::3] = 7
                    assert snap[0].item() == 7.0
                    s2 = snap.lazy_clone()  # an eager copy: snap is pinned
                    arr[:] = 8
                    assert s2[0].item() == 7.0
                    if s2.numel() > 1:
                        assert s2[1].item() == v
                    assert_all(snap, 8.0, "numpy write")
                    expect = 8.0
                try:
                    handoff.put_nowait(("array", arr, expect))
                except queue.Full:
                    pass
                del arr
            elif op < 0.95:
                # take what another thread handed over, check, write, drop
                try:
                    kind, obj, value = handoff.get_nowait()
                except queue.Empty:
                    continue
                if kind == "tensor":
                    assert_all(obj, value, "handed tensor")
                    obj.fill_(value + 3)
                    assert_all(obj, value + 3, "handed tensor written")
                    c = obj.lazy_clone()
                    obj *= 0
                    assert_all(c, value + 3, "clone of handed tensor")
                    assert_all(obj, 0.0, "handed tensor zeroed")
                else:
                    if value is not None:
                        assert (obj == value).all(), "handed array"
                del obj
            else:
                # big out-of-place ops on snapshots (GIL released)
                with s.lock:
                    a = s.t.lazy_clone()
                    v = s.value
                b = a + a
                assert_all(b, 2 * v, "a + a")
                assert (b * 0.5).equal(a)
                if a.numel() <= 1000:
                    assert a.sum().item() == v * a.numel()
            done += 1
    except BaseException as e:  # reported by the main thread
        errors.append(e)
    counts[seed] = done


def addr_of(a):
    return a.__array_interface__["data"][0]


def test_threads_clone_write_release():
    collect()
    start_bytes = live_bytes()
    shared = [Shared(n) for n in SIZES for _ in range(2)]
    handoff = queue.Queue(maxsize=16)
    errors = []
    counts = {}
    deadline = time.monotonic() + SECONDS
    threads = [threading.Thread(target=worker,
                                args=(i, shared, handoff, deadline, errors,
                                      counts))
               for i in range(THREADS)]
    run_threads(threads, SECONDS + 120)
    if errors:
        raise errors[0]
    assert len(counts) == THREADS
    assert all(c > 0 for c in counts.values()), counts
    print("thread iterations:", counts)
    # the shared tensors hold their last values, and nothing is pinned
    for s in shared:
        assert_all(s.t, s.value, "final")
        assert not s.t.is_pinned()
    # drain the hand-off queue and release everything: all memory returns
    while not handoff.empty():
        handoff.get_nowait()
    del shared, threads, s
    collect()
    assert live_bytes() == start_bytes


def test_threads_release_imports_and_exports_elsewhere():
    """NumPy arrays imported on one thread and released on another give
    NumPy its references back; exports consumed on one thread and dropped
    on another unpin."""
    arrays = [np.arange(1 << 16, dtype=np.float64) for _ in range(8)]
    import sys
    rcs = [sys.getrefcount(a) for a in arrays]
    q = queue.Queue()

    def producer():
        for a in arrays:
            t = cowstore.from_dlpack(a)
            q.put(t)
            q.put(cowstore.arange(1000, dtype="int32"))
        q.put(None)

    def consumer():
        while True:
            t = q.get()
            if t is None:
                break
            if t.dtype == "int32":
                n = np.from_dlpack(t)
                assert t.is_pinned()
                out.put((t, n))
            else:
                s = t.lazy_clone()
                s += 1
                assert s[5].item() == 6.0
            del t

    out = queue.Queue()
    ths = [threading.Thread(target=producer),
           threading.Thread(target=consumer)]
    run_threads(ths, 120)
    tensors = []
    while not out.empty():
        t, n = out.get()
        tensors.append(t)
        dropper = threading.Thread(target=lambda x=[n]: x.clear())
        del n
        dropper.start()
        dropper.join()
    collect()
    for t in tensors:
        assert not t.is_pinned()
    assert [sys.getrefcount(a) for a in arrays] == rcs


def test_gil_is_released_around_large_ops():
    """While one thread runs a large copy or op, another Python thread keeps
    running: the largest pause it sees during the op is far shorter than
    the op (with the GIL held throughout, it would see the whole op as one
    pause). Five tries per op; one clear run is enough, so a loaded machine
    does not make it fail (conftest.gil_pauses)."""
    t = cowstore.full((1 << 24,), 1, dtype="float32")  # 64 MiB
    ops = {
        "clone": lambda: t.clone(),
        "materialise": lambda: t.lazy_clone().fill_(2),
        "add": lambda: t + t,
        "sum": lambda: t.sum(),
    }
    results = gil_pauses(ops)
    assert all(r < 0.5 for r in results.values()), results


def uniform_value(t, what):
    """The one value every element of `t` holds (through a read-only
    snapshot and NumPy); fails if the elements differ."""
    a = t.numpy(read_only=True)
    lo, hi = a.min(), a.max()
    assert lo == hi, "%s: a torn op: min %r max %r" % (what, lo, hi)
    return float(lo)


def test_threads_share_tensors_with_no_locks():
    """No user locks at all. Every op below writes every element of a
    shared tensor with one value (fill_, +=, *=, t[:] =), so if each op is
    whole with respect to the others on the same storage, as the module
    promises, every read and every snapshot sees a uniform tensor: one torn
    op (a snapshot or a read in the middle of a write, or two
    materialisations of one storage at once) shows as two values."""
    seconds = max(2.0, SECONDS / 4)
    # Integral float64 values stay exact in every sum below.
    shared = [cowstore.zeros((n,), dtype="float64")
              for n in (1000, 1 << 16, 1 << 20)]
    errors = []
    counts = {}
    deadline = time.monotonic() + seconds

    def worker(seed):
        rng = random.Random(seed)
        done = 0
        try:
            while time.monotonic() < deadline:
                t = shared[rng.randrange(len(shared))]
                op = rng.random()
                if op < 0.2:
                    t.fill_(float(rng.randrange(1000)))
                elif op < 0.35:
                    t += 1.0
                elif op < 0.45:
                    t[:] = float(rng.randrange(1000))
                elif op < 0.5:
                    t *= 1.0
                elif op < 0.75:
                    snap = t.lazy_clone()   # shares until a write
                    v = uniform_value(snap, "snapshot")
                    snap += 1.0             # materialises the snapshot
                    assert uniform_value(snap, "snapshot + 1") == v + 1
                elif op < 0.9:
                    total = t.sum().item()
                    n = t.numel()
                    assert total == n * round(total / n), \
                        "sum %r of %d elements is not n times one value" % (
                            total, n)
                else:
                    uniform_value(t, "shared read")
                done += 1
        except BaseException as e:  # reported by the main thread
            errors.append(e)
        counts[seed] = done

    threads = [threading.Thread(target=worker, args=(i,))
               for i in range(THREADS)]
    run_threads(threads, seconds + 120)
    if errors:
        raise errors[0]
    assert all(c > 0 for c in counts.values()), counts
    print("no-lock iterations:", counts)
    for i, t in enumerate(shared):
        uniform_value(t, "final %d" % i)
        assert not t.is_pinned()
