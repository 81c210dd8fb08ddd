"""Bad input: each a clear exception with the library's message
(docs/python.md, "Errors", "DLPack", "The buffer protocol")."""
import ctypes

import numpy as np
import pytest

import cowstore
from conftest import (DLPACK_FLAG_IS_COPIED, DLPACK_FLAG_READ_ONLY, Buffer,
                      HandMadeDLPack, PyBUF_C_CONTIGUOUS, PyBUF_F_CONTIGUOUS,
                      PyBUF_FORMAT, PyBUF_FULL_RO, PyBUF_ND, PyBUF_RECORDS,
                      PyBUF_SIMPLE, PyBUF_STRIDES, PyBUF_WRITABLE, addr, api,
                      capsule_name, capsule_struct, collect)

DLPACK_ERRORS = (BufferError, TypeError, ValueError)


def message(excinfo):
    msg = str(excinfo.value)
    assert msg.strip(), "an exception without a message"
    return msg


def import_refused(p):
    """from_dlpack of @p's capsule must raise; its message, lowercased."""
    with pytest.raises(DLPACK_ERRORS) as e:
        cowstore.from_dlpack(p.capsule())
    return message(e).lower()


# ---------------------------------------------------------------------------
# DLPack import

class FakeDevice:
    """A producer on device (2, 0) (CUDA). Its __dlpack__ returns a real
    capsule (hand-made, on that device), so a consumer that does not check
    __dlpack_device__ first still sees the device in the capsule."""

    def __init__(self):
        self.producer = HandMadeDLPack(np.arange(4, dtype=np.float32),
                                       device=(2, 0))
        self.asked = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kw):
        self.asked.append((stream, kw))
        return self.producer.capsule()


def test_non_cpu_device_is_refused():
    p = FakeDevice()
    with pytest.raises(DLPACK_ERRORS) as e:
        cowstore.from_dlpack(p)
    message(e)
    collect()
    # every capsule it asked for was taken over: each deleter ran once
    # (zero capsules when it checked __dlpack_device__ first)
    assert p.producer.calls == len(p.asked)


def test_non_cpu_device_in_capsule_is_refused():
    p = HandMadeDLPack(np.arange(4, dtype=np.float32), device=(2, 0))
    assert "device" in import_refused(p)
    assert p.calls == 1


def test_cuda_host_memory_is_accepted():
    # kDLCUDAHost (3): pinned host memory the CPU reads (docs/interop.md).
    a = np.arange(4, dtype=np.float32)
    p = HandMadeDLPack(a, device=(3, 0))
    t = cowstore.from_dlpack(p.capsule())
    assert t.data_ptr() == addr(a)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    del t
    collect()
    assert p.calls == 1


@pytest.mark.parametrize("dtype", [(2, 8), (0, 7), (1, 128), (9, 32),
                                   (6, 16)])
def test_unknown_dlpack_dtype_is_refused(dtype):
    p = HandMadeDLPack(np.arange(4, dtype=np.float64), dtype=dtype)
    import_refused(p)
    assert p.calls == 1


def test_lanes_are_refused():
    p = HandMadeDLPack(np.arange(4, dtype=np.float32), lanes=2)
    import_refused(p)
    assert p.calls == 1


def test_unknown_versioned_major_is_refused():
    p = HandMadeDLPack(np.arange(4, dtype=np.float32), versioned=True,
                       version=(2, 0))
    assert "version" in import_refused(p)
    assert p.calls == 1


def test_misaligned_data_is_refused():
    raw = np.zeros(17, dtype=np.uint8)
    a = raw[1:].view(np.uint8)  # an odd address
    p = HandMadeDLPack(a, dtype=(2, 32))
    p.managed.dl_tensor.shape[0] = 4
    import_refused(p)
    assert p.calls == 1


def test_unknown_dtype_name():
    with pytest.raises((TypeError, ValueError)) as e:
        cowstore.zeros((2,), dtype="float8")
    assert "float8" in message(e)
    with pytest.raises((TypeError, ValueError)):
        cowstore.full((2,), 1, dtype="int128")
    with pytest.raises((TypeError, ValueError)):
        cowstore.from_buffer(bytearray(8), dtype="quad")


def test_wrong_capsule_name():
    buf = ctypes.create_string_buffer(64)
    cap = api.PyCapsule_New(ctypes.addressof(buf), b"not_a_dltensor", None)
    with pytest.raises(DLPACK_ERRORS) as e:
        cowstore.from_dlpack(cap)
    message(e)
    assert capsule_name(cap) == "not_a_dltensor"  # left alone


def test_consumed_capsule_name():
    p = HandMadeDLPack(np.arange(4, dtype=np.float32))
    p.name = b"used_dltensor"
    import_refused(p)
    assert p.calls == 0  # not ours to delete


def test_capsule_consumed_by_numpy_then_by_cowstore():
    t = cowstore.arange(3, dtype="float32")
    cap = t.__dlpack__()

    class Once:
        def __dlpack__(self, stream=None):
            return cap

        def __dlpack_device__(self):
            return (1, 0)

    n = np.from_dlpack(Once())
    with pytest.raises(DLPACK_ERRORS) as e:
        cowstore.from_dlpack(cap)
    message(e)
    assert n.tolist() == [0.0, 1.0, 2.0]


def test_not_a_producer():
    with pytest.raises((TypeError, ValueError, BufferError)) as e:
        cowstore.from_dlpack(object())
    message(e)
    with pytest.raises((TypeError, ValueError, BufferError)):
        cowstore.from_dlpack([1, 2, 3])


def test_producer_raising_propagates():
    class Bad:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, **kw):
            raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError, match="producer failed"):
        cowstore.from_dlpack(Bad())


def test_producer_returning_a_non_capsule():
    class Bad:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, **kw):
            return 42

    with pytest.raises(DLPACK_ERRORS) as e:
        cowstore.from_dlpack(Bad())
    message(e)


# ---------------------------------------------------------------------------
# DLPack export

def test_stream_other_than_none_is_refused():
    t = cowstore.arange(4)
    for stream in (0, 1, 2, -1):
        with pytest.raises(BufferError) as e:
            t.__dlpack__(stream=stream)
        message(e)
    assert not t.is_pinned()  # nothing was exported
    t.__dlpack__(stream=None)


def test_dl_device_other_than_cpu_is_refused():
    t = cowstore.arange(4)
    with pytest.raises(BufferError) as e:
        t.__dlpack__(dl_device=(2, 0))
    message(e)
    assert not t.is_pinned()
    cap = t.__dlpack__(dl_device=(1, 0))
    assert capsule_name(cap) == "dltensor"


def test_dlpack_device():
    assert cowstore.arange(2).__dlpack_device__() == (1, 0)
    assert cowstore.zeros(()).__dlpack_device__() == (1, 0)


def test_legacy_and_versioned_capsule_names():
    t = cowstore.arange(4)
    assert capsule_name(t.__dlpack__()) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=None)) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(1, 0))) == \
        "dltensor_versioned"
    assert capsule_name(t.__dlpack__(max_version=(2, 0))) == \
        "dltensor_versioned"


def test_versioned_capsule_fields():
    t = cowstore.arange(12, dtype="int16").reshape(3, 4).T
    cap = t.__dlpack__(max_version=(1, 0))
    m = capsule_struct(cap)
    assert (m.version.major, m.version.minor) == (1, 0)
    assert m.flags & DLPACK_FLAG_IS_COPIED == 0
    assert m.flags & DLPACK_FLAG_READ_ONLY == 0
    dl = m.dl_tensor
    assert dl.data == t.data_ptr()
    assert (dl.device.device_type, dl.device.device_id) == (1, 0)
    assert dl.ndim == 2
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (0, 16, 1)
    assert [dl.shape[i] for i in range(2)] == [4, 3]
    assert [dl.strides[i] for i in range(2)] == [1, 4]
    assert dl.byte_offset == 0


def test_copy_true_sets_is_copied_in_versioned_capsule():
    t = cowstore.arange(12, dtype="float32").reshape(3, 4).T
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    m = capsule_struct(cap)
    assert m.flags & DLPACK_FLAG_IS_COPIED
    assert not m.flags & DLPACK_FLAG_READ_ONLY
    assert m.dl_tensor.data != t.data_ptr()
    assert not t.is_pinned()  # the consumer owns a copy; t is untouched
    # an eager contiguous copy
    assert [m.dl_tensor.strides[i] for i in range(2)] == [3, 1]
    u = cowstore.from_dlpack(cap)
    assert u.tolist() == t.tolist()
    assert not u.is_pinned()  # IS_COPIED: owned memory, shared lazily
    c = u.lazy_clone()
    assert c.shares_data(u)


def test_copy_false_and_default_are_the_tensor_memory():
    t = cowstore.arange(6, dtype="float64")
    for kw in (dict(), dict(copy=False), dict(copy=None)):
        cap = t.__dlpack__(max_version=(1, 0), **kw)
        m = capsule_struct(cap)
        assert m.flags & DLPACK_FLAG_IS_COPIED == 0
        assert m.dl_tensor.data == t.data_ptr()
        assert t.is_pinned()
        del cap, m
        collect()
        assert not t.is_pinned()


def test_copy_true_legacy_capsule():
    t = cowstore.arange(6, dtype="int32")
    cap = t.__dlpack__(copy=True)
    assert capsule_name(cap) == "dltensor"
    m = capsule_struct(cap)
    assert m.dl_tensor.data != t.data_ptr()
    assert not t.is_pinned()
    n = np.from_dlpack(type("P", (), {
        "__dlpack__": lambda self, stream=None: cap,
        "__dlpack_device__": lambda self: (1, 0)})())
    t.fill_(0)
    assert n.tolist() == [0, 1, 2, 3, 4, 5]


def test_read_only_versioned_capsule_sets_the_flag():
    t = cowstore.arange(6, dtype="float64")
    cap = t.__dlpack__(max_version=(1, 0), read_only=True)
    m = capsule_struct(cap)
    assert m.flags & DLPACK_FLAG_READ_ONLY
    assert not m.flags & DLPACK_FLAG_IS_COPIED
    assert m.dl_tensor.data == t.data_ptr()  # an O(1) snapshot
    assert not t.is_pinned()


# ---------------------------------------------------------------------------
# The buffer protocol

def test_non_contiguous_request_without_strides():
    t = cowstore.arange(12, dtype="float32").reshape(3, 4).T
    assert not t.is_contiguous()
    for flags in (PyBUF_SIMPLE, PyBUF_ND, PyBUF_ND | PyBUF_FORMAT,
                  PyBUF_C_CONTIGUOUS, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT):
        with pytest.raises(BufferError) as e:
            Buffer(t, flags)
        message(e)
    assert not t.is_pinned()
    # the strided requests are served
    with Buffer(t, PyBUF_STRIDES) as v:
        assert v.ndim == 2
        assert [v.strides[i] for i in range(2)] == [4, 16]
        assert v.buf == t.data_ptr()
    with Buffer(t, PyBUF_FULL_RO) as v:
        assert v.format == b"f"
        assert v.readonly


def test_fortran_contiguous_request_of_a_transpose():
    # Assumption (the spec names only requests without strides): a
    # PyBUF_F_CONTIGUOUS request comes with strides, and the transpose of a
    # contiguous matrix is Fortran-contiguous, so it is served, as NumPy
    # serves it for a.T.
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    with Buffer(a, PyBUF_F_CONTIGUOUS) as v:  # NumPy's behaviour
        assert v.len == 48
    t = cowstore.arange(12, dtype="float32").reshape(3, 4).T
    with Buffer(t, PyBUF_F_CONTIGUOUS) as v:
        assert v.len == 48
        assert [v.strides[i] for i in range(2)] == [4, 16]
    with pytest.raises(BufferError):
        Buffer(t, PyBUF_C_CONTIGUOUS)


def test_contiguous_requests_are_served():
    t = cowstore.arange(6, dtype="int64").reshape(2, 3)
    with Buffer(t, PyBUF_SIMPLE) as v:
        assert v.len == 48
        assert v.readonly
        assert v.buf == t.data_ptr()
        assert v.format is None
    with Buffer(t, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) as v:
        assert v.format == b"q"
        assert [v.shape[i] for i in range(2)] == [2, 3]
    with Buffer(t, PyBUF_SIMPLE | PyBUF_WRITABLE) as v:
        assert not v.readonly
        assert t.is_pinned()
    collect()
    assert not t.is_pinned()
    with Buffer(t, PyBUF_RECORDS) as v:
        assert not v.readonly
        assert t.is_pinned()
    assert not t.is_pinned()


def test_writable_request_non_contiguous_without_strides():
    t = cowstore.arange(12, dtype="int32").reshape(3, 4)[:, ::2]
    with pytest.raises(BufferError) as e:
        Buffer(t, PyBUF_SIMPLE | PyBUF_WRITABLE)
    message(e)
    assert not t.is_pinned()


def test_bfloat16_buffer_has_no_format():
    t = cowstore.zeros((4,), dtype="bfloat16")
    with pytest.raises(BufferError) as e:
        memoryview(t)
    message(e)
    with Buffer(t, PyBUF_SIMPLE) as v:  # bytes only, no format asked for
        assert v.len == 8
        assert v.format is None
    with pytest.raises(BufferError):
        Buffer(t, PyBUF_FORMAT)


def test_from_buffer_errors():
    # a dtype that does not divide the length
    with pytest.raises(ValueError) as e:
        cowstore.from_buffer(bytearray(10), dtype="float32")
    message(e)
    # a shape that does not match the length
    with pytest.raises(ValueError):
        cowstore.from_buffer(bytearray(16), dtype="float32", shape=(3,))
    # reinterpreting a non-contiguous buffer
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    with pytest.raises((ValueError, BufferError)):
        cowstore.from_buffer(a, dtype="int32")
    # not a buffer
    with pytest.raises(TypeError):
        cowstore.from_buffer(3.5)
    with pytest.raises(TypeError):
        cowstore.from_buffer("text")


def test_from_buffer_misaligned_is_refused():
    raw = bytearray(17)
    mv = memoryview(raw)[1:]
    with pytest.raises(ValueError) as e:
        cowstore.from_buffer(mv, dtype="float64", shape=(2,))
    message(e)


# ---------------------------------------------------------------------------
# Tensor operations

def test_dtype_mismatch_in_binary_op():
    a = cowstore.zeros((2,), dtype="float32")
    b = cowstore.zeros((2,), dtype="int64")
    # Operators promote (NumPy's promote_types, docs/tensor.md); an
    # in-place op refuses a result its dtype cannot take by same_kind,
    # naming both dtypes; equal() takes one dtype.
    assert (a + b).dtype == "float64" and (a * b).dtype == "float64"
    with pytest.raises(TypeError) as e:
        b += a
    msg = message(e)
    assert "float64" in msg and "int64" in msg and "same_kind" in msg
    with pytest.raises(TypeError) as e:
        a.equal(b)
    msg = message(e)
    assert "float32" in msg and "int64" in msg


def test_shape_mismatch_in_binary_op():
    a = cowstore.zeros((2, 3))
    b = cowstore.zeros((4,))
    with pytest.raises(ValueError) as e:
        a + b
    msg = message(e)
    assert "2" in msg and "4" in msg
    with pytest.raises(ValueError):
        a *= b
    # in place never changes the destination's shape
    c = cowstore.zeros((3,))
    with pytest.raises(ValueError):
        c += a


def test_unsupported_operand():
    a = cowstore.zeros((2,))
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        a * None


def test_bool_negation_refused():
    t = cowstore.zeros((2,), dtype="bool")
    with pytest.raises(TypeError) as e:
        -t
    message(e)


def test_write_to_expanded_view_refused():
    t = cowstore.zeros((1, 3), dtype="float32")
    e_ = t.expand(4, 3)
    with pytest.raises(ValueError) as e:
        e_.fill_(1)
    message(e)
    with pytest.raises(ValueError):
        e_ += 1
    assert t.tolist() == [[0.0, 0.0, 0.0]]


def test_view_impossible():
    t = cowstore.arange(12).reshape(3, 4).T
    with pytest.raises(ValueError) as e:
        t.view(12)
    message(e)
    with pytest.raises(ValueError):
        cowstore.arange(12).view(5, 3)
    with pytest.raises(ValueError):
        cowstore.arange(12).reshape(5, 2)


def test_index_errors():
    t = cowstore.arange(12).reshape(3, 4)
    with pytest.raises(IndexError) as e:
        t[3]
    message(e)
    with pytest.raises(IndexError):
        t[0, 4]
    with pytest.raises(IndexError):
        t[0, 0, 0]
    with pytest.raises(IndexError):
        t.sum(dim=2)
    with pytest.raises(IndexError):
        t.transpose(0, 2)
    with pytest.raises((IndexError, ValueError)):
        t.permute(0, 0)
    with pytest.raises((IndexError, ValueError)):
        t[..., ...]
    with pytest.raises((TypeError, IndexError)):
        t["a"]
    with pytest.raises(IndexError):   # t[::-1] is a copy (issue 39)
        t[::-1] = 0
    with pytest.raises((ValueError, IndexError)):
        t[::0]


def test_len_of_zero_dim():
    with pytest.raises(TypeError):
        len(cowstore.zeros(()))


def test_item_of_many_elements():
    with pytest.raises(ValueError) as e:
        cowstore.zeros((2,)).item()
    message(e)


def test_negative_shape():
    with pytest.raises(ValueError) as e:
        cowstore.zeros((2, -1))
    message(e)


def test_too_many_dimensions():
    with pytest.raises((IndexError, ValueError)) as e:
        cowstore.zeros((1,) * 17)
    message(e)


def test_overflowing_shape():
    with pytest.raises((OverflowError, MemoryError)) as e:
        cowstore.empty((1 << 40, 1 << 40), dtype="float64")
    message(e)


def test_memory_limit_raises_memory_error():
    collect()
    old = cowstore.memory_limit()
    try:
        cowstore.set_memory_limit(cowstore.memory_stats()["live_bytes"] +
                                  (1 << 20))
        with pytest.raises(MemoryError) as e:
            cowstore.zeros((1 << 20,), dtype="float64")  # 8 MiB
        assert "limit" in message(e).lower()
        # under the budget works
        small = cowstore.zeros((1024,), dtype="float64")
        # a write that must copy is an allocation too
        big = cowstore.zeros((100_000,), dtype="float32")  # 400 KB
        c = big.lazy_clone()
        cowstore.set_memory_limit(cowstore.memory_stats()["live_bytes"] + 100)
        with pytest.raises(MemoryError):
            c.fill_(1)
        cowstore.set_memory_limit(old)
        # the failed write changed nothing
        assert c.shares_data(big)
        assert c.sum().item() == 0.0
        del small
    finally:
        cowstore.set_memory_limit(old)
    assert cowstore.memory_limit() == old


def test_bad_modes():
    with pytest.raises(ValueError) as e:
        cowstore.set_reshape_mode("sometimes")
    message(e)
    with pytest.raises(ValueError):
        cowstore.set_shadow_policy("loud")
    with pytest.raises(ValueError):
        with cowstore.reshape_mode("never"):
            pass


def test_copy_from_unconvertible():
    t = cowstore.zeros((2,))
    with pytest.raises((TypeError, ValueError)):
        t.copy_(object())
    with pytest.raises(ValueError):
        t.copy_([1.0, 2.0, 3.0])
    assert t.tolist() == [0.0, 0.0]


def test_tensor_from_ragged_list():
    with pytest.raises((ValueError, TypeError)):
        cowstore.tensor([[1, 2], [3]])


# ---------------------------------------------------------------------------
# Errors name the function and the argument the user called.

def test_from_dlpack_device_errors_name_from_dlpack_and_device():
    a = np.zeros(3)
    with pytest.raises(BufferError,
                       match=r"^from_dlpack: device 'cuda' is not available"):
        cowstore.from_dlpack(a, device="cuda")
    with pytest.raises(BufferError, match=r"^from_dlpack: device \(2, 0\)"):
        cowstore.from_dlpack(a, device=(2, 0))
    with pytest.raises(BufferError, match=r"^from_dlpack: device \(1, 2\*\*70"
                       r"|^from_dlpack: device \(1, 1180591620717411303424\)"):
        cowstore.from_dlpack(a, device=(1, 2**70))
    for bad in (3, (1,), ("1", 0), "CPU "):
        with pytest.raises((TypeError, BufferError),
                           match=r"^from_dlpack: device "):
            cowstore.from_dlpack(a, device=bad)
    for ok in (None, "cpu", (1, 0)):
        assert cowstore.from_dlpack(a, device=ok).shape == (3,)


def test_dlpack_keyword_errors_name_dlpack_and_the_keyword():
    t = cowstore.zeros(3)
    with pytest.raises(TypeError, match=r"^__dlpack__: dl_device is None"):
        t.__dlpack__(dl_device="cpu")
    with pytest.raises(TypeError, match=r"^__dlpack__: dl_device is None"):
        t.__dlpack__(dl_device=(1, "0"))
    with pytest.raises(TypeError, match=r"^__dlpack__: max_version is None"):
        t.__dlpack__(max_version=("1", 0))
    with pytest.raises(TypeError, match=r"^__dlpack__: max_version is None"):
        t.__dlpack__(max_version=1)


@pytest.mark.parametrize("call, prefix", [
    (lambda: cowstore.zeros(3).sum(dim="0"), "sum: dim is an int"),
    (lambda: cowstore.zeros(3).sum(dim=2**70), "sum: dim"),
    (lambda: cowstore.zeros((2, 3)).transpose(0, "1"),
     "transpose: dim1 is an int"),
    (lambda: cowstore.zeros((2, 3)).transpose(1.0, 0),
     "transpose: dim0 is an int"),
    (lambda: cowstore.zeros((2, 3)).unsqueeze("0"), "unsqueeze: dim"),
    (lambda: cowstore.zeros((2, 1)).squeeze(1.5), "squeeze: dim"),
    (lambda: cowstore.zeros("3"), "zeros: shape is an int or a sequence"),
    (lambda: cowstore.empty((2, "3")), "empty: each entry of shape is an int"),
    (lambda: cowstore.full((2, 2**64), 1), "full: each entry of shape"),
    (lambda: cowstore.zeros(2, dtype="float31"), "zeros: unknown dtype"),
    (lambda: cowstore.tensor([1], dtype="float31"),
     "cowstore.tensor: unknown dtype"),
    (lambda: cowstore.arange("4"), "arange: n is an int"),
    (lambda: cowstore.arange(3, dtype="x"), "arange: unknown dtype"),
    (lambda: cowstore.zeros(6).reshape(2, "3"), "reshape: each entry of shape"),
    (lambda: cowstore.zeros(6).view("6"), "view: shape"),
    (lambda: cowstore.zeros(1).expand(None), "expand: sizes"),
    (lambda: cowstore.zeros((2, 3)).permute(0, "1"), "permute: each entry of dims"),
    (lambda: cowstore.from_buffer(b"1234", dtype="x"), "from_buffer: unknown"),
    (lambda: cowstore.from_buffer(b"1234", shape=(1, "4")),
     "from_buffer: each entry of shape"),
    (lambda: cowstore.zeros(2).copy_("ab"), "copy_: src: "),
    (lambda: cowstore.asarray({}), "asarray: obj: "),
    (lambda: cowstore.zeros(2).__setitem__(0, "a"), "__setitem__: value: "),
])
def test_argument_errors_name_the_function_and_argument(call, prefix):
    with pytest.raises((TypeError, ValueError, OverflowError, IndexError)) as e:
        call()
    assert message(e).startswith(prefix), message(e)


# ---------------------------------------------------------------------------
# Sizes and strides the module multiplies (issue 36): each product checked,
# with the C API's errors.

def test_nested_sequences_whose_element_count_overflows():
    # The element count wraps to 0 in 64 bits: a heap overflow before.
    with pytest.raises(OverflowError, match="cowstore.tensor: the element "
                       "count of shape .1048576, 17592186044416. overflows"):
        cowstore.tensor([range(2**44)] * 2**20)
    with pytest.raises(OverflowError, match="element count"):
        cowstore.tensor([[range(2**32)] * 2**16] * 2**16)
    with pytest.raises(MemoryError):
        cowstore.tensor([range(2**40)] * 2**20)    # 2**60 elements


def test_nested_sequence_items_made_on_demand():
    # A range makes the items it returns: the shape walk must hold them.
    t = cowstore.tensor([range(1000, 1003), range(2000, 2003)])
    assert t.tolist() == [[1000, 1001, 1002], [2000, 2001, 2002]]
    assert cowstore.tensor(range(10**6, 10**6 + 2)).tolist() == [10**6,
                                                                 10**6 + 1]


def test_byte_strides_of_empty_tensors_never_wrap():
    t = cowstore.empty((0, 2**63 - 1))
    assert t.stride() == (2**63 - 1, 1)
    # 4 * (2**63 - 1) bytes: a stride no element applies, saturated as
    # stride() is; (-4, 4) before (a wrapped product).
    assert t.strides == (2**63 - 1, 4)
    assert memoryview(t).strides == (2**63 - 1, 4)
    assert t.nbytes == 0 and t.numel() == 0 and t.tolist() == []
    with pytest.raises(ValueError):      # NumPy's own limit
        np.asarray(t)
    u = cowstore.zeros((3, 0, 2**62), dtype="complex128")
    assert all(0 <= s <= 2**63 - 1 for s in u.strides)
    with pytest.raises(ValueError):
        u.numpy()
    assert cowstore.zeros((3, 0, 5)).numpy().shape == (3, 0, 5)


def test_from_buffer_shape_products_are_checked():
    with pytest.raises(OverflowError, match="from_buffer: the element count"):
        cowstore.from_buffer(b"1234", dtype="int32", shape=(2**62, 2**62))
    with pytest.raises(OverflowError, match="from_buffer: shape .* exceeds"):
        cowstore.from_buffer(b"1234", dtype="int32", shape=(2**61, 2))
    with pytest.raises(ValueError, match="from_buffer: size -4 at dim 1"):
        cowstore.from_buffer(b"1234", dtype="int32", shape=(1, -4))
    with pytest.raises(ValueError, match="from_buffer: shape"):
        cowstore.from_buffer(b"1234", dtype="int32", shape=(2**61, 0, 1))
    t = cowstore.from_buffer(b"", dtype="int32", shape=(2**62, 0, 2**62))
    assert t.shape == (2**62, 0, 2**62) and t.numel() == 0


def test_repr_of_an_empty_tensor_with_huge_sizes():
    t = cowstore.zeros((2**62, 0))
    assert repr(t) == "tensor([], shape=(4611686018427387904, 0), " \
        "dtype=float32)"
