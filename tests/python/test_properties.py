"""Property tests with NumPy as the reference model: random small shapes,
dtypes, views (slices, ints, new axes, transposes, permutes, squeezes),
lazy and eager clones, reshapes in both modes, and writes (fill_, +=, *=,
setitem, copy_) give NumPy's values, and sums NumPy's (or an index-order
accumulation's, docs: ops.h) sums.

The model: each cowstore tensor is paired with a NumPy array. A view is
paired with the same view of its partner (so NumPy aliases exactly where
cowstore must), a clone with a copy of its partner. After every step every
pair must hold the same values.

Hypothesis settings come from conftest.py (derandomized, no deadline)."""
import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import cowstore
from conftest import (COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES,
                      NUMPY_DLPACK_DTYPES, UINT_DTYPES, addr, same_strides,
                      to_numpy_values)

PROP_DTYPES = ("bool",) + INT_DTYPES + UINT_DTYPES + FLOAT_DTYPES + \
    COMPLEX_DTYPES
MAX_NDIM = 4
MAX_PAIRS = 12


def shapes(max_ndim=3, max_size=4):
    return st.lists(st.integers(0, max_size), min_size=0,
                    max_size=max_ndim).map(tuple)


def scalars(dtype):
    if dtype == "bool":
        return st.sampled_from([0, 1, 2, True, False])
    if dtype in UINT_DTYPES:
        return st.integers(0, 5)
    if dtype in INT_DTYPES:
        return st.integers(-3, 5)
    return st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0])


def op_scalars(dtype):
    """Scalars for t += v and t *= v: a Python scalar is weak (NEP 50,
    docs/tensor.md), so an int against bool is int64, which NumPy's
    same_kind rule will not cast into bool (a TypeError, tested in
    test_operators.py): bool tensors take bools."""
    if dtype == "bool":
        return st.booleans()
    return scalars(dtype)


def as_dtype(value, dtype):
    """A Python scalar converted the way cowstore converts scalars (to
    double, then to the dtype; the scalars drawn convert exactly)."""
    return np.asarray(value).astype(np.dtype(dtype))


def random_values(data, dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        v = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dtype in UINT_DTYPES:
        v = data.draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    elif dtype in INT_DTYPES:
        v = data.draw(st.lists(st.integers(-10, 10), min_size=n, max_size=n))
    else:
        v = data.draw(st.lists(st.integers(-16, 16), min_size=n,
                               max_size=n))
        v = [x / 2 for x in v]
        if dtype in COMPLEX_DTYPES:
            im = data.draw(st.lists(st.integers(-4, 4), min_size=n,
                                    max_size=n))
            v = [complex(a, b) for a, b in zip(v, im)]
    return np.array(v, dtype=np.dtype(dtype)).reshape(shape)


def reference_sum(a):
    """cowstore's sum (ops.h): integers and bool in int64 or uint64
    (wrapping), floats and complex in the dtype in index order, float16 in
    float32 rounded once."""
    dt = a.dtype
    if dt == np.bool_ or dt.kind == "i" or dt in (np.uint8,):
        return int(a.astype(np.int64).sum(dtype=np.int64))
    if dt.kind == "u":
        return int(a.astype(np.uint64).sum(dtype=np.uint64))
    acc_dt = np.float32 if dt == np.float16 else dt.type
    acc = acc_dt(0)
    with np.errstate(all="ignore"):
        for x in a.ravel(order="C"):
            acc = acc_dt(acc + acc_dt(x))
        return dt.type(acc).item()


def same_value(x, y):
    if isinstance(x, complex) or isinstance(y, complex):
        x, y = complex(x), complex(y)
        return same_value(x.real, y.real) and same_value(x.imag, y.imag)
    if x != x and y != y:  # NaN
        return True
    return x == y


def check(pairs):
    for i, (t, n) in enumerate(pairs):
        assert t.shape == n.shape, i
        assert t.dtype == n.dtype.name, i
        np.testing.assert_array_equal(to_numpy_values(t), n,
                                      err_msg="pair %d" % i)


# ---------------------------------------------------------------------------
# Steps. Each returns a description for note() or None when it does not
# apply to the drawn pair.

def draw_view(data, n):
    """Draw a view op that applies to an array shaped like `n`: returns
    (cowstore op, NumPy op, description), or None."""
    nd = n.ndim
    kind = data.draw(st.sampled_from(
        ["slice", "int", "newaxis", "transpose", "permute", "T", "unsqueeze",
         "squeeze", "squeeze_dim"]))
    if kind == "slice" and nd > 0:
        d = data.draw(st.integers(0, nd - 1))
        size = n.shape[d]
        start = data.draw(st.integers(0, size))
        stop = data.draw(st.integers(start, size))
        step = data.draw(st.integers(1, 3))
        idx = (slice(None),) * d + (slice(start, stop, step), Ellipsis)
        return (lambda t: t[idx]), (lambda a: a[idx]), "[%r]" % (idx,)
    if kind == "int" and nd > 0:
        d = data.draw(st.integers(0, nd - 1))
        size = n.shape[d]
        if size == 0:
            return None
        i = data.draw(st.integers(-size, size - 1))
        # the Ellipsis makes NumPy return a 0-d view, not a scalar copy
        idx = (slice(None),) * d + (i, Ellipsis)
        return (lambda t: t[idx]), (lambda a: a[idx]), "[%r]" % (idx,)
    if kind == "newaxis" and nd < MAX_NDIM:
        d = data.draw(st.integers(0, nd))
        idx = (slice(None),) * d + (None, Ellipsis)
        return (lambda t: t[idx]), (lambda a: a[idx]), "[%r]" % (idx,)
    if kind == "transpose" and nd > 0:
        d0 = data.draw(st.integers(-nd, nd - 1))
        d1 = data.draw(st.integers(-nd, nd - 1))
        return (lambda t: t.transpose(d0, d1)), \
            (lambda a: a.swapaxes(d0, d1)), ".transpose(%d, %d)" % (d0, d1)
    if kind == "permute" and nd > 0:
        perm = tuple(data.draw(st.permutations(range(nd))))
        return (lambda t: t.permute(*perm)), (lambda a: a.transpose(perm)), \
            ".permute%r" % (perm,)
    if kind == "T":
        return (lambda t: t.T), (lambda a: a.T), ".T"
    if kind == "unsqueeze" and nd < MAX_NDIM:
        d = data.draw(st.integers(0, nd))
        return (lambda t: t.unsqueeze(d)), \
            (lambda a: np.expand_dims(a, d)), ".unsqueeze(%d)" % d
    if kind == "squeeze":
        return (lambda t: t.squeeze()), np.squeeze, ".squeeze()"
    if kind == "squeeze_dim":
        ones = [d for d in range(nd) if n.shape[d] == 1]
        if not ones:
            return None
        d = data.draw(st.sampled_from(ones))
        return (lambda t: t.squeeze(d)), (lambda a: np.squeeze(a, d)), \
            ".squeeze(%d)" % d
    return None


def step_view(data, pairs, t, n):
    got = draw_view(data, n)
    if got is None:
        return None
    fc, fn, what = got
    return fc(t), fn(n), what


def reshape_targets(size):
    out = [(size,), (1, size), (size, 1)]
    out += [(a, size // a) for a in range(2, size) if size % a == 0]
    if size % 4 == 0 and size >= 8:
        out.append((2, 2, size // 4))
    return out


def step_reshape(data, pairs, t, n):
    shape = data.draw(st.sampled_from(reshape_targets(n.size)))
    mode = data.draw(st.sampled_from(["alias", "lazy_copy"]))
    if mode == "lazy_copy":
        with cowstore.reshape_mode("lazy_copy"):
            r = t.reshape(*shape)
        assert not r.shares_storage(t)
        return r, n.reshape(shape).copy(), "reshape%r lazy_copy" % (shape,)
    # alias mode: a view whenever the strides allow one; for a contiguous
    # tensor paired with a C-contiguous array both alias.
    if not (t.is_contiguous() and n.flags.c_contiguous):
        return None
    with cowstore.reshape_mode("alias"):
        r = t.reshape(*shape)
    nr = n.reshape(shape)
    if n.size > 0:
        assert r.shares_storage(t)
        assert np.shares_memory(nr, n)
    else:
        nr = nr if r.shares_storage(t) else nr.copy()
    return r, nr, "reshape%r alias" % (shape,)


def step_write(data, pairs, t, n):
    dtype = n.dtype.name
    kind = data.draw(st.sampled_from(
        ["fill", "iadd", "imul", "iadd_self", "imul_self", "iadd_other",
         "setitem", "setitem_other", "copy_"]))
    if kind == "imul_self" and dtype in COMPLEX_DTYPES:
        # complex products of large parts may be fused by NumPy's SIMD
        # loops; cowstore rounds every product (ops.h). Products with real
        # scalars are exact either way.
        return "skip complex t *= t"
    if kind == "fill":
        v = data.draw(scalars(dtype))
        assert t.fill_(v) is t
        n[...] = as_dtype(v, dtype)
        return "fill_(%r)" % (v,)
    if kind == "iadd":
        v = data.draw(op_scalars(dtype))
        t += v
        np.add(n, as_dtype(v, dtype), out=n)
        return "+= %r" % (v,)
    if kind == "imul":
        v = data.draw(op_scalars(dtype))
        t *= v
        np.multiply(n, as_dtype(v, dtype), out=n)
        return "*= %r" % (v,)
    if kind == "iadd_self":
        t += t
        np.add(n, n.copy(), out=n)
        return "t += t"
    if kind == "imul_self":
        t *= t
        np.multiply(n, n.copy(), out=n)
        return "t *= t"
    if kind in ("iadd_other", "setitem_other"):
        cands = []
        for j, (ot, on) in enumerate(pairs):
            try:
                if np.broadcast_shapes(on.shape, n.shape) == n.shape:
                    cands.append(j)
            except ValueError:
                pass
        j = data.draw(st.sampled_from(cands))  # t itself is a candidate
        ot, on = pairs[j]
        if kind == "iadd_other":
            t += ot
            np.add(n, on.copy(), out=n)
            return "t += pairs[%d]" % j
        t[...] = ot
        n[...] = on.copy()
        return "t[...] = pairs[%d]" % j
    if kind == "setitem":
        v = data.draw(scalars(dtype))
        if n.ndim == 0:
            idx = ()
        else:
            d = data.draw(st.integers(0, n.ndim - 1))
            size = n.shape[d]
            if size > 0 and data.draw(st.booleans()):
                i = data.draw(st.integers(-size, size - 1))
            else:
                i = slice(data.draw(st.integers(0, size)), None,
                          data.draw(st.integers(1, 2)))
            idx = (slice(None),) * d + (i,)
        t[idx] = v
        n[idx] = as_dtype(v, dtype)
        return "t[%r] = %r" % (idx, v)
    if kind == "copy_":
        src = random_values(data, dtype, n.shape)
        assert t.copy_(src) is t
        n[...] = src
        return "copy_(%r)" % (src.tolist(),)
    raise AssertionError(kind)


def step_clone(data, pairs, t, n):
    kind = data.draw(st.sampled_from(["lazy_clone", "clone", "contiguous"]))
    if kind == "lazy_clone":
        c = t.lazy_clone()
        assert not c.shares_storage(t)
        return c, n.copy(), "lazy_clone()"
    if kind == "clone":
        c = t.clone()
        assert not c.shares_storage(t) and not c.shares_data(t)
        return c, n.copy(), "clone()"
    c = t.contiguous()
    assert c.is_contiguous()
    if c.shares_storage(t):
        assert t.is_contiguous()
        return c, n, "contiguous() (self)"
    return c, n.copy(), "contiguous() (copy)"


def start(data, dtype, shape):
    values = random_values(data, dtype, shape)
    kind = data.draw(st.sampled_from(["tensor", "read_only_bytes",
                                      "zeros_copy"]))
    keep = None
    if kind == "tensor":
        t = cowstore.tensor(values)
    elif kind == "read_only_bytes":
        keep = values.tobytes()
        t = cowstore.from_buffer(keep, dtype=dtype, shape=shape)
        assert t.is_read_only() or values.size == 0
    else:
        t = cowstore.zeros(shape, dtype=dtype)
        t.copy_(values)
    return t, values.copy(), keep, values.tobytes(), kind


@given(st.data())
def test_random_programs_match_numpy(data):
    dtype = data.draw(st.sampled_from(PROP_DTYPES), label="dtype")
    shape = data.draw(shapes(), label="shape")
    t, n, keep, keep_bytes, kind = start(data, dtype, shape)
    note("start: %s %s %s" % (kind, dtype, shape))
    pairs = [(t, n)]
    check(pairs)
    nsteps = data.draw(st.integers(1, 14), label="steps")
    for _ in range(nsteps):
        j = data.draw(st.integers(0, len(pairs) - 1))
        pt, pn = pairs[j]
        op = data.draw(st.sampled_from(["view", "view", "write", "write",
                                        "write", "clone", "reshape"]))
        if op == "write":
            what = step_write(data, pairs, pt, pn)
            note("pairs[%d].%s" % (j, what))
        else:
            if op in ("view", "reshape") and len(pairs) >= MAX_PAIRS:
                continue
            fn = {"view": step_view, "clone": step_clone,
                  "reshape": step_reshape}[op]
            got = fn(data, pairs, pt, pn)
            if got is None:
                continue
            nt, nn, what = got
            note("pairs[%d] = pairs[%d].%s" % (len(pairs), j, what))
            if len(pairs) < MAX_PAIRS:
                pairs.append((nt, nn))
            if op != "clone":
                assert nt.shares_storage(pt) or nn.size == 0 or \
                    not np.shares_memory(nn, pn)
        check(pairs)
    # sums, in both forms
    for i, (pt, pn) in enumerate(pairs):
        s = pt.sum()
        assert s.shape == ()
        assert same_value(s.item(), reference_sum(pn)), i
        if pn.ndim > 0 and pn.dtype.kind in "biu":
            d = data.draw(st.integers(-pn.ndim, pn.ndim - 1))
            got = pt.sum(dim=d, keepdim=True)
            ref = pn.astype(np.uint64 if pn.dtype.kind == "u"
                            and pn.dtype.itemsize > 1 else np.int64)
            ref = ref.sum(axis=d, keepdims=True)
            np.testing.assert_array_equal(to_numpy_values(got), ref)
    # read-only memory was never written
    if keep is not None:
        assert keep == keep_bytes


@given(st.data())
def test_numpy_views_import_zero_copy(data):
    dtype = data.draw(st.sampled_from(NUMPY_DLPACK_DTYPES))
    shape = data.draw(shapes(max_ndim=4, max_size=5))
    base = random_values(data, dtype, shape)
    a = base
    for _ in range(data.draw(st.integers(0, 3))):
        got = draw_view(data, a)
        if got is not None:
            a = got[1](a)
    t = cowstore.from_dlpack(a)
    u = cowstore.from_buffer(a)
    for x in (t, u):
        assert x.shape == a.shape
        assert same_strides(a.shape, x.strides, a.strides)
        if a.size > 0:
            assert x.data_ptr() == addr(a)
        np.testing.assert_array_equal(to_numpy_values(x), a)
    # and back to NumPy through DLPack: the same memory
    b = np.from_dlpack(t)
    if a.size > 0:
        assert addr(b) == addr(a)
        assert same_strides(a.shape, b.strides, a.strides)
    np.testing.assert_array_equal(b, a)
    # a lazy clone written leaves the array alone
    before = a.copy()
    c = t.lazy_clone()
    c.fill_(1)
    np.testing.assert_array_equal(a, before)


@given(st.data())
def test_cowstore_views_export_zero_copy(data):
    dtype = data.draw(st.sampled_from(NUMPY_DLPACK_DTYPES))
    shape = data.draw(shapes(max_ndim=4, max_size=5))
    values = random_values(data, dtype, shape)
    t = cowstore.tensor(values)
    n = values
    for _ in range(data.draw(st.integers(0, 3))):
        got = step_view(data, [], t, n)
        if got is not None:
            t, n = got[0], got[1]
    how = data.draw(st.sampled_from(["from_dlpack", "numpy", "memoryview",
                                     "numpy_read_only"]))
    if how == "from_dlpack":
        e = np.from_dlpack(t)
    elif how == "numpy":
        e = t.numpy()
    elif how == "numpy_read_only":
        e = t.numpy(read_only=True)
    else:
        e = np.asarray(memoryview(t))
    if n.size > 0:
        assert addr(e) == t.data_ptr()
        assert e.strides == t.strides
    np.testing.assert_array_equal(e, n)
    assert same_strides(n.shape, t.strides, n.strides)


@pytest.mark.parametrize("mode", ["alias", "lazy_copy"])
@settings(max_examples=60)
@given(data=st.data())
def test_reshape_values_match_numpy(mode, data):
    dtype = data.draw(st.sampled_from(("int32", "float64")))
    shape = data.draw(shapes(max_ndim=3, max_size=4))
    values = random_values(data, dtype, shape)
    t = cowstore.tensor(values)
    n = values
    got = step_view(data, [], t, n)
    if got is not None:
        t, n = got[0], got[1]
    target = data.draw(st.sampled_from(reshape_targets(n.size)))
    with cowstore.reshape_mode(mode):
        r = t.reshape(*target)
    nr = n.reshape(target)
    assert r.shape == nr.shape
    np.testing.assert_array_equal(to_numpy_values(r), nr)
    # writes through the result reach the input only in alias mode, and
    # only when reshape could be a view
    r.fill_(7)
    if mode == "lazy_copy" or not r.shares_storage(t):
        np.testing.assert_array_equal(to_numpy_values(t), n)
    else:
        assert (to_numpy_values(t) == 7).all()
