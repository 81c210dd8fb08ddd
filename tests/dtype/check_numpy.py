#!/usr/bin/python3
"""check_numpy.py - recompute dtype_table's output with NumPy, bit for bit.

Usage: /usr/bin/python3 check_numpy.py TABLE_PROGRAM
(Debian's interpreter, with python3-numpy; a pyenv python3 has no numpy.)

What is compared (every line of the table, README.md has the details):
- conv: ndarray.astype(dst), except where NumPy leaves the result
  undefined (a C conversion of an out-of-range or NaN float to an
  integer: cowstore saturates and gives 0 for NaN), which is counted as
  skipped;
- add, mul, neg: NumPy's ufuncs on arrays of the dtype;
- sum, rep: in the accumulation dtype (int64 or uint64 for integers and
  bool, float32 for float16 and bfloat16, the dtype itself otherwise),
  then astype to the result dtype: np.add.reduce for the floating and
  complex accumulators (pairwise, as cowstore sums a run: ops.h), and
  np.add.accumulate from 0 (index order) for the integer ones (exact in
  any order).
Arithmetic results that are NaN are compared as NaN only: IEEE 754 leaves
the sign and payload of a NaN that an operation returns unspecified (x86
returns the first operand's NaN, or a negative default NaN for an invalid
operation, and NumPy's vector loops may order operands otherwise).
Conversions are compared bit for bit, NaNs included.
NumPy has no bfloat16: it is emulated, from float32 values by rounding the
low 16 bits to nearest even (the standard trick), and from wider values by
exact rational rounding (the two must agree where both apply).

COW_DTYPE_CHECK_PERTURB=1 flips one bit of one expected value: the
comparison must then fail (the negative control).
"""
import fractions
import math
import os
import subprocess
import sys
import warnings

import numpy as np

NP = {
    "bool": np.bool_, "uint8": np.uint8, "int32": np.int32,
    "int64": np.int64, "float32": np.float32, "float64": np.float64,
    "int8": np.int8, "int16": np.int16, "uint16": np.uint16,
    "uint32": np.uint32, "uint64": np.uint64, "float16": np.float16,
    "bfloat16": None, "complex64": np.complex64, "complex128": np.complex128,
}
BITS = {"bool": np.uint8, "uint8": np.uint8, "int8": np.uint8,
        "int16": np.uint16, "uint16": np.uint16, "float16": np.uint16,
        "bfloat16": np.uint16, "int32": np.uint32, "uint32": np.uint32,
        "float32": np.uint32, "int64": np.uint64, "uint64": np.uint64,
        "float64": np.uint64}
COMPLEX_PART = {"complex64": (np.float32, np.uint32),
                "complex128": (np.float64, np.uint64)}
INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64"}
FLOATS = {"float16", "bfloat16", "float32", "float64"}


# --- bfloat16 emulation ---------------------------------------------------

def bf16_from_f32_bits(b):
    """float32 bits -> bfloat16 bits: round the low 16 bits to nearest
    even; a NaN keeps its top bits and is made quiet."""
    b = int(b)
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return (b >> 16) | 0x0040
    b += 0x7FFF + ((b >> 16) & 1)
    return (b >> 16) & 0xFFFF


def bf16_from_exact(x):
    """An exact value (int, or float: any finite double or inf) ->
    bfloat16 bits, by rational rounding: 8 significant bits, exponents
    -126..127, subnormals at 2^-133, ties to even, overflow to inf."""
    neg = (x < 0) or (isinstance(x, float) and math.copysign(1.0, x) < 0)
    if isinstance(x, float) and math.isinf(x):
        return 0xFF80 if neg else 0x7F80
    q = fractions.Fraction(abs(x))
    if q == 0:
        return 0x8000 if neg else 0
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if fractions.Fraction(2) ** e > q:
        e -= 1                     # q in [2^e, 2^(e+1))
    e = max(e, -126)
    ulp = fractions.Fraction(2) ** (e - 7)
    k = q / ulp
    n = k.numerator // k.denominator
    r = k - n
    if r > fractions.Fraction(1, 2) or (r == fractions.Fraction(1, 2)
                                        and n % 2 == 1):
        n += 1
    if e == -126 and n < 128:      # subnormal (n == 128: the min normal)
        bits = n
    else:
        if n == 256:
            n, e = 128, e + 1
        if e > 127:
            return 0xFF80 if neg else 0x7F80
        bits = ((e + 127) << 7) | (n - 128)
    return bits | (0x8000 if neg else 0)


def bf16_to_f32(bits):
    return np.array([int(bits) << 16], dtype=np.uint32).view(np.float32)[0]


# --- reading the table ----------------------------------------------------

def grid_values(dt, words):
    """The grid as a NumPy array (bfloat16: float32 values, exact)."""
    if dt in COMPLEX_PART:
        fl, ui = COMPLEX_PART[dt]
        parts = [w.split(":") for w in words]
        re = np.array([int(p[0], 16) for p in parts], dtype=ui).view(fl)
        im = np.array([int(p[1], 16) for p in parts], dtype=ui).view(fl)
        out = np.empty(len(words), dtype=NP[dt])
        out.real, out.imag = re, im
        return out
    raw = np.array([int(w, 16) for w in words], dtype=BITS[dt])
    if dt == "bfloat16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    if dt == "bool":
        return raw.astype(np.bool_)
    return raw.view(NP[dt])


def hex_of(dt, v):
    """A NumPy scalar of dtype dt (bfloat16: an int of bits) as the table
    prints it."""
    if dt == "bfloat16":
        return "%x" % int(v)
    if dt in COMPLEX_PART:
        fl, ui = COMPLEX_PART[dt]
        c = np.array([v], dtype=NP[dt])
        return "%x:%x" % (int(c.real.astype(fl).view(ui)[0]),
                          int(c.imag.astype(fl).view(ui)[0]))
    a = np.array([v], dtype=NP[dt])
    if dt == "bool":
        return "%x" % int(a[0])
    return "%x" % int(a.view(BITS[dt])[0])


# --- expected values ------------------------------------------------------

def exact(src, v):
    """The exact real value of a grid element (complex: the real part), as
    int or float (every float32, float16 and bfloat16 is a double)."""
    if src in COMPLEX_PART:
        v = v.real
    if src == "bool" or src in INTS:
        return int(v)
    return float(v)


def f32_exact(src, v):
    """Is the element's real value a float32 (so the float32 emulation of
    bfloat16 applies)?"""
    x = exact(src, v)
    if isinstance(x, int):
        return abs(x) < 2 ** 24 or float(np.float32(x)) == x
    return math.isnan(x) or math.isinf(x) or float(np.float32(x)) == x


def nan_bits_bf16(src, v):
    """bfloat16 of a NaN: sign, quiet bit, top payload bits (as float64)."""
    re = np.array([v.real if src in COMPLEX_PART else v], dtype=np.float64)
    b = int(re.view(np.uint64)[0])
    return ((b >> 48) & 0x8000) | 0x7FC0 | ((b >> 45) & 0x7F)


def conv_expected(src, dst, v):
    """(hex or None when NumPy does not define it)."""
    if dst == "bfloat16":
        x = exact(src, v)
        if isinstance(x, float) and math.isnan(x):
            return "%x" % nan_bits_bf16(src, v)
        if src == "bool" or src in INTS and not f32_exact(src, v):
            return "%x" % bf16_from_exact(x)
        if not f32_exact(src, v):
            return "%x" % bf16_from_exact(x)
        by32 = bf16_from_f32_bits(np.array([x], np.float32).view(
            np.uint32)[0])
        assert by32 == bf16_from_exact(x) or math.isnan(x), (src, v)
        return "%x" % by32
    if src == "bfloat16":
        src, v = "float32", np.float32(v)
    if dst in INTS:
        x = exact(src, v)
        if isinstance(x, float):
            info = np.iinfo(NP[dst])
            if not math.isfinite(x) or not (
                    info.min <= math.trunc(x) <= info.max):
                return None
    a = np.array([v]).astype(NP[src]).astype(NP[dst])
    return hex_of(dst, a[0])


def arith(dt, op, a, b=None):
    """NumPy's op on arrays of dtype dt; bfloat16 in float32, rounded."""
    if dt == "bfloat16":
        a = np.asarray(a, np.float32)
        b = None if b is None else np.asarray(b, np.float32)
        r = {"add": np.add, "mul": np.multiply}[op](a, b) if b is not None \
            else np.negative(a)
        return [bf16_from_f32_bits(x) for x in
                np.asarray(r, np.float32).reshape(-1).view(np.uint32)]
    if op == "add":
        r = np.add(a, b)
    elif op == "mul":
        r = np.multiply(a, b)
    else:
        r = np.negative(a)
    return list(np.asarray(r, NP[dt]).reshape(-1))


def acc_dtype(dt):
    if dt in ("bool", "int8", "int16", "int32", "int64", "uint8"):
        return "int64"
    if dt in ("uint16", "uint32", "uint64"):
        return "uint64"
    if dt in ("float16", "bfloat16"):
        return "float32"
    return dt


def sum_expected(dt, rdt, xs):
    acc = acc_dtype(dt)
    zero = np.zeros(1, dtype=NP[acc])
    vals = np.asarray(xs).astype(NP[acc])
    if acc in ("float32", "float64", "complex64", "complex128"):
        s = np.add.reduce(vals) if len(vals) else zero[0]
    else:
        s = np.add.accumulate(np.concatenate([zero, vals]))[-1]
    if rdt == "bfloat16":
        return "%x" % bf16_from_f32_bits(np.array([s], np.float32).view(
            np.uint32)[0])
    return hex_of(rdt, np.array([s]).astype(NP[rdt])[0])


def is_nan_bits(dt, h):
    """Is the hex of one real part (of dt's component type) a NaN?"""
    width = {"float16": 16, "bfloat16": 16, "float32": 32,
             "complex64": 32, "float64": 64, "complex128": 64}.get(dt)
    if width is None:
        return False
    b = int(h, 16)
    ebits, mbits = {16: (5, 10) if dt == "float16" else (8, 7),
                    32: (8, 23), 64: (11, 52)}[width]
    e = (b >> mbits) & ((1 << ebits) - 1)
    return e == (1 << ebits) - 1 and (b & ((1 << mbits) - 1)) != 0


def same_result(dt, want, got):
    """Bit for bit, except that two NaNs match (arithmetic only)."""
    for w, g in zip(want.split(":"), got.split(":")):
        if w != g and not (is_nan_bits(dt, w) and is_nan_bits(dt, g)):
            return False
    return want.count(":") == got.count(":")


# --- main -----------------------------------------------------------------

def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_numpy.py TABLE_PROGRAM")
    out = subprocess.run([sys.argv[1]], check=True, stdout=subprocess.PIPE,
                         text=True).stdout.splitlines()
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    grid = {}
    compared = skipped = 0
    bad = []
    perturb = os.environ.get("COW_DTYPE_CHECK_PERTURB") == "1"
    for line in out:
        w = line.split()
        kind = w[0]
        if kind == "grid":
            grid[w[1]] = grid_values(w[1], w[2:])
            continue
        got = w[-1]
        if kind == "conv":
            src, dst, i = w[1], w[2], int(w[3])
            want = conv_expected(src, dst, grid[src][i])
        elif kind in ("add", "mul"):
            dt, i, j = w[1], int(w[2]), int(w[3])
            g = grid[dt]
            want = arith(dt, kind, g[i:i + 1], g[j:j + 1])[0]
            want = want if dt == "bfloat16" else hex_of(dt, want)
            want = "%x" % want if dt == "bfloat16" else want
        elif kind == "neg":
            dt, i = w[1], int(w[2])
            want = arith(dt, "neg", grid[dt][i:i + 1])[0]
            want = "%x" % want if dt == "bfloat16" else hex_of(dt, want)
        elif kind == "sum":
            dt, rdt, i, n = w[1], w[2], int(w[3]), int(w[4])
            want = sum_expected(dt, rdt, grid[dt][i:i + n])
        elif kind == "rep":
            dt, rdt, i, k = w[1], w[2], int(w[3]), int(w[4])
            want = sum_expected(dt, rdt, np.repeat(grid[dt][i:i + 1], k))
        else:
            sys.exit("check_numpy: unknown line: " + line)
        if want is None:
            skipped += 1
            continue
        if perturb and compared == 1000:
            want = want[:-1] + "%x" % (int(want[-1], 16) ^ 1)
        compared += 1
        if kind == "conv":
            ok = want == got
        else:
            ok = same_result(w[2] if kind in ("sum", "rep") else w[1],
                             want, got)
        if not ok:
            bad.append("%s: cowstore %s, NumPy %s" % (" ".join(w[:-1]),
                                                      got, want))
    for b in bad[:40]:
        print("MISMATCH " + b)
    print("dtype-numpy: %d compared, %d skipped (undefined in NumPy), "
          "%d mismatched" % (compared, skipped, len(bad)))
    print("%d passed, %d failed" % (compared - len(bad), len(bad)))
    sys.exit(1 if bad or compared == 0 else 0)


if __name__ == "__main__":
    main()
