"""Fork: the children of a process whose threads are using cowstore.

The module's storage locks (python/src/guard.c) are taken by every op on a
storage; a thread that holds one at the moment another thread forks does
not exist in the child, so without the module's fork handlers
(os.register_at_fork) the child would wait for that lock for good. These
tests fork while other threads run ops on shared tensors, and each child
uses the tensors it inherited (those the threads were writing included)
and new ones, checks the values it can know, and exits. A child that has
not exited within COWSTORE_PY_FORK_TIMEOUT seconds (default 30) is a hang:
its Python stack is dumped (SIGUSR1, faulthandler), it is killed, and the
test fails saying how many of the children hung.

- test_fork_while_threads_write: COWSTORE_PY_FORKS forks (default 1000;
  docs/python.md records a longer run), four children at a time, while two
  threads fill, add, multiply, clone, view, export, pickle and run
  functional ops.
- test_pool_takes_and_returns_every_dtype: a multiprocessing pool (fork
  context) takes and returns tensors of every dtype (pickled both ways).
- test_dataloader_fork_workers_while_a_thread_writes: torch 1.13's
  DataLoader with two fork workers returning cowstore tensors and NumPy
  arrays made from them, COWSTORE_PY_LOADER_ROUNDS rounds (default 50;
  0 skips it, as the asan preset does), while a parent thread writes the
  tensor the workers read.

Every shared tensor is only ever written whole and uniformly (fill_, +=,
*=, t[...] = v, copy_ from a uniform tensor), so any read of it, in a
thread or in a child, must find all its elements equal: an op the fork cut
in half would show as a torn tensor.
"""
import faulthandler
import multiprocessing
import os
import pickle
import random
import signal
import subprocess
import sys
import threading
import time
import traceback

import numpy as np
import pytest

import cowstore
from conftest import ALL_DTYPES, sample, to_numpy_values

FORKS = int(os.environ.get("COWSTORE_PY_FORKS", "1000"))
CHILD_TIMEOUT = float(os.environ.get("COWSTORE_PY_FORK_TIMEOUT", "30"))
# Hung children stop the forking after this many (each one costs the
# timeout): the count is then a lower bound, and the test fails anyway.
MAX_HANGS = int(os.environ.get("COWSTORE_PY_FORK_MAX_HANGS", "4"))
PARALLEL = 4   # children alive at once


def uniform_value(t, what):
    """The one value all of `t`'s elements hold (through a read-only
    snapshot); AssertionError if they differ (a torn write)."""
    a = np.asarray(t)
    if a.size == 0:
        return None
    lo, hi = a.min(), a.max()
    assert lo == hi, "%s is torn: min %r max %r" % (what, lo, hi)
    return a.flat[0]


def shared_tensors():
    """The tensors the threads write and the children inherit: two
    storages of different dtypes and sizes, and a view over a third."""
    base = cowstore.zeros((64, 130), dtype="int32")
    return [cowstore.zeros(1 << 15, dtype="float64"),
            cowstore.zeros((48, 48), dtype="int64"),
            base[:, 1:129]]


def hammer(shared, seed, stop, errors, counts):
    """Ops on the shared tensors until `stop`, each one whole: every
    write leaves a tensor uniform, every read checks that."""
    rng = random.Random(seed)
    ops = 0
    try:
        while not stop.is_set():
            s = shared[rng.randrange(len(shared))]
            v = rng.randrange(-50, 50)
            op = rng.randrange(12)
            if op == 0:
                s.fill_(v)
            elif op == 1:
                s += 1
            elif op == 2:
                s *= -1
            elif op == 3:
                s[...] = v
            elif op == 4:
                s.copy_(cowstore.full(s.shape, v, dtype=s.dtype))
            elif op == 5:
                c = s.lazy_clone()
                u = uniform_value(c, "a snapshot")
                assert c.sum().item() == u * c.numel(), "sum of a snapshot"
            elif op == 6:
                c = s.lazy_clone()
                c += 1
                uniform_value(c, "a written lazy clone")
            elif op == 7:
                uniform_value(s.T, "a transposed view")
                uniform_value(s[::3], "a strided view")
            elif op == 8:
                uniform_value(pickle.loads(pickle.dumps(s)), "an unpickled copy")
            elif op == 9:
                # A writable NumPy view of a tensor of this thread's own.
                p = cowstore.zeros(1000, dtype="float32")
                a = p.numpy()
                a[:] = v
                del a
                assert p.sum().item() == 1000 * v, "a NumPy write"
            elif op == 10:
                with cowstore.functional():
                    f = cowstore.zeros(256, dtype="float32")
                    f += v
                    w = f[::2]
                    w.fill_(1)
                    assert f.sum().item() == 128 * (v + 1), "functional ops"
            else:
                uniform_value(s, "a shared tensor")
            ops += 1
    except BaseException:
        errors.append(traceback.format_exc())
    counts.append(ops)


class Threads:
    """Two threads running hammer() on `shared` inside a with block."""

    def __init__(self, shared, n=2):
        self.stop = threading.Event()
        self.errors, self.counts = [], []
        self.threads = [threading.Thread(
            target=hammer, args=(shared, k, self.stop, self.errors,
                                 self.counts), daemon=True)
            for k in range(n)]

    def __enter__(self):
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for th in self.threads:
            th.join(60)
        assert not any(th.is_alive() for th in self.threads), \
            "a writer thread did not stop"
        assert not self.errors, "a writer thread failed:\n" + self.errors[0]
        assert all(n > 0 for n in self.counts), "a writer ran no op"


def child_work(shared, k):
    """In the child: the inherited tensors (read, cloned, written), then
    new ones, every value checked. Returns the exit status."""
    for i, s in enumerate(shared):
        v = uniform_value(s, "inherited tensor %d" % i)
        assert s.sum().item() == v * s.numel(), "sum of inherited tensor"
        before = s.lazy_clone()
        s.fill_(k)
        s += 1
        assert uniform_value(s, "a written inherited tensor") == k + 1
        assert uniform_value(before, "a clone taken before") == v
        back = pickle.loads(pickle.dumps(s))
        assert back.equal(s.contiguous()), "pickled inherited tensor"
    for i in range(8):
        t = cowstore.full((257,), i, dtype="int64")
        u = t.lazy_clone()
        t += t
        assert t.tolist() == [2 * i] * 257 and u.tolist() == [i] * 257
        n = t.numpy()
        n[:] = -1
        del n
        assert t.sum().item() == -257 and u.sum().item() == 257 * i
    with cowstore.functional():
        f = cowstore.zeros((4, 4), dtype="float64")
        f[1] = 2.5
        assert f.sum().item() == 10.0
    # A thread of the child's own, and the locks again from it.
    out = []
    th = threading.Thread(target=lambda: out.append(shared[0].sum().item()))
    th.start()
    th.join()
    assert out == [(k + 1) * shared[0].numel()]
    return 0


def run_child(target):
    """The body of a forked child: exits with `target`()'s status, 1 on an
    exception (printed), never returning into the parent's code."""
    status = 1
    try:
        # To file descriptor 2 itself: pytest may have replaced sys.stderr
        # with a buffer that this process never hands back.
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__,
                              all_threads=True)
        status = target()
    except BaseException:
        os.write(2, ("child %d: %s" % (os.getpid(), traceback.format_exc())
                     ).encode())
    finally:
        os._exit(status)


class Children:
    """Forked children, at most PARALLEL alive, each waited for with a
    deadline: exited 0 (ok), exited otherwise (failed), killed by a signal
    (crashed), or still running at its deadline (hung: its stack dumped,
    then killed)."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.pending = {}
        self.forked = self.ok = self.failed = self.crashed = self.hung = 0

    def fork(self, target):
        while len(self.pending) >= PARALLEL:
            if not self.reap():
                time.sleep(0.0002)
        pid = os.fork()
        if pid == 0:
            run_child(target)
        self.forked += 1
        self.pending[pid] = time.monotonic() + self.timeout

    def reap(self):
        """Collect what ended; True if something did."""
        done = False
        for pid, deadline in list(self.pending.items()):
            r, status = os.waitpid(pid, os.WNOHANG)
            if r == 0 and time.monotonic() < deadline:
                continue
            if r == 0:
                os.kill(pid, signal.SIGUSR1)     # its stack, then gone
                time.sleep(0.5)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.hung += 1
            elif os.WIFSIGNALED(status):
                self.crashed += 1
            elif os.WEXITSTATUS(status) == 0:
                self.ok += 1
            else:
                self.failed += 1
            del self.pending[pid]
            done = True
        return done

    def finish(self):
        while self.pending:
            if not self.reap():
                time.sleep(0.0002)

    def report(self):
        return ("%d of %d children hung (no exit in %g s), %d crashed, "
                "%d failed their checks, %d ok" % (
                    self.hung, self.forked, self.timeout, self.crashed,
                    self.failed, self.ok))


def test_fork_while_threads_write():
    shared = shared_tensors()
    children = Children(CHILD_TIMEOUT)
    with Threads(shared):
        for k in range(FORKS):
            if children.hung >= MAX_HANGS:
                break
            children.fork(lambda k=k: child_work(shared, k))
        children.finish()
    print(children.report())
    assert children.hung == 0 and children.crashed == 0 and \
        children.failed == 0 and children.ok == FORKS, children.report()
    # The parent's tensors are still whole and usable.
    for i, s in enumerate(shared):
        uniform_value(s, "shared tensor %d after the forks" % i)
        s.fill_(3)
        assert uniform_value(s, "shared tensor %d" % i) == 3


HOOKS_SCRIPT = r"""
import os, sys, threading
seen = []

def use(tag):
    import cowstore
    t = cowstore.full(8, len(seen), dtype="int64")
    t += 1
    seen.append("%s %d" % (tag, t.sum().item()))

# Registered before the import: runs after cowstore's before-fork handler
# (os.register_at_fork runs before hooks last-registered first, after
# hooks first-registered first), so while cowstore holds every lock.
os.register_at_fork(before=lambda: use("early-before"),
                    after_in_parent=lambda: use("early-parent"),
                    after_in_child=lambda: use("early-child"))
import cowstore
os.register_at_fork(before=lambda: use("late-before"),
                    after_in_parent=lambda: use("late-parent"),
                    after_in_child=lambda: use("late-child"))
shared = cowstore.zeros(1 << 16)
stop = threading.Event()

def writer():
    s = shared
    while not stop.is_set():
        s.fill_(1)
        s += 1

th = threading.Thread(target=writer, daemon=True)
th.start()
for _ in range(20):
    del seen[:]
    pid = os.fork()
    if pid == 0:
        ok = seen == ["late-before 8", "early-before 16", "early-child 24",
                      "late-child 32"] and shared.sum().item() in (
                          0, 1 << 16, 2 << 16)
        sys.stdout.write("child %r\n" % seen if not ok else "")
        sys.stdout.flush()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert seen == ["late-before 8", "early-before 16", "early-parent 24",
                    "late-parent 32"], seen
    assert status == 0, status
stop.set()
th.join()
print("hooks ok")
"""


def test_fork_hooks_registered_before_and_after_the_import_use_tensors():
    """Fork hooks that use tensors, both those that run while the module
    holds every lock (registered before `import cowstore`) and those that
    run outside it, work in parent and child, in os.register_at_fork's
    order. A fresh interpreter, so that a hook can precede the import."""
    proc = subprocess.run([sys.executable, "-c", HOOKS_SCRIPT],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0 and "hooks ok" in out, out


# ---------------------------------------------------------------------------
# multiprocessing: a pool (fork context) takes and returns tensors.

def _pool_work(item):
    """In a pool worker: the tensor it was sent, its double computed
    there, and a new tensor made there from the values."""
    t, read_only = item
    assert t.is_read_only() == read_only
    doubled = t + t
    remade = cowstore.tensor(t.tolist(), dtype=t.dtype)
    return t, doubled, remade


def pool_inputs():
    items = []
    for d in ALL_DTYPES:
        t = cowstore.tensor(sample("float32" if d == "bfloat16" else d,
                                   (3, 5), seed=7).tolist(), dtype=d)
        items.append((t, False))
        items.append((t.T[1:, ::2], False))          # a view
        raw = np.ascontiguousarray(sample(d, (4,), seed=3)).tobytes() \
            if d != "bfloat16" else bytes(range(8))
        items.append((cowstore.from_buffer(raw, dtype=d), True))
    return items


def test_pool_takes_and_returns_every_dtype():
    items = pool_inputs()
    ctx = multiprocessing.get_context("fork")
    shared = shared_tensors()
    with Threads(shared):
        with ctx.Pool(2) as pool:
            results = pool.map_async(_pool_work, items).get(CHILD_TIMEOUT)
    assert len(results) == len(items)
    for (t, read_only), (back, doubled, remade) in zip(items, results):
        what = "%s %s" % (t.dtype, t.shape)
        assert (back.dtype, back.shape) == (t.dtype, t.shape), what
        assert back.is_read_only() == read_only, what
        want = to_numpy_values(t)
        np.testing.assert_array_equal(to_numpy_values(back), want, what)
        np.testing.assert_array_equal(to_numpy_values(remade), want, what)
        np.testing.assert_array_equal(to_numpy_values(doubled),
                                      to_numpy_values(t + t), what)


# ---------------------------------------------------------------------------
# torch 1.13's DataLoader with fork workers.

ROUNDS = int(os.environ.get("COWSTORE_PY_LOADER_ROUNDS", "50"))
ITEMS = 6


def test_dataloader_fork_workers_while_a_thread_writes():
    if ROUNDS == 0:
        pytest.skip("COWSTORE_PY_LOADER_ROUNDS=0 (the asan preset: "
                    "docs/python.md, \"Fork\")")
    torch = pytest.importorskip("torch")
    data = torch.utils.data
    # Large enough that the writer spends most of its time in ops (the
    # GIL released, a lock held), where a fork must wait for it.
    shared = cowstore.zeros(1 << 20, dtype="float64")

    class Source(data.Dataset):
        """Items made in the worker (a forked child) from the inherited
        tensor the parent's thread writes: its value then, a cowstore
        tensor and a NumPy array made from a new tensor."""

        def __len__(self):
            return ITEMS

        def __getitem__(self, i):
            # Elements across the whole tensor: one a fork cut a write in
            # two would differ.
            v = uniform_value(shared[::1024].lazy_clone(),
                              "the inherited tensor")
            t = cowstore.full((5, i + 1), i, dtype="int32")
            t += 1
            return i, float(v), t, t.numpy().copy(), (t * 2).numpy()

    stop = threading.Event()
    errors = []

    def writer():
        rng = random.Random(5)
        s = shared
        try:
            while not stop.is_set():
                s.fill_(rng.randrange(1000))
                s += 1
                time.sleep(0.001)    # a core left for the workers
        except BaseException:
            errors.append(traceback.format_exc())

    timeouts = 0
    th = threading.Thread(target=writer, daemon=True)
    th.start()
    try:
        for _ in range(ROUNDS):
            loader = data.DataLoader(
                Source(), batch_size=None, num_workers=2,
                multiprocessing_context="fork", timeout=CHILD_TIMEOUT)
            got = []
            try:
                for item in loader:
                    got.append(item)
            except RuntimeError as e:
                if "timed out" not in str(e):
                    raise
                timeouts += 1
                continue
            assert sorted(g[0] for g in got) == list(range(ITEMS))
            for i, v, t, a, b in got:
                assert isinstance(t, cowstore.Tensor), type(t)
                assert t.shape == (5, i + 1) and t.dtype == "int32"
                assert t.tolist() == [[i + 1] * (i + 1)] * 5
                # default_convert makes NumPy arrays torch tensors.
                assert torch.equal(a, torch.full((5, i + 1), i + 1,
                                                 dtype=torch.int32))
                assert torch.equal(b, torch.full((5, i + 1), 2 * (i + 1),
                                                 dtype=torch.int32))
                assert v == int(v) and 1 <= v <= 1000 or v == 0
    finally:
        stop.set()
        th.join(60)
    assert not errors, errors[0]
    assert timeouts == 0, "%d of %d DataLoader rounds timed out (a worker " \
        "hung)" % (timeouts, ROUNDS)


FORK_IN_AN_OP = r"""
import os, sys, warnings
import numpy as np
import cowstore

class Base(bytearray):
    # Dropped inside an op on the stripe of the tensor over it: forks
    # there, from the producer's deleter (the GIL taken, the stripe held).
    def __del__(self):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        print("forked inside an op", flush=True)

a = np.frombuffer(Base(16), dtype=np.float32)
t = cowstore.from_dlpack(a, read_only=True)   # read-only memory over a
del a
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    t.fill_(2.0)          # the write copies; the last storage over a goes
print([str(x.message) for x in w])
assert t.tolist() == [2.0] * 4
print("op done", flush=True)
"""


def test_fork_inside_an_op_warns_instead_of_waiting_for_itself():
    """os.fork() from code an op runs (here a __del__ that a producer's
    deleter triggers, while the op holds its stripe): taking every stripe
    would wait for the one this thread holds, so the handler takes none
    and warns; the op and the fork complete."""
    proc = subprocess.run([sys.executable, "-c", FORK_IN_AN_OP],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, out
    assert "forked inside an op" in out and "op done" in out, out
    assert "os.fork() inside a cowstore operation" in out, out
