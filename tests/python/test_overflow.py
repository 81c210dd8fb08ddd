"""Sizes and strides near and past 2**63 (issue 36).

Every call that multiplies sizes or strides a user gave (nested sequences,
shapes, buffer shapes, byte strides, views, imports of as_strided arrays)
gives NumPy's value or a clean exception (OverflowError, ValueError,
MemoryError, IndexError, TypeError, BufferError), never a crash. The asan
preset runs these with AddressSanitizer and UndefinedBehaviorSanitizer
built with -fno-sanitize-recover (a signed overflow in the module aborts
the run), the release preset without sanitizers.

Where the two differ by design: the library accepts a shape with no
elements whatever its other sizes (`cow__shape_check`: 0 elements, 0
bytes), where NumPy refuses those whose other sizes multiply past its own
limit; such a tensor is checked for a whole, consistent layout instead.

Nothing here allocates much: a shape has no elements, or at most SMALL
elements, or so many that the library refuses it before allocating (more
than COW_STORAGE_MAX_NBYTES = 2**63 - 1 bytes), or (nested sequences) so
many that the scratch allocation fails at once (2**40 elements: 16 TiB).
"""
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import assume, example, given, strategies as st
from numpy.lib.stride_tricks import as_strided

import cowstore
from conftest import ALL_DTYPES, ITEMSIZE, NUMPY_DTYPES, to_numpy_values

INT64_MAX = 2**63 - 1
SMALL = 4096                      # elements: values compared with NumPy
CLEAN = (OverflowError, ValueError, MemoryError, IndexError, TypeError,
         BufferError)

BIG = [2**31 - 1, 2**31, 2**32 + 1, 2**40, 2**61, 2**62, 2**62 + 1,
       2**63 - 2, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1, 2**64, 2**65]
sizes = st.one_of(st.integers(0, 4), st.integers(0, 4), st.sampled_from(BIG),
                  st.sampled_from([-1, -2, -2**63, -2**63 - 1]),
                  st.integers(-2**66, 2**66))
shapes = st.lists(sizes, max_size=5).map(tuple)


def classify(shape, itemsize):
    """What the library must do with `shape`: "refused" (a negative size, a
    size outside int64, or more than 2**63 - 1 bytes), "empty" (no
    elements), "small" (values compared), or None (it would allocate
    between SMALL elements and 2**63 bytes: not tried)."""
    if any(s < 0 or s > INT64_MAX for s in shape):
        return "refused"
    n = math.prod(shape)
    if n == 0:
        return "empty"
    if n * itemsize > INT64_MAX:
        return "refused"
    return "small" if n <= SMALL else None


def numpy_or_error(fn):
    """NumPy's result, or the exception it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception as e:          # noqa: BLE001 -- any NumPy refusal
        return e


def check_empty(t, shape):
    """A tensor with no elements: its layout whole and consistent."""
    assert t.shape == tuple(shape) and t.numel() == 0 and t.nbytes == 0
    assert all(0 <= s <= INT64_MAX for s in t.strides), t.strides
    assert all(0 <= s <= INT64_MAX for s in t.stride()), t.stride()
    assert repr(t).startswith("tensor([], shape=")
    assert t.sum().item() == 0
    c = t.lazy_clone()
    assert c.shape == t.shape
    u = pickle.loads(pickle.dumps(t))
    assert u.shape == t.shape and u.dtype == t.dtype
    if t.dtype != "bfloat16":       # it has no buffer format
        mv = memoryview(t)
        assert mv.shape == t.shape and mv.nbytes == 0
        r = numpy_or_error(lambda: t.numpy())
        assert isinstance(r, ValueError) or r.shape == t.shape, r
    # tolist() builds one list per index before the first zero size.
    first_zero = list(t.shape).index(0)
    if math.prod(t.shape[:first_zero]) <= SMALL:
        assert t.tolist() == np.zeros(t.shape[:first_zero + 1]).tolist()


def check_same(t, want):
    """`t` holds NumPy array `want`: shape, strides (C-contiguous) and
    values."""
    assert t.shape == want.shape
    if t.is_contiguous() and want.flags.c_contiguous and want.size > 1:
        assert all(a == b for a, b, n in zip(t.strides, want.strides,
                                             want.shape) if n > 1)
    np.testing.assert_array_equal(to_numpy_values(t), want)


# ---------------------------------------------------------------------------
# empty, zeros, full

@given(shape=shapes, dtype=st.sampled_from(ALL_DTYPES))
@example(shape=(0, 2**63 - 1), dtype="float32")       # strides wrapped
@example(shape=(3, 0, 2**62, 2**62), dtype="complex128")
@example(shape=(2**62, 2**62), dtype="bool")
@example(shape=(2**63,), dtype="int8")
def test_constructors(shape, dtype):
    kind = classify(shape, ITEMSIZE[dtype])
    assume(kind is not None)
    makers = {"empty": lambda: cowstore.empty(shape, dtype=dtype),
              "zeros": lambda: cowstore.zeros(shape, dtype=dtype),
              "full": lambda: cowstore.full(shape, 1, dtype=dtype)}
    for name, make in makers.items():
        if kind == "refused":
            with pytest.raises((OverflowError, ValueError)):
                make()
            if dtype in NUMPY_DTYPES:      # NumPy refuses them too
                r = numpy_or_error(lambda: np.empty(shape, dtype=dtype))
                assert isinstance(r, (ValueError, OverflowError)), r
            continue
        t = make()
        if kind == "empty":
            check_empty(t, shape)
        elif name != "empty":
            want = np.full(shape, 0 if name == "zeros" else 1,
                           dtype=np.float32 if dtype == "bfloat16" else dtype)
            check_same(t, want)
        else:
            assert t.shape == shape and t.numel() == math.prod(shape)


# ---------------------------------------------------------------------------
# tensor(nested sequences)

class Rep:
    """A sequence of `n` references to one item, in O(1) memory: nested
    sequences of any element count without building them."""

    def __init__(self, item, n):
        self.item, self.n = item, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.item


def materialise(seq):
    if isinstance(seq, (Rep, list, range)):
        return [materialise(x) for x in seq]
    return seq


dims = st.lists(st.one_of(st.integers(0, 4), st.sampled_from(
    [2**20, 2**31, 2**32, 2**44, 2**62, 2**63 - 1, 2**63])), min_size=1,
    max_size=4)
leaves = st.sampled_from(["range", "float", "complex", "bool", "big"])


def nested(dims, leaf):
    """Nested sequences of shape `dims`: the innermost a range (any
    length), or `dims[-1]` copies of one scalar."""
    n = dims[-1]
    if leaf == "range":
        inner = range(5, 5 + n) if n <= INT64_MAX else Rep(7, n)
    else:
        value = {"float": 1.5, "complex": 2 - 1j, "bool": True,
                 "big": 2**64}[leaf]
        inner = Rep(value, n)
    for d in reversed(dims[:-1]):
        inner = Rep(inner, d)
    return inner


@given(dims=dims, leaf=leaves, dtype=st.sampled_from([None, "float64",
                                                      "int32", "uint64"]))
@example(dims=[2**20, 2**44], leaf="range", dtype=None)  # a heap overflow
@example(dims=[2, 2**63 - 1], leaf="float", dtype="float64")
@example(dims=[3, 2**40], leaf="big", dtype="float64")
@example(dims=[2, 2], leaf="big", dtype="float64")
def test_tensor_of_nested_sequences(dims, leaf, dtype):
    # A zero size after many elements would be walked item by item (as
    # NumPy walks it): not tried.
    zero = dims.index(0) if 0 in dims else len(dims)
    assume(math.prod(dims[:zero]) <= SMALL)
    # The shape ends at the first empty sequence (nothing inside it is
    # seen), as NumPy's does.
    shape = dims[:zero + 1]
    n = math.prod(shape)
    assume(n <= SMALL or n >= 2**40)
    # Complex to a real dtype: NumPy refuses, cowstore takes the real part
    # (ops.h's conversions); not this test's subject.
    assume(leaf != "complex" or dtype is None)
    data = nested(dims, leaf)
    if n > SMALL or any(d > INT64_MAX for d in shape):
        with pytest.raises((OverflowError, MemoryError, ValueError)):
            cowstore.tensor(data, dtype=dtype)
        return
    want = numpy_or_error(lambda: np.array(materialise(data), dtype=dtype))
    got = numpy_or_error(lambda: cowstore.tensor(data, dtype=dtype))
    if isinstance(got, Exception):
        assert isinstance(got, CLEAN), got
        # Ints beyond int64 need a dtype that holds them (NumPy: object).
        assert isinstance(want, Exception) or want.dtype == object, \
            (got, want)
        return
    assert not isinstance(want, Exception) and want.dtype != object, \
        (got, want)
    if n == 0:
        check_empty(got, want.shape)
    else:
        check_same(got, want)


# ---------------------------------------------------------------------------
# from_buffer(obj, dtype=, shape=)

@given(shape=shapes, dtype=st.sampled_from(NUMPY_DTYPES),
       nbytes=st.sampled_from([0, 1, 4, 8, 16, 24, 48]))
@example(shape=(2**62, 2**62), dtype="int32", nbytes=0)
@example(shape=(2**61, 2), dtype="int32", nbytes=16)
@example(shape=(0, 2**63 - 1), dtype="float64", nbytes=0)
def test_from_buffer_shapes(shape, dtype, nbytes):
    kind = classify(shape, ITEMSIZE[dtype])
    assume(kind is not None)
    buf = bytes(range(nbytes))
    got = numpy_or_error(lambda: cowstore.from_buffer(buf, dtype=dtype,
                                                      shape=shape))
    if kind == "refused" or math.prod(shape) * ITEMSIZE[dtype] != nbytes:
        assert isinstance(got, (OverflowError, ValueError)), got
        return
    if kind == "empty":
        check_empty(got, shape)
        return
    check_same(got, np.frombuffer(buf, dtype=dtype).reshape(shape))


# ---------------------------------------------------------------------------
# Views: expand, reshape, view, slices, select, dimension arguments

base_shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


def base_tensor(shape):
    a = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    return cowstore.tensor(a.tolist(), dtype="int32").reshape(shape), a


def compare(got, want):
    """cowstore's `got` against NumPy's `want` (each a value or an
    exception): equal values, or cowstore refused cleanly, or NumPy refused
    what the library takes by design (no elements)."""
    if isinstance(got, Exception):
        assert isinstance(got, CLEAN), repr(got)
        return
    assert all(0 <= s <= INT64_MAX for s in got.strides), got.strides
    if isinstance(want, Exception):
        assert got.numel() == 0, (got.shape, want)
        check_empty(got, got.shape)
        return
    assert got.shape == want.shape
    if want.size == 0:
        check_empty(got, want.shape)
    elif want.size <= SMALL:
        np.testing.assert_array_equal(to_numpy_values(got), want)


@given(base=base_shapes, sizes=shapes)
@example(base=(1,), sizes=(2**62, 2**62))
@example(base=(1, 1), sizes=(0, 2**63 - 1))
@example(base=(1,), sizes=(2**61, 8))
def test_expand(base, sizes):
    t, a = base_tensor(base)
    got = numpy_or_error(lambda: t.expand(*sizes))
    if any(s < 0 for s in sizes):
        # -1 keeps a size (PyTorch's rule); NumPy has no such size.
        assert isinstance(got, CLEAN) or all(s >= 0 for s in got.shape)
        return
    want = numpy_or_error(lambda: np.broadcast_to(a, sizes))
    if not isinstance(got, Exception) and got.numel() > SMALL:
        # A broadcast of few bytes: the count is the library's to check.
        assert got.numel() == math.prod(sizes)
        assert isinstance(want, Exception) or want.shape == got.shape
        return
    compare(got, want)


@given(base=base_shapes, shape=shapes, how=st.sampled_from(["reshape",
                                                            "view"]))
def test_reshape_and_view(base, shape, how):
    t, a = base_tensor(base)
    got = numpy_or_error(lambda: getattr(t, how)(*shape))
    want = numpy_or_error(lambda: a.reshape(shape))
    compare(got, want)


ends = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(
    [2**31, 2**62, INT64_MAX, 2**63, 2**64, -2**63, -2**64, -2**70]))


@given(base=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
       start=ends, stop=ends, step=st.one_of(st.none(), st.sampled_from(
           [1, 2, 3, 2**31, 2**62, INT64_MAX, 2**63, 2**64, -1, 0]) ),
       index=st.one_of(st.integers(-5, 5), st.sampled_from(
           [2**31, INT64_MAX, 2**63, -2**63, -2**63 - 1, 2**64])))
def test_slices_and_indices(base, start, stop, step, index):
    t, a = base_tensor(base)
    key = slice(start, stop, step)
    got = numpy_or_error(lambda: t[key])
    want = numpy_or_error(lambda: a[key])
    if step == 0:
        assert isinstance(got, ValueError), got
    else:
        # A negative step is a copy (a view when there are no elements).
        compare(got, want)
    compare(numpy_or_error(lambda: t[index]), numpy_or_error(lambda: a[index]))
    compare(numpy_or_error(lambda: t[..., key]), numpy_or_error(
        lambda: a[..., key]))


def squeezed(a, d):
    """PyTorch's squeeze(d), which cowstore follows: a dimension of size
    other than 1 stays (NumPy refuses it)."""
    d = np.core.numeric.normalize_axis_index(d, max(a.ndim, 1))
    return np.squeeze(a, d) if a.ndim and a.shape[d] == 1 else a


@given(base=base_shapes, d=st.one_of(st.integers(-5, 5), st.sampled_from(
    [2**31, INT64_MAX, 2**63, -2**63 - 1, 2**64])))
def test_dimension_arguments(base, d):
    t, a = base_tensor(base)
    rest = tuple(range(1, a.ndim))
    calls = [(lambda: t.unsqueeze(d), lambda: np.expand_dims(a, d)),
             (lambda: t.sum(dim=d), lambda: a.sum(axis=d)),
             (lambda: t.transpose(d, 0), lambda: np.swapaxes(a, d, 0)),
             (lambda: t.squeeze(d), lambda: squeezed(a, d)),
             (lambda: t.permute(d, *rest), lambda: np.transpose(
                 a, (d,) + rest))]
    for mine, theirs in calls:
        compare(numpy_or_error(mine), numpy_or_error(theirs))


# ---------------------------------------------------------------------------
# Imports of as_strided arrays: NumPy's arbitrary layouts

strides_any = st.sampled_from([0, 8, 16, 2**31, 2**40, 2**62, 2**63 - 8,
                               -8])


@st.composite
def strided(draw):
    """An as_strided view of a 64-byte float64 base: with elements, every
    stride is 0 or keeps every element inside the base (size-1 dimensions
    may have any stride: it is never applied); with no elements, any
    strides at all."""
    ndim = draw(st.integers(1, 4))
    shape = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 2**20, 2**40,
                                           2**62]), min_size=ndim,
                          max_size=ndim))
    empty = 0 in shape
    strides = []
    for n in shape:
        if empty or n == 1:
            strides.append(draw(strides_any))
        else:
            strides.append(0)
    # One dimension may step through the base for real.
    real = [i for i, n in enumerate(shape) if 1 < n <= 8]
    if real and not empty:
        i = draw(st.sampled_from(real))
        strides[i] = 8
    return tuple(shape), tuple(strides)


@given(layout=strided(), how=st.sampled_from(["from_buffer", "from_dlpack",
                                              "asarray", "tensor"]),
       writeable=st.booleans())
@example(layout=((0, 3), (2**62, 2**62)), how="from_buffer", writeable=True)
@example(layout=((1, 2**20), (2**63 - 8, 0)), how="asarray", writeable=False)
def test_imports_of_as_strided_arrays(layout, how, writeable):
    shape, strides = layout
    base = np.arange(8, dtype=np.float64)
    arr = numpy_or_error(lambda: as_strided(base, shape=shape,
                                            strides=strides,
                                            writeable=writeable))
    if isinstance(arr, Exception):
        return                       # NumPy's own limit
    # An eager copy of a large broadcast would allocate it.
    assume(how != "tensor" or arr.size <= SMALL)
    fn = getattr(cowstore, how)
    got = numpy_or_error(lambda: fn(arr))
    if isinstance(got, Exception):
        assert isinstance(got, CLEAN), repr(got)
        return
    assert got.shape == shape and got.numel() == arr.size
    assert all(0 <= s <= INT64_MAX for s in got.strides), got.strides
    if arr.size == 0:
        check_empty(got, shape)
    elif arr.size <= SMALL:
        np.testing.assert_array_equal(to_numpy_values(got), arr)
        np.testing.assert_array_equal(np.asarray(got), arr)
    else:                            # a broadcast of one element
        assert got.is_read_only() or got.is_pinned() or how == "tensor"
        assert got[(0,) * got.ndim].item() == arr[(0,) * arr.ndim]
