#!/usr/bin/python3
"""bench_python.py - cowstore from Python, side by side with NumPy and
PyTorch in one run (a benchmark: it prints, it asserts nothing on timing).

1. Copies of a float32 tensor of 4 KiB, 1 MiB and 64 MiB:
   Tensor.lazy_clone() (O(1) copy-on-write), Tensor.clone() (eager),
   lazy_clone() followed by a one-element write (the copy the write makes),
   numpy.ndarray.copy() and torch.Tensor.clone().
2. Per-call overhead of DLPack on a small tensor (16 float32):
   cowstore.from_dlpack and Tensor.__dlpack__ against NumPy's own
   (np.from_dlpack, ndarray.__dlpack__) and PyTorch's own (torch.from_dlpack,
   torch.Tensor.__dlpack__), and across libraries.

Each figure is the best of N repetitions (time.perf_counter_ns) of the time
per call; fast calls are timed in batches long enough for the clock. The
result of each call is dropped inside the timing (its release is part of
the cost, for every library alike).

Run with Debian's interpreter and the module on the path:
    PYTHONPATH=build/py/python /usr/bin/python3 tests/python/bench_python.py
Options: --repeats N (default 15), --quick (fewer repetitions, no 64 MiB).
COWSTORE_PY_SKIP_TORCH=1 leaves PyTorch out.
"""
import argparse
import gc
import os
import platform
import sys
import time

import numpy as np

import cowstore

try:
    if os.environ.get("COWSTORE_PY_SKIP_TORCH") == "1":
        raise ImportError("COWSTORE_PY_SKIP_TORCH=1")
    import torch
except ImportError:
    torch = None

NS = time.perf_counter_ns


def per_call_ns(fn, repeats, min_batch_ns=2_000_000, max_batch=20_000):
    """Best of `repeats` batches: the time of one call in nanoseconds."""
    fn()  # warm up (first-touch, caches, lazy imports)
    batch = 1
    while batch < max_batch:
        t0 = NS()
        for _ in range(batch):
            fn()
        if NS() - t0 >= min_batch_ns:
            break
        batch *= 2
    best = None
    for _ in range(repeats):
        t0 = NS()
        for _ in range(batch):
            fn()
        dt = (NS() - t0) / batch
        best = dt if best is None else min(best, dt)
    return best


def fmt_ns(ns):
    if ns is None:
        return "n/a"
    if ns < 1_000:
        return "%.0f ns" % ns
    if ns < 1_000_000:
        return "%.2f us" % (ns / 1e3)
    if ns < 1_000_000_000:
        return "%.2f ms" % (ns / 1e6)
    return "%.2f s" % (ns / 1e9)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:"
                          for i in range(len(header))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out)


def bench_copies(sizes, repeats):
    rows = []
    for nbytes in sizes:
        n = nbytes // 4
        t = cowstore.arange(n, dtype="float32")
        a = np.arange(n, dtype=np.float32)
        x = torch.arange(n, dtype=torch.float32) if torch is not None \
            else None
        reps = repeats if nbytes < (16 << 20) else max(3, repeats // 3)

        def lazy_write():
            c = t.lazy_clone()
            c[0] = 1.0

        res = {
            "lazy": per_call_ns(lambda: t.lazy_clone(), reps),
            "lazy_write": per_call_ns(lazy_write, reps),
            "clone": per_call_ns(lambda: t.clone(), reps),
            "numpy": per_call_ns(lambda: a.copy(), reps),
            "torch": per_call_ns(lambda: x.clone(), reps)
            if x is not None else None,
        }
        label = "%d KiB" % (nbytes >> 10) if nbytes < (1 << 20) else \
            "%d MiB" % (nbytes >> 20)
        speed_np = res["numpy"] / res["lazy"]
        rows.append([label, fmt_ns(res["lazy"]), fmt_ns(res["clone"]),
                     fmt_ns(res["lazy_write"]), fmt_ns(res["numpy"]),
                     fmt_ns(res["torch"]), "%.0fx" % speed_np])
        t = a = x = None
        gc.collect()
    return rows


def bench_dlpack(repeats):
    n = 16
    t = cowstore.arange(n, dtype="float32")
    a = np.arange(n, dtype=np.float32)
    x = torch.arange(n, dtype=torch.float32) if torch is not None else None
    rows = []

    def add(call, producer, fn):
        rows.append([call, producer, fmt_ns(per_call_ns(fn, repeats))])

    # export: make a capsule and drop it unconsumed (its destructor runs
    # the deleter: for cowstore, the unpin)
    add("`Tensor.__dlpack__()`", "cowstore", lambda: t.__dlpack__())
    add("`Tensor.__dlpack__(max_version=(1, 0))`", "cowstore",
        lambda: t.__dlpack__(max_version=(1, 0)))
    add("`Tensor.__dlpack__(read_only=True)`", "cowstore",
        lambda: t.__dlpack__(read_only=True))
    add("`ndarray.__dlpack__()`", "NumPy", lambda: a.__dlpack__())
    if x is not None:
        add("`torch.Tensor.__dlpack__()`", "PyTorch", lambda: x.__dlpack__())
    # import (the import is dropped again: its deleter runs)
    add("`cowstore.from_dlpack`", "cowstore", lambda: cowstore.from_dlpack(t))
    add("`cowstore.from_dlpack`", "NumPy", lambda: cowstore.from_dlpack(a))
    if x is not None:
        add("`cowstore.from_dlpack`", "PyTorch",
            lambda: cowstore.from_dlpack(x))
    add("`cowstore.from_dlpack(capsule)`", "cowstore (legacy capsule)",
        lambda: cowstore.from_dlpack(t.__dlpack__()))
    add("`np.from_dlpack`", "NumPy", lambda: np.from_dlpack(a))
    add("`np.from_dlpack`", "cowstore", lambda: np.from_dlpack(t))
    if x is not None:
        add("`np.from_dlpack`", "PyTorch", lambda: np.from_dlpack(x))
        add("`torch.from_dlpack`", "PyTorch", lambda: torch.from_dlpack(x))
        add("`torch.from_dlpack`", "cowstore", lambda: torch.from_dlpack(t))
        add("`torch.from_dlpack`", "NumPy", lambda: torch.from_dlpack(a))
    # the buffer protocol, for reference
    add("`memoryview(t)` (read-only snapshot)", "cowstore",
        lambda: memoryview(t))
    add("`t.numpy()` (writable, pinned)", "cowstore", lambda: t.numpy())
    add("`memoryview(ndarray)`", "NumPy", lambda: memoryview(a))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeats = 5 if args.quick else args.repeats
    sizes = [4 << 10, 1 << 20] + ([] if args.quick else [64 << 20])

    print("# cowstore Python benchmark")
    print()
    print("- interpreter: %s %s (%s)" % (
        platform.python_implementation(), platform.python_version(),
        sys.executable))
    print("- platform: %s, %s, %d CPUs" % (
        platform.platform(), platform.machine(), os.cpu_count() or 0))
    print("- cowstore: %s (%s)" % (getattr(cowstore, "__version__", "?"),
                                   cowstore.__file__))
    print("- NumPy: %s" % np.__version__)
    print("- PyTorch: %s" % (torch.__version__ if torch is not None
                             else "not used"))
    print("- best of %d repetitions (fewer at 64 MiB), time per call" %
          repeats)
    print()
    print("## Copies of a float32 tensor")
    print()
    print(table(["size", "cowstore `lazy_clone()`", "cowstore `clone()`",
                 "cowstore `lazy_clone()` + 1-element write",
                 "NumPy `ndarray.copy()`", "PyTorch `Tensor.clone()`",
                 "`copy()` / `lazy_clone()`"],
                bench_copies(sizes, repeats)))
    print()
    print("## DLPack and buffer overhead per call (16 float32)")
    print()
    print(table(["call", "producer", "time per call"],
                bench_dlpack(repeats)))
    print()
    s = cowstore.memory_stats()
    print("memory after the run: live_bytes %d, retained %d" % (
        s["live_bytes"], cowstore.retained_bytes()))


if __name__ == "__main__":
    main()
