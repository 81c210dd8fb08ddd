"""The operators of issue 39 against NumPy 1.24: -, /, //, %, the
comparisons (and +, * under the new result-type rules), their in-place
forms, on random shapes (broadcast, zero-size, 0-d), dtypes (mixed) and
layouts (transposed, stepped), with tensors and Python scalars.

Result dtypes follow docs/tensor.md: NumPy's promote_types between
tensors; Python scalars are weak (NEP 50). Where NumPy 1.24's value-based
casting gives another dtype (a scalar that the tensor's dtype cannot
hold), test_value_based_casting_differences states the difference; the
scalars drawn elsewhere fit, and there both rules agree (asserted).

Values are compared exactly: equal, NaN where NumPy has NaN, and the sign
of zeros the same.
"""
import operator
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import cowstore
from conftest import (COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES,
                      NUMPY_DTYPES, UINT_DTYPES, to_numpy_values)

ARITH = {"sub": operator.sub, "div": operator.truediv,
         "floor_div": operator.floordiv, "mod": operator.mod,
         "add": operator.add, "mul": operator.mul}
COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
           "le": operator.le, "gt": operator.gt, "ge": operator.ge}
OPS = {**ARITH, **COMPARE}
INPLACE = {"sub": operator.isub, "div": operator.itruediv,
           "floor_div": operator.ifloordiv, "mod": operator.imod,
           "add": operator.iadd, "mul": operator.imul}


def numpy_op(name, a, b):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(OPS[name](a, b))


def refused_by_numpy(name, a, b):
    """Does NumPy refuse the op for these operands (TypeError)?"""
    try:
        numpy_op(name, a, b)
    except TypeError:
        return True
    return False


def assert_same(got, want, what):
    """cowstore's result equals NumPy's: dtype, shape, values (NaN as
    NaN, zeros with their sign)."""
    assert got.dtype == want.dtype.name, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    g = to_numpy_values(got)
    if want.dtype.kind in "fc":
        for part in ((lambda x: x.real, lambda x: x.imag)
                     if want.dtype.kind == "c" else (lambda x: x,)):
            gp, wp = part(g), part(want)
            assert np.array_equal(np.isnan(gp), np.isnan(wp)), (what, g, want)
            ok = ~np.isnan(wp)
            assert np.array_equal(gp[ok], wp[ok]), (what, g, want)
            assert np.array_equal(np.signbit(gp[ok]), np.signbit(wp[ok])), \
                (what, g, want)
    else:
        assert np.array_equal(g, want), (what, g, want)


def elements(dtype):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        # Small values (divisors near zero, equal pairs), and the edges.
        return st.one_of(st.integers(-6, 6).filter(
            lambda v: info.min <= v <= info.max),
            st.sampled_from([int(info.min), int(info.max)]))
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 3.0]
    width = dt.itemsize * 8
    if dt.kind == "c":
        width = 32 if dt == np.complex64 else 64
        real = st.one_of(st.sampled_from(special),
                         st.floats(width=width, allow_nan=False))
        return st.builds(complex, real, real)
    return st.one_of(st.sampled_from(special),
                     st.floats(width=width, allow_nan=False))


class Layout:
    """A NumPy array and the cowstore tensor with the same values and
    layout: contiguous, transposed (.T of a contiguous base) or stepped
    (every second element of the last dimension of a base)."""

    def __init__(self, base, kind):
        self.base, self.kind = base, kind
        self.array = base.T if kind == "T" else \
            base[..., ::2] if kind == "step" else base

    def tensor(self):
        t = cowstore.tensor(self.base)
        if self.kind == "T":
            return t.T
        if self.kind == "step":
            return t[..., ::2]
        return t


@st.composite
def layout_of(draw, dtype, shape):
    kind = draw(st.sampled_from(["c", "T", "step"]))
    if kind == "T" and len(shape) >= 2:
        base = draw(hnp.arrays(dtype, shape[::-1], elements=elements(dtype)))
    elif kind == "step" and len(shape) >= 1:
        big = tuple(shape[:-1]) + (2 * shape[-1],)
        base = draw(hnp.arrays(dtype, big, elements=elements(dtype)))
    else:
        kind = "c"
        base = draw(hnp.arrays(dtype, shape, elements=elements(dtype)))
    return Layout(base, kind)


dtypes = st.sampled_from(NUMPY_DTYPES)


@given(data=st.data(), name=st.sampled_from(sorted(OPS)), da=dtypes,
       db=dtypes)
def test_tensor_op_tensor_matches_numpy(data, name, da, db):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4))
    la = data.draw(layout_of(da, shapes.input_shapes[0]))
    lb = data.draw(layout_of(db, shapes.input_shapes[1]))
    a, b, ta, tb = la.array, lb.array, la.tensor(), lb.tensor()
    assert np.array_equal(to_numpy_values(ta), a, equal_nan=True)
    if refused_by_numpy(name, a, b):
        with pytest.raises(TypeError):
            OPS[name](ta, tb)
        return
    # NumPy 1.24 treats a 0-d array as a scalar (value-based casting);
    # cowstore's 0-d tensors are tensors (NEP 50): the operands go to
    # promote_types first, which is NumPy's own rule for other arrays.
    r = np.promote_types(a.dtype, b.dtype)
    want = numpy_op(name, a.astype(r), b.astype(r))
    if a.ndim > 0 and b.ndim > 0:
        assert numpy_op(name, a, b).dtype == want.dtype
    assert_same(OPS[name](ta, tb), want, (name, da, db, a, b))


def scalar_for(dtype):
    """Python scalars that @dtype's tensors take with the same result under
    NEP 50 and NumPy 1.24's value-based rule: ints the dtype holds, floats
    a float16 holds, complex values."""
    dt = np.dtype(dtype)
    ints = st.integers(-6, 6)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        ints = st.integers(max(-6, int(info.min)), min(6, int(info.max)))
    finite = [0.0, -0.0, 0.5, -1.5, 3.0, 100.0]
    floats = st.sampled_from(finite + [np.inf, np.nan])
    # NumPy 1.24 takes a non-finite complex scalar as complex128 (value-
    # based) even against float16 and float32: finite parts only.
    parts = st.sampled_from(finite)
    return st.one_of(st.booleans(), ints, floats,
                     st.builds(complex, parts, parts))


@given(data=st.data(), name=st.sampled_from(sorted(OPS)), dtype=dtypes,
       left=st.booleans())
def test_tensor_op_scalar_matches_numpy(data, name, dtype, left):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                       max_side=4))
    la = data.draw(layout_of(dtype, shape))
    a, ta = la.array, la.tensor()
    s = data.draw(scalar_for(dtype))
    x, y, tx, ty = (s, a, s, ta) if left else (a, s, ta, s)
    if refused_by_numpy(name, x, y):
        with pytest.raises(TypeError):
            OPS[name](tx, ty)
        return
    # The scalar in its weak dtype, both operands promoted: NEP 50. In
    # this range NumPy 1.24's value-based rule agrees (asserted), except
    # for 0-d arrays, which it treats as scalars too.
    r = np.promote_types(a.dtype, nep50_dtype(a.dtype, s))
    ar, sr = a.astype(r), np.asarray(s).astype(r)
    want = numpy_op(name, sr, ar) if left else numpy_op(name, ar, sr)
    assert want.dtype == nep50_op_dtype(name, a.dtype, s), (want.dtype, s)
    if a.ndim > 0:
        assert numpy_op(name, x, y).dtype == want.dtype, (s, want.dtype)
    assert_same(OPS[name](tx, ty), want, (name, dtype, a, s, left))


def nep50_dtype(dtype, s):
    """docs/tensor.md's weak-scalar rule: the dtype a Python scalar takes
    against a tensor of @dtype."""
    k = dtype.kind
    if isinstance(s, bool):
        return dtype
    if isinstance(s, int):
        return np.dtype("int64") if k == "b" else dtype
    if isinstance(s, float):
        return np.dtype("float64") if k in "biu" else dtype
    if k in "biu" or dtype == np.float64:
        return np.dtype("complex128")
    return np.dtype("complex64") if k == "f" else dtype


def nep50_op_dtype(name, dtype, s):
    """The result dtype docs/tensor.md gives op(tensor, scalar)."""
    r = np.promote_types(dtype, nep50_dtype(dtype, s))
    if name in COMPARE:
        return np.dtype("bool")
    if name == "div" and r.kind in "biu":
        return np.dtype("float64")
    if name in ("floor_div", "mod") and r.kind == "b":
        return np.dtype("int8")
    return r


@given(data=st.data(), name=st.sampled_from(sorted(INPLACE)), da=dtypes,
       db=dtypes, scalar=st.booleans())
def test_inplace_matches_numpy_same_kind(data, name, da, db, scalar):
    # At least 1-d: NumPy 1.24 computes a 0-d array op= scalar in the
    # scalar's default dtype (value-based), which then rounds differently.
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                       max_side=4))
    la = data.draw(layout_of(da, shape))
    a, ta = la.array, la.tensor()
    if scalar:
        b = tb = data.draw(scalar_for(da))
    else:
        bshape = data.draw(hnp.broadcastable_shapes(
            shape, min_dims=0, max_dims=len(shape), min_side=0))
        assume(np.broadcast_shapes(shape, bshape) == shape)
        lb = data.draw(layout_of(db, bshape))
        b, tb = lb.array, lb.tensor()
        # A 0-d array is value-based in NumPy 1.24, a 0-d tensor is not:
        # NumPy gets the same values as one element of one dimension.
        b = b.reshape(1) if b.ndim == 0 else b
    want = a.copy()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = INPLACE[name](want, b)
    except TypeError:   # NumPy's same_kind refusal, or no loop
        before = to_numpy_values(ta)
        with pytest.raises(TypeError):
            INPLACE[name](ta, tb)
        assert np.array_equal(to_numpy_values(ta), before, equal_nan=True)
        return
    ident = id(ta)
    ta = INPLACE[name](ta, tb)
    assert id(ta) == ident
    assert_same(ta, np.asarray(want), (name, da, db, a, b))


def test_value_based_casting_differences():
    """Where NumPy 1.24 looks at a Python scalar's value and cowstore
    (NEP 50, as NumPy 2) does not: the dtype stays the tensor's, and an
    int the dtype cannot hold is an OverflowError."""
    i8 = np.array([1, 2], dtype=np.int8)
    assert (i8 + 1000).dtype == np.int16               # NumPy 1.24
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        cowstore.tensor(i8) + 1000
    u8 = np.array([1, 2], dtype=np.uint8)
    assert (u8 - (-1)).dtype == np.int16               # NumPy 1.24
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        cowstore.tensor(u8) - (-1)
    f32 = np.array([1.0], dtype=np.float32)
    with np.errstate(all="ignore"):
        assert (f32 * 1e300).dtype == np.float64       # NumPy 1.24
    t = cowstore.tensor(f32) * 1e300                  # 1e300 as float32
    assert t.dtype == "float32" and t.tolist() == [np.inf]
    # A 0-d array is value-based in NumPy 1.24; a 0-d tensor is a tensor.
    z = np.array(127, dtype=np.int8)
    assert (z + u8).dtype == np.uint8                  # NumPy 1.24
    assert (cowstore.tensor(z) + cowstore.tensor(u8)).dtype == "int16"


def test_equality_is_element_wise_and_tensors_unhashable():
    t = cowstore.tensor([1.0, np.nan, 3.0])
    assert (t == t.clone()).tolist() == [True, False, True]
    assert (t != t.clone()).tolist() == [False, True, False]
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)
    assert cowstore.Tensor.__hash__ is None
    # Not a Tensor or a Python scalar: Python's identity fallback.
    assert (t == "x") is False and (t != None) is True  # noqa: E711


def test_refusals_name_the_op():
    b = cowstore.tensor([True, False])
    with pytest.raises(TypeError, match="boolean subtract"):
        b - b
    c = cowstore.tensor([1j])
    with pytest.raises(TypeError, match="floor_divide"):
        c // c
    i = cowstore.tensor([1, 2], dtype="int32")
    with pytest.raises(TypeError, match="same_kind"):
        i /= 2
    with pytest.raises(ValueError):
        i - cowstore.tensor([1, 2, 3], dtype="int32")


def test_integer_true_division_rounds_as_numpy():
    """/ of bool and integer tensors is float64 in one pass in C
    (cow_tensor_div); 64-bit values beyond 2^53 round once as NumPy's cast
    rounds them (ties to even), x / 0 is +-inf, 0 / 0 NaN, on dense,
    broadcast and stepped operands, tensors and scalars."""
    edges = [0, 1, -1, 3, 2**53, 2**53 + 1, 2**53 + 3, -(2**53) - 1,
             2**62 + 2**9, 2**62 + 2**9 + 1, 2**62 + 3 * 2**9,
             2**63 - 1, -(2**63), -(2**63) + 1, 2**31 - 1, -(2**31),
             2**32 + 7]
    rng = np.random.default_rng(39)
    big = rng.integers(-(2**63), 2**63 - 1, size=64, dtype=np.int64)
    i64 = np.concatenate([np.array(edges, dtype=np.int64),
                          big >> rng.integers(0, 63, size=64)])
    cases = [i64, i64.view(np.uint64), i64.astype(np.int32),
             i64.astype(np.uint32), i64.astype(np.int8),
             i64.astype(np.uint16), i64 % 2 == 0]
    for a in cases:
        b = np.roll(a, 1)
        ta, tb = cowstore.tensor(a), cowstore.tensor(b)
        h = 2 * (len(a) // 2)
        pairs = [(ta, tb, a, b),
                 (ta[0:h:2], tb[1:h:2], a[0:h:2], b[1:h:2]),
                 (ta, tb[3:4], a, b[3:4]), (ta[5:6], tb, a[5:6], b)]
        for x, y, nx, ny in pairs:
            assert_same(x / y, numpy_op("div", nx, ny), (a.dtype, nx, ny))
        # A Python int takes the tensor's dtype (NEP 50): a / 3, 0 / a.
        if a.dtype != np.bool_:
            assert_same(ta / 3, numpy_op("div", a, a.dtype.type(3)),
                        a.dtype)
            assert_same(0 / ta, numpy_op("div", a.dtype.type(0), a),
                        a.dtype)
        before = to_numpy_values(ta)
        with pytest.raises(TypeError, match="same_kind"):
            ta /= tb
        assert np.array_equal(to_numpy_values(ta), before)


def test_bfloat16_promotion():
    """bfloat16 (not a NumPy dtype) promotes as float16 does, except with
    float16 itself (float32); its ops compute in float32 and round."""
    bf = cowstore.tensor([1.5, -2.0], dtype="bfloat16")
    assert (bf + cowstore.tensor([1, 2], dtype="int8")).dtype == "bfloat16"
    assert (bf + cowstore.tensor([1, 2], dtype="int16")).dtype == "float32"
    assert (bf + cowstore.tensor([1, 2], dtype="float16")).dtype == "float32"
    assert (bf - 1).dtype == "bfloat16"
    assert (bf / 2.0).tolist() == [0.75, -1.0]
    assert (bf // 1.0).tolist() == [1.0, -2.0]
    assert (bf < 0).tolist() == [False, True]


def test_control_a_wrong_operator_fails():
    """Negative control: the comparison above catches a wrong operator (a
    - b computed as b - a)."""
    a = np.array([1.0, 5.0])
    b = np.array([2.0, 1.0])
    wrong = cowstore.tensor(b) - cowstore.tensor(a)
    with pytest.raises(AssertionError):
        assert_same(wrong, numpy_op("sub", a, b), "control")


# ---------------------------------------------------------------------------
# Indexing: negative steps and index lists (copies), with views around.

@st.composite
def index_keys(draw, shape):
    """A key for @shape: per dimension a slice (any step but 0), an int,
    or (at most one, and then no ints) a list of ints."""
    use_list = draw(st.booleans()) and len(shape) > 0
    list_at = draw(st.integers(0, max(len(shape) - 1, 0)))
    key = []
    for d, n in enumerate(shape):
        if use_list and d == list_at:
            key.append(draw(st.lists(st.integers(-n, n - 1), max_size=5))
                       if n > 0 else [])
        elif n > 0 and not use_list and draw(st.integers(0, 3)) == 0:
            key.append(draw(st.integers(-n, n - 1)))
        else:
            key.append(slice(draw(st.none() | st.integers(-n - 2, n + 2)),
                             draw(st.none() | st.integers(-n - 2, n + 2)),
                             draw(st.sampled_from([None, 1, 2, -1, -2,
                                                   -3]))))
    if key and draw(st.booleans()):
        key = key[:draw(st.integers(0, len(key)))] + [Ellipsis]
    return tuple(key)


@given(data=st.data(), dtype=dtypes)
def test_indexing_matches_numpy(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                       max_side=5))
    lay = data.draw(layout_of(dtype, shape))
    a, t = lay.array, lay.tensor()
    key = data.draw(index_keys(shape))
    got, want = t[key], a[key]
    assert got.shape == want.shape, (key, got.shape, want.shape)
    assert got.dtype == want.dtype.name
    assert np.array_equal(to_numpy_values(got), want, equal_nan=True), key
    copies = any(isinstance(k, list) or
                 (isinstance(k, slice) and (k.step or 1) < 0) for k in key)
    if copies and got.numel() > 0:
        assert not got.shares_storage(t), key
    elif not copies:
        assert got.shares_storage(t), key    # a view, as before


def test_indexing_refusals():
    t = cowstore.tensor(np.arange(24).reshape(2, 3, 4))
    with pytest.raises(IndexError, match="one index list"):
        t[[0], [1]]
    with pytest.raises(IndexError, match="boolean masks"):
        t[[True, False]]
    with pytest.raises(IndexError, match="out of bounds"):
        t[[2]]
    with pytest.raises(IndexError, match="apart from it"):
        t[0, :, [1, 2]]      # NumPy: shape (2, 3), the list's dim first
    before = t.tolist()
    with pytest.raises(IndexError, match="not a view"):
        t[::-1] = 0
    with pytest.raises(IndexError, match="not a view"):
        t[:, [0, 1]] = 0
    assert t.tolist() == before


# ---------------------------------------------------------------------------
# Matmul: 1-D and 2-D, every NumPy dtype. bool and integers exact (they
# wrap as NumPy's); float16 exact too, NumPy's own loop (float32 sums in
# index order, rounded once); float32, float64 and the complex dtypes
# within a bound (NumPy's BLAS adds in another order), complex also
# exactly against the index-order sum of ops.h's rule computed here.

MATMUL_DTYPES = NUMPY_DTYPES


def tame(x):
    """Finite values of a modest range: the bound below is relative."""
    if x.dtype.kind == "c":
        y = np.empty_like(x)
        y.real, y.imag = tame(x.real), tame(x.imag)
        return y
    if x.dtype.kind != "f":
        return x
    x = np.nan_to_num(x, posinf=1, neginf=-1)
    return np.clip(x, x.dtype.type(-1e3), x.dtype.type(1e3))


def index_order_matmul(a, b):
    """a @ b (1-D or 2-D, one dtype: float16 or complex) as ops.h says:
    each element summed in index order from 0; float16 products and sums
    in float32, rounded once; complex re += ar br - ai bi, im += ar bi +
    ai br, every step rounded (one NumPy operation each)."""
    shape = a.shape[:-1] + b.shape[1:]
    a = a.reshape(a.shape if a.ndim == 2 else (1,) + a.shape)
    b = b.reshape(b.shape if b.ndim == 2 else b.shape + (1,))
    return index_order_2d(a, b).reshape(shape)


def index_order_2d(a, b):
    (n, k), m = a.shape, b.shape[1]
    with np.errstate(all="ignore"):
        if a.dtype == np.float16:
            a, b = a.astype(np.float32), b.astype(np.float32)
            acc = np.zeros((n, m), np.float32)
            for p in range(k):
                acc = acc + a[:, p, None] * b[None, p, :]
            return acc.astype(np.float16)
        re = np.zeros((n, m), a.real.dtype)
        im = np.zeros((n, m), a.real.dtype)
        for p in range(k):
            xr, xi = a.real[:, p, None], a.imag[:, p, None]
            yr, yi = b.real[None, p, :], b.imag[None, p, :]
            re = re + (xr * yr - xi * yi)
            im = im + (xr * yi + xi * yr)
        out = np.empty((n, m), a.dtype)
        out.real, out.imag = re, im
        return out


@given(data=st.data(), da=st.sampled_from(MATMUL_DTYPES),
       db=st.sampled_from(MATMUL_DTYPES), nda=st.integers(1, 2),
       ndb=st.integers(1, 2))
def test_matmul_matches_numpy(data, da, db, nda, ndb):
    n, k, m = (data.draw(st.integers(0, 6)) for _ in range(3))
    sa = (n, k) if nda == 2 else (k,)
    sb = (k, m) if ndb == 2 else (k,)
    la = data.draw(layout_of(da, sa))
    lb = data.draw(layout_of(db, sb))
    a, b = la.array, lb.array
    r = np.promote_types(a.dtype, b.dtype)
    if r.kind in "fc":
        a, b = tame(a), tame(b)
        ta, tb = cowstore.tensor(a), cowstore.tensor(b)
    else:
        ta, tb = la.tensor(), lb.tensor()
    got = ta @ tb
    with np.errstate(all="ignore"):
        want = np.asarray(a.astype(r) @ b.astype(r))
    assert got.dtype == want.dtype.name and got.shape == want.shape
    g = to_numpy_values(got)
    if r.kind in "fc" and r != np.float16:
        eps = np.finfo(r).eps
        if r.kind == "c":
            # Each part: k products of two terms, summed (NumPy's BLAS
            # may take another formula's rounding: twice the bound).
            ar, ai = np.abs(a.real.astype(np.float64)), \
                np.abs(a.imag.astype(np.float64))
            br, bi = np.abs(b.real.astype(np.float64)), \
                np.abs(b.imag.astype(np.float64))
            for part, abs_sum in ((lambda x: x.real, ar @ br + ai @ bi),
                                  (lambda x: x.imag, ar @ bi + ai @ br)):
                bound = 2 * (k + 2) * eps * abs_sum
                assert np.all(np.abs(part(g).astype(np.float64) -
                                     part(want)) <= bound + 1e-300)
            assert_same(got, index_order_matmul(a.astype(r), b.astype(r)),
                        "index order")
        else:
            bound = (k + 1) * eps * (np.abs(a.astype(np.float64)) @
                                     np.abs(b.astype(np.float64)))
            assert np.all(np.abs(g.astype(np.float64) - want) <=
                          bound + 1e-300)
    elif r == np.float16:
        assert_same(got, want, "float16")
        assert_same(got, index_order_matmul(a.astype(r), b.astype(r)),
                    "index order")
    else:
        assert np.array_equal(g, want)


def test_matmul_float16_rounds_a_float32_sum_once():
    # 1 + 2^-11 + 2^-11 is 1 + 2^-10 in float32; in float16 each step
    # would be a tie, rounded to even: 1.
    a = np.array([1, 2.0 ** -11, 2.0 ** -11], np.float16)
    b = np.ones(3, np.float16)
    got = cowstore.tensor(a) @ cowstore.tensor(b)
    assert got.dtype == "float16"
    assert float(to_numpy_values(got)) == 1 + 2.0 ** -10 == float(a @ b)


def test_matmul_bool_and_bfloat16():
    a = np.array([[True, False, True], [False, False, True]])
    b = np.array([[False, True], [True, False], [False, False]])
    got = cowstore.tensor(a) @ cowstore.tensor(b)
    assert got.dtype == "bool"
    assert np.array_equal(to_numpy_values(got), a @ b)
    # bfloat16 (no NumPy dtype): as float16, in float32, rounded once:
    # 1 + 2^-8 + 2^-8 = 1 + 2^-7.
    v = cowstore.zeros((3,), dtype="bfloat16").copy_(
        np.array([1, 2.0 ** -8, 2.0 ** -8], np.float32))
    w = cowstore.zeros((3,), dtype="bfloat16").fill_(1)
    got = v @ w
    assert got.dtype == "bfloat16" and got.item() == 1 + 2.0 ** -7


def test_matmul_refusals():
    m = cowstore.zeros((2, 3))
    with pytest.raises(ValueError, match="inner sizes"):
        m @ m
    with pytest.raises(ValueError, match="1 or 2"):
        cowstore.zeros(()) @ m


# ---------------------------------------------------------------------------
# **: where NumPy's values come cheap (docs/tensor.md).

@given(data=st.data(), dtype=dtypes)
def test_power_matches_numpy(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                       max_side=4))
    lay = data.draw(layout_of(dtype, shape))
    a, t = lay.array, lay.tensor()
    kind = np.dtype(dtype).kind
    if kind in "biu":
        e = data.draw(st.integers(0, 9))
    else:
        e = data.draw(st.sampled_from([0, 1, 2, 0.0, 1.0, 2.0] +
                                      ([-1, -1.0] if kind == "f" else [])))
    with np.errstate(all="ignore"):
        # bool ** int: the int is weak, int64 (NEP 50; NumPy 1.24 looks at
        # its value and may pick int8).
        want = np.asarray((a.astype(np.int64) if kind == "b" else a) ** e)
    assert_same(t ** e, want, (dtype, e, a))
    before = to_numpy_values(t)
    if want.dtype == a.dtype:
        t **= e
        assert_same(t, want, ("**=", dtype, e))
    else:
        with pytest.raises(TypeError, match="same_kind"):
            t **= e
        assert np.array_equal(to_numpy_values(t), before, equal_nan=True)


def test_power_refusals():
    f = cowstore.tensor([1.5, 2.0])
    with pytest.raises(TypeError, match="pow"):
        f ** 3
    with pytest.raises(TypeError, match="pow"):
        f ** 0.5
    with pytest.raises(TypeError, match="pow"):
        cowstore.tensor([1, 2]) ** 2.0
    with pytest.raises(TypeError, match="pow"):
        cowstore.tensor([1j]) ** -1
    with pytest.raises(ValueError, match="negative integer powers"):
        cowstore.tensor([1, 2]) ** -1
    with pytest.raises(TypeError):
        2 ** f
    # 243 wraps to -13 in int8, as NumPy's.
    assert (cowstore.tensor([3], dtype="int8") ** 5).tolist() == \
        (np.array([3], dtype=np.int8) ** 5).tolist() == [-13]
