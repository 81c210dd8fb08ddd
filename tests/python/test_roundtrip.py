"""Zero-copy round trips NumPy <-> cowstore <-> PyTorch (DLPack and the
buffer protocol), for every dtype both sides exchange, contiguous, strided
and transposed, zero-size and zero-dimensional (docs/python.md, "DLPack",
"The buffer protocol")."""
import gc

import numpy as np
import pytest

import cowstore
from conftest import (FORMATS, NUMPY_DLPACK_DTYPES, NUMPY_DTYPES,
                      TORCH_DLPACK_DTYPES, addr, collect, same_strides,
                      sample, to_numpy_values, writable_array)


def torch_values(x):
    """A torch tensor's values as a NumPy array (bfloat16 through
    float32, exactly)."""
    import torch
    if x.dtype == torch.bfloat16:
        x = x.float()
    return x.detach().clone().numpy()


def torch_sample(torch, dtype, shape, seed=0):
    """A torch tensor with sample()'s values (bfloat16 from float32: the
    sample values are exact in bfloat16)."""
    if dtype == "bfloat16":
        return torch.from_numpy(sample("float32", shape, seed)).to(
            torch.bfloat16)
    return torch.from_numpy(sample(dtype, shape, seed))


def import_unless_refused(from_dlpack, t, errors):
    """from_dlpack(t), or None when it raises one of @errors: then the
    capsule it did not consume ran the deleter when dropped, so t is
    unpinned once the exception (whose traceback holds the consumer's frame
    and the capsule) is gone."""
    try:
        return from_dlpack(t)
    except errors:
        pass
    collect()
    assert not t.is_pinned()
    return None


def cow_sample(dtype, shape, seed=0):
    """A cowstore tensor (its own memory) with sample()'s values."""
    if dtype == "bfloat16":
        t = cowstore.zeros(tuple(shape), dtype="bfloat16")
        t.copy_(sample("float32", shape, seed))
        return t
    return cowstore.tensor(sample(dtype, shape, seed))


# ---------------------------------------------------------------------------
# NumPy -> cowstore

def assert_imported_in_place(t, a, dtype, shape):
    """t, imported from the NumPy array @a, is @a in place: its dtype and
    @shape, a's strides, address and values."""
    assert t.dtype == dtype
    assert t.shape == shape
    assert same_strides(a.shape, t.strides, a.strides)
    assert t.data_ptr() == addr(a)
    np.testing.assert_array_equal(to_numpy_values(t), a)


@pytest.mark.parametrize("dtype", NUMPY_DLPACK_DTYPES)
def test_from_dlpack_numpy_is_zero_copy(dtype):
    a = sample(dtype, (3, 4))
    t = cowstore.from_dlpack(a)
    assert_imported_in_place(t, a, dtype, (3, 4))
    assert not t.is_read_only()
    assert t.is_pinned()  # a writable import is pinned for life
    # aliasing both ways: the producer's writes show, cowstore's reach it
    a[0, 0] = a[1, 1]
    assert t[0, 0].item() == a[1, 1].item()
    t[2, 3] = 1
    assert a[2, 3] == 1


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_from_buffer_numpy_is_zero_copy(dtype):
    # bool included: the buffer protocol carries it ("?"), DLPack in NumPy
    # 1.24 does not.
    a = sample(dtype, (2, 5))
    t = cowstore.from_buffer(a)
    assert_imported_in_place(t, a, dtype, (2, 5))


def test_numpy_bool_dlpack_export_is_refused_by_numpy():
    # Not cowstore's doing: NumPy 1.24 refuses to export bool. The import
    # of such a producer fails with NumPy's exception, and nothing leaks.
    a = np.array([True, False])
    with pytest.raises((TypeError, BufferError, ValueError)):
        cowstore.from_dlpack(a)


@pytest.mark.parametrize("view", ["slice", "step", "transpose", "permute",
                                  "column", "negative_free_offset"])
def test_from_dlpack_numpy_strided_views(view):
    base = sample("float32", (4, 5, 6))
    a = {"slice": lambda b: b[1:3, 2:, :4],
         "step": lambda b: b[::2, 1::2, ::3],
         "transpose": lambda b: b.T,
         "permute": lambda b: b.transpose(1, 2, 0),
         "column": lambda b: b[:, 3, :][:, 2],
         "negative_free_offset": lambda b: b[3, 4:, 5:]}[view](base)
    t = cowstore.from_dlpack(a)
    assert t.shape == a.shape
    assert same_strides(a.shape, t.strides, a.strides)
    assert t.data_ptr() == addr(a)
    assert t.is_contiguous() == a.flags.c_contiguous or a.size <= 1
    np.testing.assert_array_equal(to_numpy_values(t), a)
    # writes through the view land where NumPy's view has them
    t.fill_(-7)
    assert (a == -7).all()
    assert (base == -7).sum() == a.size


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0, 2)])
def test_from_dlpack_numpy_zero_size(shape):
    a = np.zeros(shape, dtype=np.float64)
    t = cowstore.from_dlpack(a)
    assert t.shape == shape
    assert t.numel() == 0
    assert t.nbytes == 0
    assert t.tolist() == a.tolist()
    assert t.sum().item() == 0


@pytest.mark.parametrize("dtype", ["int16", "float32", "complex128"])
def test_from_dlpack_numpy_zero_dim(dtype):
    a = sample(dtype, (7,))[3:4].reshape(())
    t = cowstore.from_dlpack(a)
    assert t.shape == ()
    assert t.ndim == 0
    assert t.numel() == 1
    assert t.data_ptr() == addr(a)
    assert t.item() == a.item()
    assert type(t.item()) is type(a.item())


# ---------------------------------------------------------------------------
# cowstore -> NumPy

@pytest.mark.parametrize("dtype", NUMPY_DLPACK_DTYPES)
def test_np_from_dlpack_cowstore_is_zero_copy(dtype):
    t = cow_sample(dtype, (3, 4))
    n = np.from_dlpack(t)
    assert n.dtype == np.dtype(dtype)
    assert n.shape == (3, 4)
    assert n.strides == t.strides
    assert addr(n) == t.data_ptr()
    np.testing.assert_array_equal(n, to_numpy_values(t))
    assert t.is_pinned()  # the writable export pins until NumPy lets go
    del n
    collect()
    assert not t.is_pinned()


def test_np_from_dlpack_bool():
    # NumPy 1.24 may not import kDLBool; when it does, it must be zero copy.
    t = cowstore.tensor(np.array([True, False, True]))
    n = import_unless_refused(np.from_dlpack, t, (TypeError, BufferError,
                                                   ValueError, RuntimeError))
    if n is None:
        pytest.skip("this NumPy does not import bool through DLPack")
    assert n.dtype == np.bool_
    assert addr(n) == t.data_ptr()
    assert n.tolist() == [True, False, True]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_np_asarray_and_numpy_are_zero_copy(dtype):
    t = cow_sample(dtype, (2, 3))
    a = np.asarray(t)
    assert a.dtype == np.dtype(dtype)
    assert addr(a) == t.data_ptr()
    np.testing.assert_array_equal(a, sample(dtype, (2, 3)))
    # NumPy 1.24's asarray makes a read-only buffer request: a snapshot,
    # nothing pinned (a writable request would pin: test_isolation.py)
    assert t.is_pinned() == a.flags.writeable
    del a
    b = t.numpy()
    assert b.flags.writeable
    assert addr(b) == t.data_ptr()
    np.testing.assert_array_equal(b, sample(dtype, (2, 3)))
    w = writable_array(t)
    assert w.flags.writeable
    assert addr(w) == t.data_ptr()
    np.testing.assert_array_equal(w, sample(dtype, (2, 3)))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_memoryview_format_and_values(dtype):
    t = cow_sample(dtype, (2, 3))
    with memoryview(t) as m:
        assert m.readonly
        assert m.format == FORMATS[dtype]
        assert m.shape == (2, 3)
        assert m.strides == t.strides
        assert m.itemsize == t.itemsize
        assert m.nbytes == t.nbytes
        assert bytes(m) == sample(dtype, (2, 3)).tobytes()
    assert bytes(t) == sample(dtype, (2, 3)).tobytes()


@pytest.mark.parametrize("view", ["slice", "step", "T", "permute", "index",
                                  "unsqueeze", "expand"])
def test_np_from_dlpack_cowstore_views(view):
    t = cowstore.arange(120, dtype="int32").reshape(4, 5, 6)
    ref = np.arange(120, dtype=np.int32).reshape(4, 5, 6)
    f = {"slice": lambda x: x[1:3, 2:, :4],
         "step": lambda x: x[::2, 1::2, ::3],
         "T": lambda x: x.T,
         "permute": lambda x: (x.permute(1, 2, 0) if hasattr(x, "permute")
                               else x.transpose(1, 2, 0)),
         "index": lambda x: x[2, ..., 1:5],
         "unsqueeze": lambda x: x[:, None, 1],
         "expand": lambda x: (x[0:1, 0:1, 2].expand(3, 4)
                              if hasattr(x, "expand")
                              else np.broadcast_to(x[0:1, 0:1, 2], (3, 4)))}[
        view]
    v = f(t)
    r = f(ref)
    assert v.shape == r.shape
    assert same_strides(r.shape, v.strides, r.strides)
    # the buffer protocol with strides (before any export pins the storage:
    # a read-only request of a pinned storage is an eager copy)
    m = memoryview(v)
    assert m.strides == v.strides
    assert m.tolist() == r.tolist()
    a = np.asarray(v)
    assert a.strides == v.strides
    assert addr(a) == v.data_ptr()
    np.testing.assert_array_equal(a, r)
    del m, a
    n = np.from_dlpack(v)
    assert n.shape == r.shape
    assert n.strides == v.strides
    assert addr(n) == v.data_ptr()
    np.testing.assert_array_equal(n, r)
    w = writable_array(v)
    assert w.strides == v.strides
    assert addr(w) == v.data_ptr()
    np.testing.assert_array_equal(w, r)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0)])
def test_np_from_dlpack_cowstore_zero_size(shape):
    t = cowstore.zeros(shape, dtype="float32")
    n = np.from_dlpack(t)
    assert n.shape == shape
    assert n.dtype == np.float32
    assert n.size == 0
    a = np.asarray(t)
    assert a.shape == shape
    assert memoryview(t).shape == shape
    assert bytes(t) == b""


def test_np_from_dlpack_cowstore_zero_dim():
    t = cowstore.full((), 2.5, dtype="float64")
    n = np.from_dlpack(t)
    assert n.shape == ()
    assert addr(n) == t.data_ptr()
    assert n.item() == 2.5
    assert np.asarray(t).item() == 2.5
    assert memoryview(t).shape == ()


@pytest.mark.parametrize("dtype", NUMPY_DLPACK_DTYPES)
def test_numpy_cowstore_numpy_same_address(dtype):
    a = sample(dtype, (4, 3))
    t = cowstore.from_dlpack(a)
    n = np.from_dlpack(t)
    assert addr(n) == addr(a)
    np.testing.assert_array_equal(n, a)
    a[1, 2] = a[0, 0]
    assert n[1, 2] == a[0, 0]


# ---------------------------------------------------------------------------
# PyTorch -> cowstore -> PyTorch

@pytest.mark.parametrize("dtype", TORCH_DLPACK_DTYPES)
def test_from_dlpack_torch_is_zero_copy(torch, dtype):
    x = torch_sample(torch, dtype, (3, 4))
    t = cowstore.from_dlpack(x)
    assert t.dtype == dtype
    assert t.shape == (3, 4)
    assert t.stride() == x.stride()
    assert t.data_ptr() == x.data_ptr()
    assert t.is_pinned()
    np.testing.assert_array_equal(to_numpy_values(t), torch_values(x))
    # aliasing: torch's writes show through
    x[0, 0] = 1
    assert t[0, 0].item() == 1


@pytest.mark.parametrize("dtype", TORCH_DLPACK_DTYPES)
def test_torch_from_dlpack_cowstore_is_zero_copy(torch, dtype):
    t = cow_sample(dtype, (3, 4))
    x = torch.from_dlpack(t)
    assert str(x.dtype) == "torch." + dtype
    assert tuple(x.shape) == (3, 4)
    assert x.stride() == t.stride()
    assert x.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(torch_values(x), to_numpy_values(t))
    assert t.is_pinned()
    # torch imports writable: its writes reach the tensor
    x[1, 1] = 1
    assert t[1, 1].item() == 1
    del x
    collect()
    assert not t.is_pinned()


def test_torch_bool_is_refused_by_torch_and_nothing_leaks(torch):
    # PyTorch 1.13 imports no kDLBool ("Unsupported code 6"): the capsule it
    # did not consume runs the deleter when dropped, and the pin goes.
    t = cowstore.tensor(np.array([True, False, True]))
    x = import_unless_refused(torch.from_dlpack, t, (RuntimeError, TypeError,
                                                     BufferError))
    if x is None:
        assert t.tolist() == [True, False, True]
        return
    assert x.dtype == torch.bool
    assert x.data_ptr() == t.data_ptr()
    assert x.tolist() == [True, False, True]


@pytest.mark.parametrize("view", ["t", "slice", "step", "permute", "index"])
def test_torch_strided_views_both_ways(torch, view):
    base = torch.arange(120, dtype=torch.float64).reshape(4, 5, 6)
    f = {"t": lambda x: x.transpose(0, 2),
         "slice": lambda x: x[1:3, 2:, :4],
         "step": lambda x: x[::2, 1::2, ::3],
         "permute": lambda x: x.permute(1, 2, 0),
         "index": lambda x: x[2, :, 1:5]}[view]
    x = f(base)
    t = cowstore.from_dlpack(x)
    assert t.shape == tuple(x.shape)
    assert t.stride() == x.stride()
    assert t.data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(to_numpy_values(t), x.numpy())
    # and a cowstore view back to torch
    c = f(cowstore.arange(120, dtype="float64").reshape(4, 5, 6))
    y = torch.from_dlpack(c)
    assert y.stride() == c.stride()
    assert y.data_ptr() == c.data_ptr()
    np.testing.assert_array_equal(y.numpy(), x.numpy())


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0)])
def test_torch_zero_size_both_ways(torch, shape):
    x = torch.zeros(shape, dtype=torch.float32)
    t = cowstore.from_dlpack(x)
    assert t.shape == shape
    assert t.numel() == 0
    c = cowstore.zeros(shape, dtype="int64")
    y = torch.from_dlpack(c)
    assert tuple(y.shape) == shape
    assert y.dtype == torch.int64
    assert y.numel() == 0


def test_torch_zero_dim_both_ways(torch):
    x = torch.tensor(-3.25, dtype=torch.float32)
    t = cowstore.from_dlpack(x)
    assert t.shape == ()
    assert t.data_ptr() == x.data_ptr()
    assert t.item() == -3.25
    c = cowstore.full((), 9, dtype="int16")
    y = torch.from_dlpack(c)
    assert y.shape == ()
    assert y.data_ptr() == c.data_ptr()
    assert y.item() == 9


@pytest.mark.parametrize("dtype", [d for d in NUMPY_DLPACK_DTYPES
                                   if d in TORCH_DLPACK_DTYPES])
def test_numpy_cowstore_torch_same_address(torch, dtype):
    a = sample(dtype, (5, 2))
    t = cowstore.from_dlpack(a)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == addr(a) == t.data_ptr()
    np.testing.assert_array_equal(x.numpy(), a)
    # three names for one memory
    x[4, 1] = 3
    assert a[4, 1] == 3
    assert t[4, 1].item() == 3


@pytest.mark.parametrize("dtype", [d for d in NUMPY_DLPACK_DTYPES
                                   if d in TORCH_DLPACK_DTYPES])
def test_torch_cowstore_numpy_same_address(torch, dtype):
    x = torch_sample(torch, dtype, (2, 3, 2))
    t = cowstore.from_dlpack(x)
    n = np.from_dlpack(t)
    assert addr(n) == x.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(n, x.numpy())
    x.zero_()
    assert not n.any()


def test_torch_transposed_through_cowstore_to_numpy(torch):
    x = torch.arange(12, dtype=torch.int32).reshape(3, 4).t()
    t = cowstore.from_dlpack(x)
    n = np.from_dlpack(t)
    assert addr(n) == x.data_ptr()
    assert n.strides == (4, 16)
    np.testing.assert_array_equal(n, x.numpy())


def test_from_dlpack_capsules_directly(torch):
    a = np.arange(6, dtype=np.int64)
    t = cowstore.from_dlpack(a.__dlpack__())
    assert t.data_ptr() == addr(a)
    x = torch.arange(6, dtype=torch.float32)
    u = cowstore.from_dlpack(torch.utils.dlpack.to_dlpack(x))
    assert u.data_ptr() == x.data_ptr()
    y = torch.utils.dlpack.from_dlpack(cowstore.arange(4).__dlpack__())
    assert y.tolist() == [0, 1, 2, 3]
    del y
    gc.collect()


def test_asarray_and_tensor_of_producers(torch):
    a = sample("float32", (2, 2))
    assert cowstore.asarray(a).data_ptr() == addr(a)
    x = torch.ones(3)
    assert cowstore.asarray(x).data_ptr() == x.data_ptr()
    # tensor() copies
    c = cowstore.tensor(x)
    assert c.data_ptr() != x.data_ptr()
    assert c.tolist() == [1.0, 1.0, 1.0]
    x.fill_(5)
    assert c.tolist() == [1.0, 1.0, 1.0]
