"""Interop rough edges (issue 39): what torch.as_tensor() and torch.tensor()
do with a Tensor, np.asarray() of a bfloat16 tensor, and len() and iter()
of a 0-d tensor, each against the real PyTorch 1.13 and NumPy 1.24
(docs/python.md, "PyTorch and NumPy")."""
import numpy as np
import pytest

import cowstore
from conftest import ALL_DTYPES, NUMPY_DTYPES, TORCH_DLPACK_DTYPES, sample


def make(dtype, shape, seed=0):
    """A tensor of its own memory with sample()'s values (bfloat16 from
    float32: the sample values are exact in bfloat16; reshaped, as sample()
    makes a 0-d array 1-d)."""
    if dtype == "bfloat16":
        t = cowstore.zeros(tuple(shape), dtype="bfloat16")
        t.copy_(sample("float32", shape, seed).reshape(shape))
        return t
    return cowstore.tensor(sample(dtype, shape, seed).reshape(shape))


# Each a tensor with elements along every dimension, so that a walk over
# nested sequences reaches a 0-d element: contiguous, 0-d (its own and a
# view), transposed, a slice with a step.
SHAPED = {
    "contiguous": lambda d: make(d, (2, 3)),
    "zero_d": lambda d: make(d, ()),
    "zero_d_view": lambda d: make(d, (2, 3))[1, 2],
    "one_d": lambda d: make(d, (4,)),
    "transposed": lambda d: make(d, (2, 3)).T,
    "stepped": lambda d: make(d, (3, 4))[:, ::2],
}


def numpy_error(fn, *args):
    """The TypeError NumPy raises for fn(*args), as its message."""
    with pytest.raises(TypeError) as err:
        fn(*args)
    return str(err.value)


# ---------------------------------------------------------------------------
# len() and iter() of a 0-d tensor: NumPy's messages.

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_len_and_iter_of_zero_d_raise_numpys_messages(dtype):
    len_msg = numpy_error(len, np.zeros(()))
    iter_msg = numpy_error(iter, np.zeros(()))
    assert len_msg == "len() of unsized object"
    assert iter_msg == "iteration over a 0-d array"
    for t in (make(dtype, ()), make(dtype, (2, 3))[0, 1],
              make(dtype, (1,)).squeeze()):
        assert t.ndim == 0
        with pytest.raises(TypeError) as err:
            len(t)
        assert str(err.value) == len_msg
        assert len(from_dlpack_note(err.value)) == 1  # the same note
        for fn in (iter, list, tuple):
            with pytest.raises(TypeError) as err:
                fn(t)
            assert str(err.value) == iter_msg
    # Sized tensors are unchanged: len() is dimension 0, empty or not.
    assert len(make(dtype, (2, 3))) == 2
    assert len(cowstore.zeros((0, 3), dtype=dtype)) == 0
    assert len(list(make(dtype, (2, 3)).T)) == 3


# ---------------------------------------------------------------------------
# torch.as_tensor() and torch.tensor(): PyTorch 1.13 takes an object that
# is neither a torch tensor nor a NumPy array (nor a __cuda_array_interface__
# producer) as nested sequences, and reads no buffer, __array__ or
# __dlpack__ there, so nothing can be zero copy; the walk stops at len() of
# a 0-d element, whose error carries a note naming torch.from_dlpack.

def from_dlpack_note(err):
    notes = getattr(err, "__notes__", [])
    return [n for n in notes if "torch.from_dlpack(t)" in n]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", sorted(SHAPED))
def test_torch_as_tensor_and_tensor_name_from_dlpack(torch, dtype, layout):
    t = SHAPED[layout](dtype)
    for fn in (torch.as_tensor, torch.tensor):
        with pytest.raises(TypeError) as err:
            fn(t)
        assert str(err.value) == "len() of unsized object"
        notes = from_dlpack_note(err.value)
        assert len(notes) == 1, (fn, err.value, getattr(err.value,
                                                        "__notes__", None))
        assert "torch.as_tensor() and torch.tensor()" in notes[0]
    # The tensor is as it was: not pinned, nothing exported.
    assert not t.is_pinned()


def torch_values(torch, x):
    if x.dtype == torch.bfloat16:
        x = x.float()
    return x.numpy()


def test_what_torch_as_tensor_reads(torch):
    """The protocols PyTorch 1.13's as_tensor and tensor read, as
    docs/python.md gives them: __cuda_array_interface__ (its CUDA path;
    this torch has no CUDA), and neither __array__ nor __dlpack__."""
    class Cuda:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4",
                                    "data": (0, False), "version": 2}

    class Other:
        def __array__(self, dtype=None):
            return np.arange(3)

        def __dlpack__(self, stream=None):
            return np.arange(3).__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    for fn in (torch.as_tensor, torch.tensor):
        with pytest.raises(RuntimeError, match="CUDA"):
            fn(Cuda())
        with pytest.raises(RuntimeError, match="Could not infer dtype"):
            fn(Other())


@pytest.mark.parametrize("dtype", TORCH_DLPACK_DTYPES + ("bool",))
@pytest.mark.parametrize("layout", sorted(SHAPED))
def test_the_notes_advice_gives_the_values(torch, dtype, layout):
    """What the note says: torch.from_dlpack(t) (zero copy), .clone() for a
    copy, torch.from_numpy(t.numpy()) for bool (PyTorch 1.13's DLPack has no
    bool); every dtype PyTorch has."""
    t = SHAPED[layout](dtype)
    want = np.asarray(cowstore.tensor(t, dtype="float32")) \
        if dtype == "bfloat16" else np.asarray(t)
    x = torch.from_numpy(t.numpy()) if dtype == "bool" \
        else torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr()  # zero copy
    assert t.is_pinned()  # pinned while torch holds it, as any export
    assert tuple(x.shape) == t.shape
    np.testing.assert_array_equal(torch_values(torch, x), want)
    c = x.clone()
    assert c.data_ptr() != t.data_ptr()
    del x
    np.testing.assert_array_equal(torch_values(torch, c), want)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_torch_as_tensor_of_an_empty_tensor_is_float32(torch, dtype, shape):
    """No element, no 0-d element to stop at: the walk ends at the empty
    dimension and PyTorch gives its default dtype, float32, whatever the
    tensor's (docs/python.md says so)."""
    t = cowstore.zeros(shape, dtype=dtype)
    for fn in (torch.as_tensor, torch.tensor):
        x = fn(t)
        assert x.dtype == torch.float32
        assert tuple(x.shape) == shape[:shape.index(0) + 1]


# ---------------------------------------------------------------------------
# np.asarray() of a bfloat16 tensor.

BFLOAT16_CONVERSIONS = {
    "asarray": np.asarray,
    "array": np.array,
    "asarray_float32": lambda t: np.asarray(t, dtype=np.float32),
    "array_of_list": lambda t: np.array([t]),
    "ascontiguousarray": np.ascontiguousarray,
    "add": lambda t: np.add(t, 1),
}


@pytest.mark.parametrize("how", sorted(BFLOAT16_CONVERSIONS))
@pytest.mark.parametrize("layout", sorted(SHAPED) + ["empty"])
def test_numpy_of_bfloat16_raises_and_says_what_to_do(how, layout):
    t = cowstore.zeros((0, 2), dtype="bfloat16") if layout == "empty" \
        else SHAPED[layout]("bfloat16")
    with pytest.raises(TypeError) as err:
        BFLOAT16_CONVERSIONS[how](t)
    msg = str(err.value)
    assert "NumPy has no bfloat16" in msg
    assert 'cowstore.tensor(t, dtype="float32")' in msg
    assert "torch.from_dlpack(t)" in msg
    # What it says to do works: an exact float32 copy (torch.from_dlpack:
    # test_the_notes_advice_gives_the_values).
    f = np.asarray(cowstore.tensor(t, dtype="float32"))
    assert f.dtype == np.float32 and f.shape == t.shape
    np.testing.assert_array_equal(
        f, np.array(t.tolist(), dtype=np.float32).reshape(f.shape))


def test_bfloat16_error_is_the_type_numpy_and_torch_raise(torch):
    """TypeError: NumPy's for a dtype it does not know, and what np.asarray
    of PyTorch's own bfloat16 tensor raises (NumPy's ValueError is for a
    malformed PEP 3118 format string; bfloat16 has no format at all)."""
    with pytest.raises(TypeError, match="not understood"):
        np.dtype("bfloat16")
    with pytest.raises(TypeError, match="BFloat16"):
        np.asarray(torch.zeros(2, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="NumPy has no bfloat16"):
        np.asarray(cowstore.zeros((2,), dtype="bfloat16"))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("layout", sorted(SHAPED))
def test_numpy_of_other_dtypes_is_unchanged(dtype, layout):
    """Every other dtype still goes through the buffer protocol: NumPy's
    dtype, the values, a read-only snapshot at the tensor's address;
    __array__ called directly gives the same array."""
    t = SHAPED[layout](dtype)
    a = np.asarray(t)
    assert a.dtype == np.dtype(dtype) and a.shape == t.shape
    assert not a.flags.writeable
    assert a.__array_interface__["data"][0] == t.data_ptr()
    np.testing.assert_array_equal(
        a, np.array(t.tolist(), dtype=dtype).reshape(a.shape))
    b = t.__array__()
    assert b.dtype == a.dtype and b.strides == a.strides
    np.testing.assert_array_equal(a, b)
    if not dtype.startswith("complex"):
        np.testing.assert_array_equal(t.__array__(np.float64),
                                      a.astype(np.float64))


def test_numpy_raises_the_buffers_error():
    """When the buffer fails for a dtype NumPy has (a read refused under the
    "error" shadow policy), np.asarray raises that error, through the
    buffer or __array__, never an object array."""
    cowstore.set_shadow_policy("error")
    cowstore.set_reshape_mode("warn")
    x = cowstore.full((4,), 1, dtype="float32")
    x.reshape(2, 2).fill_(7)
    for fn in (np.asarray, lambda t: t.__array__()):
        with pytest.raises(BufferError, match="COW_EALIASING"):
            fn(x)


# ---------------------------------------------------------------------------
# torch.asarray() and torch.frombuffer(): PyTorch 1.13 takes the buffer
# protocol there, reads the bytes as its default dtype (float32) unless
# told a dtype, and releases the buffer before it returns while keeping the
# address, so the pin a writable buffer holds is gone while torch can still
# write: docs/python.md says to use torch.from_dlpack instead.

def test_torch_asarray_and_frombuffer_bypass_the_pin(torch):
    import warnings
    t = cowstore.arange(4, dtype="int32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        x = torch.asarray(t)
    assert x.dtype == torch.float32  # the int32 bytes read as float32
    np.testing.assert_array_equal(
        x.numpy(), np.arange(4, dtype=np.int32).view(np.float32))
    assert x.data_ptr() == t.data_ptr() and not t.is_pinned()
    c = t.lazy_clone()  # not pinned: the clone shares the bytes
    x.fill_(0)
    assert c.tolist() == [0, 0, 0, 0]  # torch's write reached the clone
    t = cowstore.arange(4, dtype="int32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        x = torch.frombuffer(t, dtype=torch.int32)
    assert x.tolist() == [0, 1, 2, 3] and not t.is_pinned()
    c = t.lazy_clone()
    x.fill_(9)
    assert c.tolist() == [9, 9, 9, 9]
    # What the docs advise instead: pinned while torch holds it.
    u = cowstore.arange(4, dtype="int32")
    y = torch.from_dlpack(u)
    assert y.dtype == torch.int32 and u.is_pinned()
    d = u.lazy_clone()
    y.fill_(0)
    assert d.tolist() == [0, 1, 2, 3] and u.tolist() == [0, 0, 0, 0]
