"""Pickling and copying tensors (docs/python.md, "Pickling and copies").

A tensor pickles as its dtype, its shape, its values in C order and
whether its memory is read-only (`Tensor.is_read_only()`); it unpickles as
a contiguous tensor of its own (through `cowstore._rebuild`). `copy.copy`
and `copy.deepcopy` give tensors of their own, as NumPy's copies are: lazy
clones, O(1) until one side writes."""
import copy
import pickle

import numpy as np
import pytest

import cowstore
from conftest import ALL_DTYPES, np_equal, sample, to_numpy_values

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def make(dtype, shape, seed=0):
    """A tensor of `dtype` with sample values (bfloat16: float32's, all of
    them exact in bfloat16)."""
    src = sample("float32" if dtype == "bfloat16" else dtype, shape,
                 seed).reshape(shape)
    return cowstore.tensor(src.tolist(), dtype=dtype)


def roundtrip(t, protocol=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(t, protocol=protocol))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_dtype_pickles(dtype, protocol):
    t = make(dtype, (3, 4), seed=5)
    u = roundtrip(t, protocol)
    assert isinstance(u, cowstore.Tensor)
    assert (u.dtype, u.shape, u.stride()) == (dtype, (3, 4), (4, 1))
    assert np_equal(to_numpy_values(u), to_numpy_values(t))
    assert not u.is_read_only() and not u.shares_data(t)
    u.fill_(1)                      # its own: t unchanged
    assert np_equal(to_numpy_values(t), to_numpy_values(make(dtype, (3, 4), 5)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_special_values_pickle_bit_for_bit(dtype):
    """NaN, infinities, signed zeros, extremes: the bytes themselves."""
    if dtype in ("float16", "float32", "float64", "complex64", "complex128",
                 "bfloat16"):
        vals = [float("nan"), float("inf"), -float("inf"), -0.0, 1e-30, 3.0]
    elif dtype == "bool":
        vals = [True, False]
    else:
        info = np.iinfo(np.dtype(dtype))
        vals = [int(info.min), int(info.max), 0, 1]
    t = cowstore.tensor(vals, dtype=dtype)
    fn, (data, name, shape, read_only) = t.__reduce__()
    assert fn is cowstore._rebuild
    assert (name, shape, read_only) == (dtype, (len(vals),), False)
    assert len(data) == t.nbytes
    u = roundtrip(t)
    assert u.__reduce__()[1][0] == data


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (0, 2**63 - 1),
                                   (1,), (5, 1, 2)])
def test_shapes_pickle(shape):
    t = cowstore.zeros(shape, dtype="int16")
    if t.numel():
        t.copy_(cowstore.tensor(sample("int16", shape).reshape(shape).tolist(),
                                dtype="int16"))
    u = roundtrip(t)
    assert (u.shape, u.dtype, u.numel()) == (shape, "int16", t.numel())
    if t.numel():
        assert u.tolist() == t.tolist()


def test_a_view_pickles_as_its_values_in_c_order():
    base = make("float64", (6, 8), seed=2)
    views = [base.T, base[1:5:2, ::3], base[2], base[:, 3],
             base.expand(2, 6, 8), base.unsqueeze(1)[::2]]
    for v in views:
        u = roundtrip(v)
        assert u.shape == v.shape and u.is_contiguous()
        assert u.tolist() == v.tolist()
        assert not u.shares_storage(base)
        # C order: the bytes are the row-major walk of the view.
        assert bytes(np.asarray(u)) == np.ascontiguousarray(
            to_numpy_values(v)).tobytes()
    # The pickle holds the view's values, not its base's.
    small = pickle.dumps(base[0, :2])
    assert len(small) < len(pickle.dumps(base)) // 4


def test_read_only_stays_read_only():
    raw = np.arange(6, dtype=np.int32).tobytes()
    t = cowstore.from_buffer(raw, dtype="int32", shape=(2, 3))
    assert t.is_read_only()
    for v in (t, t.T, t.lazy_clone(), t[1]):
        u = roundtrip(v)
        assert u.is_read_only(), v
        assert u.tolist() == v.tolist()
        u += 1                       # read-only memory: the write copies
        assert not u.is_read_only()
        assert u.tolist() == (to_numpy_values(v) + 1).tolist()
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    # A writable tensor stays writable (memory of its own).
    w = cowstore.arange(4)
    assert not w.is_read_only() and not roundtrip(w).is_read_only()


def test_functional_tensor_pickles_its_current_values():
    """A functional tensor pickles its current values; unpickling makes a
    tensor as any creation does: functional inside functional()."""
    with cowstore.functional():
        f = cowstore.zeros((3, 3), dtype="float32")
        f[1] = 2.0
        data = pickle.dumps(f[:, 1])
        inside = pickle.loads(data)
        assert inside.is_functional()
        assert inside.tolist() == [0.0, 2.0, 0.0]
    u = pickle.loads(data)
    assert not u.is_functional()
    assert u.tolist() == [0.0, 2.0, 0.0]


def test_pickle_while_another_tensor_shares_the_storage():
    t = make("int64", (100,))
    c = t.lazy_clone()              # shares t's bytes
    u = roundtrip(c)
    assert u.tolist() == t.tolist() and c.shares_data(t)


def test_rebuild_checks_its_arguments():
    with pytest.raises(ValueError, match="_rebuild: shape"):
        cowstore._rebuild(b"\0" * 7, "int32", (2,), False)
    with pytest.raises(OverflowError, match="_rebuild"):
        cowstore._rebuild(b"", "int32", (2**62, 2**62), False)
    with pytest.raises(ValueError, match="from_buffer: shape"):
        cowstore._rebuild(b"\0" * 7, "int32", (2,), True)
    with pytest.raises(TypeError, match="_rebuild: unknown dtype"):
        cowstore._rebuild(b"", "int3", (0,), False)


# ---------------------------------------------------------------------------
# copy.copy and copy.deepcopy.

@pytest.mark.parametrize("fn", [copy.copy, copy.deepcopy])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex128", "bool"])
def test_copies_are_independent(fn, dtype):
    t = make(dtype, (4, 3), seed=1)
    want = to_numpy_values(t)
    before = cowstore.stats()["lazy_clones"]
    c = fn(t)
    assert cowstore.stats()["lazy_clones"] == before + 1   # a lazy clone
    assert isinstance(c, cowstore.Tensor) and c is not t
    assert c.shares_data(t) and not c.shares_storage(t)    # O(1) so far
    c.fill_(1)
    assert np_equal(to_numpy_values(t), want)
    d = fn(t)
    t.fill_(0)
    assert np_equal(to_numpy_values(d), want)


@pytest.mark.parametrize("fn", [copy.copy, copy.deepcopy])
def test_copy_of_a_view_keeps_its_shape(fn):
    base = make("int32", (4, 6))
    v = base[1:, ::2].T
    c = fn(v)
    assert c.shape == v.shape and c.tolist() == v.tolist()
    c.fill_(-1)
    assert base.tolist() == make("int32", (4, 6)).tolist()
    v.fill_(9)
    assert c.tolist() == [[-1] * 3] * 3


def test_deepcopy_keeps_identity_within_a_container():
    t = cowstore.arange(3)
    a, b, n = copy.deepcopy([t, t, 5])
    assert a is b and a is not t and n == 5
    assert a.tolist() == [0, 1, 2]


def test_copy_of_a_pinned_tensor_is_its_own_at_once():
    t = cowstore.arange(5)
    a = t.numpy()                    # pins t while the array lives
    c = copy.copy(t)
    assert not c.shares_data(t)      # pinned: lazy clones are eager
    a[:] = 7
    assert c.tolist() == [0, 1, 2, 3, 4]


def test_copies_of_a_read_only_tensor_write_without_touching_it():
    raw = bytes(range(8))
    t = cowstore.from_buffer(raw, dtype="uint8")
    for fn in (copy.copy, copy.deepcopy):
        c = fn(t)
        assert c.is_read_only()
        c += 1
        assert c.tolist() == list(range(1, 9)) and raw == bytes(range(8))
