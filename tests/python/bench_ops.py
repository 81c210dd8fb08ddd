#!/usr/bin/python3
"""bench_ops.py - cowstore's ops against NumPy's, side by side in one run
(a benchmark: it prints ratios and asserts nothing).

Both libraries are called from Python on the same data, each op in the
form that writes into existing memory where there is one (NumPy's out=),
so that both pay their own per-call overhead and nothing else:

  op               cowstore                 NumPy
  add_, mul_       a += b, a *= b           np.add(a, b, out=a)
  sub_, div_       a -= b, a /= ones        np.subtract(a, b, out=a)
                   (ones: thousands of repetitions keep the values)
  add, mul         a + b, a * b             np.add(a, b)
  sub, div         a - b, a / b             np.subtract(a, b)
                   (div_ of integers: n/a, a TypeError in both; div of
                   integers writes float64 in both)
  matmul           m @ m (square)           np.matmul(m, m)
                   (n/a at 64 MiB: a 4096 x 4096 product is minutes for
                   cowstore's plain loop)
  matvec           m @ v (square @ 1-D)     np.matmul(m, v)
  add_s, mul_s     a += 3, a *= 1           np.add(a, 3, out=a)
                   (times 1: thousands of repetitions keep the values)
  add_bc, mul_bc   a += row (broadcast)     np.add(a, row, out=a)
  neg              -a                       np.negative(a)
  fill             a.fill_(2)               a.fill(2)
  copy             d.copy_(a)               np.copyto(d, a)
  copy_conv        d64.copy_(a)             np.copyto(d64, a)
  copy_T           d.copy_(a2.T)            np.copyto(d, a2.T)
  sum              a.sum()                  np.add.reduce(a)

for float32, float64, int32, int64 and float16 at 4 KiB, 1 MiB and 64 MiB
per operand; --dtypes may also name complex64, complex128 and bool, for
matmul and matvec only (the other ops: n/a). Three rounds, interleaved: in each round every case runs
cowstore then NumPy, each the best of R repetitions; the printed ratio is
cowstore's time over NumPy's, the median of the rounds.

Run (Debian's interpreter, the release build of the module):
    scripts/ops-vs-numpy.sh            # builds the release preset first
    PYTHONPATH=build/release/python /usr/bin/python3 tests/python/bench_ops.py
Options: --rounds N (3), --sizes 4K,1M,64M, --dtypes ..., --ops ...,
--repeats N (repetitions per measurement at 4 KiB; fewer for larger).
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

import cowstore

SIZES = {"4K": 4 << 10, "1M": 1 << 20, "64M": 64 << 20}
DTYPES = ["float32", "float64", "int32", "int64", "float16"]
OPS = ["add_", "mul_", "sub_", "div_", "add", "mul", "sub", "div", "add_s",
       "mul_s", "add_bc", "mul_bc", "neg", "fill", "copy", "copy_conv",
       "copy_T", "sum", "matmul", "matvec"]


def best_of(fn, repeats, inner):
    """The best time of `repeats` measurements of `inner` calls, per call."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        t = (time.perf_counter_ns() - t0) / inner
        best = min(best, t)
    return best


def make_case(op, dtype, nbytes):
    """(cowstore callable, NumPy callable) over equal fresh data; None
    where the op does not apply (n/a)."""
    item = np.dtype(dtype).itemsize
    n = max(nbytes // item, 1)
    rng = np.random.default_rng(1)
    integer = not dtype.startswith("float")
    products_only = dtype.startswith("complex") or dtype == "bool"
    if (op == "div_" and integer) or \
            (products_only and op not in ("matmul", "matvec")) or \
            (op == "matmul" and nbytes > (1 << 20)):
        return None
    if dtype.startswith("float"):
        base = rng.uniform(0.5, 1.5, n).astype(dtype)
    elif dtype.startswith("complex"):
        base = (rng.uniform(0.5, 1.5, n) +
                1j * rng.uniform(0.5, 1.5, n)).astype(dtype)
    elif dtype == "bool":
        base = rng.integers(0, 2, n).astype(dtype)
    else:
        base = rng.integers(1, 5, n).astype(dtype)
    a_np = base.copy()
    b_np = base.copy()
    a_cs = cowstore.tensor(base)      # own memory (a copy), not pinned
    b_cs = cowstore.tensor(base)
    if op in ("add_bc", "mul_bc"):
        cols = 1024 if n >= 1024 else n
        rows = n // cols
        a_np = a_np[:rows * cols].reshape(rows, cols)
        a_cs = cowstore.tensor(a_np)
        row_np = base[:cols].copy()
        row_cs = cowstore.tensor(row_np)
    if op in ("matmul", "matvec"):
        side = int(n ** 0.5)
        m_np = base[:side * side].reshape(side, side)
        m_cs = cowstore.tensor(m_np)
        if op == "matmul":
            return (lambda: m_cs @ m_cs, lambda: np.matmul(m_np, m_np))
        v_np = base[:side].copy()
        v_cs = cowstore.tensor(v_np)
        return (lambda: m_cs @ v_cs, lambda: np.matmul(m_np, v_np))
    if op == "copy_T":
        side = int(n ** 0.5)
        a_np = base[:side * side].reshape(side, side)
        a_cs = cowstore.tensor(a_np)
        d_np = np.empty((side, side), dtype)
        d_cs = cowstore.zeros((side, side), dtype=dtype)
    elif op in ("copy", "copy_conv"):
        wide = "float64" if op == "copy_conv" and dtype != "float64" else \
            ("float32" if op == "copy_conv" else dtype)
        d_np = np.empty(n, wide)
        d_cs = cowstore.zeros((n,), dtype=wide)
    one_np = np.ones(n, dtype)
    one_cs = cowstore.tensor(one_np)
    s = 3
    table = {
        "add_": (lambda: a_cs.__iadd__(b_cs),
                 lambda: np.add(a_np, b_np, out=a_np)),
        "mul_": (lambda: a_cs.__imul__(b_cs),
                 lambda: np.multiply(a_np, b_np, out=a_np)),
        "sub_": (lambda: a_cs.__isub__(b_cs),
                 lambda: np.subtract(a_np, b_np, out=a_np)),
        "div_": (lambda: a_cs.__itruediv__(one_cs),
                 lambda: np.true_divide(a_np, one_np, out=a_np)),
        "add": (lambda: a_cs + b_cs, lambda: np.add(a_np, b_np)),
        "sub": (lambda: a_cs - b_cs, lambda: np.subtract(a_np, b_np)),
        "div": (lambda: a_cs / b_cs, lambda: np.true_divide(a_np, b_np)),
        "mul": (lambda: a_cs * b_cs, lambda: np.multiply(a_np, b_np)),
        "add_s": (lambda: a_cs.__iadd__(s),
                  lambda: np.add(a_np, s, out=a_np)),
        "mul_s": (lambda: a_cs.__imul__(1),
                  lambda: np.multiply(a_np, 1, out=a_np)),
        "neg": (lambda: -a_cs, lambda: np.negative(a_np)),
        "fill": (lambda: a_cs.fill_(2), lambda: a_np.fill(2)),
        "sum": (lambda: a_cs.sum(), lambda: np.add.reduce(a_np)),
    }
    if op in ("add_bc", "mul_bc"):
        if op == "add_bc":
            return (lambda: a_cs.__iadd__(row_cs),
                    lambda: np.add(a_np, row_np, out=a_np))
        return (lambda: a_cs.__imul__(row_cs),
                lambda: np.multiply(a_np, row_np, out=a_np))
    if op == "copy_T":
        t_cs = a_cs.T
        t_np = a_np.T
        return (lambda: d_cs.copy_(t_cs), lambda: np.copyto(d_np, t_np))
    if op in ("copy", "copy_conv"):
        return (lambda: d_cs.copy_(a_cs),
                lambda: np.copyto(d_np, a_np, casting="unsafe"))
    return table[op]


def repeats_for(nbytes, base):
    return base if nbytes <= (1 << 20) else max(3, base // 3)


def inner_for(nbytes):
    return 200 if nbytes <= (4 << 10) else (5 if nbytes <= (1 << 20) else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--sizes", default="4K,1M,64M")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--ops", default=",".join(OPS))
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    dtypes = args.dtypes.split(",")
    ops = args.ops.split(",")

    print("# cowstore ops against NumPy")
    print()
    print("- interpreter: CPython %s (%s)" % (platform.python_version(),
                                             sys.executable))
    print("- NumPy %s; cowstore %s (%s)" % (np.__version__,
                                            cowstore.__version__,
                                            cowstore.__file__))
    print("- %s, %d CPUs; %d interleaved rounds, best of %d per "
          "measurement (fewer above 1 MiB)" % (platform.machine(),
                                               os.cpu_count(), args.rounds,
                                               args.repeats))
    print()
    cases = [(op, dt, sz) for sz in sizes for op in ops for dt in dtypes]
    made = {}
    ratios = {c: [] for c in cases}
    times = {c: [] for c in cases}
    for rnd in range(args.rounds):
        for c in cases:
            op, dt, sz = c
            nbytes = SIZES[sz]
            if c not in made:
                made[c] = make_case(op, dt, nbytes)
            if made[c] is None:
                continue
            fc, fn = made[c]
            reps = repeats_for(nbytes, args.repeats)
            inner = inner_for(nbytes)
            fc(); fn()  # warm: first touch, caches, lazy imports
            tc = best_of(fc, reps, inner)
            tn = best_of(fn, reps, inner)
            ratios[c].append(tc / tn)
            times[c].append((tc, tn))
        if sizes and "64M" in sizes:
            made = {k: v for k, v in made.items() if k[2] != "64M"}
        print("round %d of %d done" % (rnd + 1, args.rounds),
              file=sys.stderr)

    for sz in sizes:
        print("## %s per operand: cowstore time / NumPy time (median of "
              "%d rounds)" % (sz, args.rounds))
        print()
        print_table(ops, dtypes, lambda op, dt: "%.2f" % statistics.median(
            ratios[(op, dt, sz)]) if ratios[(op, dt, sz)] else "n/a")
        print("times (cowstore / NumPy, median round):")
        print()
        print_table(ops, dtypes, lambda op, dt: "%s / %s" % tuple(
            map(fmt, median_round(times[(op, dt, sz)])))
            if times[(op, dt, sz)] else "n/a")


def median_round(rounds):
    """The (cowstore, NumPy) pair of the round with the median ratio."""
    return sorted(rounds, key=lambda p: p[0] / p[1])[len(rounds) // 2]


def print_table(ops, dtypes, cell):
    print("| op | " + " | ".join(dtypes) + " |")
    print("|---|" + "---:|" * len(dtypes))
    for op in ops:
        print("| %s | %s |" % (op, " | ".join(cell(op, dt) for dt in dtypes)))
    print()


def fmt(ns):
    if ns < 1e3:
        return "%.0f ns" % ns
    if ns < 1e6:
        return "%.1f us" % (ns / 1e3)
    return "%.2f ms" % (ns / 1e6)


if __name__ == "__main__":
    main()
