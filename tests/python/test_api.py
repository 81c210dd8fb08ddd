"""The Python API of docs/python.md: constructors, attributes, indexing,
views, ops, sum, reshape modes and their warnings, functional(), stats and
the allocator's budget."""
import threading
import warnings

import numpy as np
import pytest

import cowstore
from conftest import (ALL_DTYPES, ITEMSIZE, NUMPY_DTYPES, addr, collect,
                      sample, to_numpy_values)


# ---------------------------------------------------------------------------
# Module contents and constructors

def test_dtypes_tuple():
    assert isinstance(cowstore.dtypes, tuple)
    assert set(cowstore.dtypes) == set(ALL_DTYPES)


def test_exceptions():
    assert issubclass(cowstore.AliasingWarning, UserWarning)
    assert issubclass(cowstore.AliasingError, RuntimeError)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_constructors(dtype):
    z = cowstore.zeros((2, 3), dtype=dtype)
    assert z.shape == (2, 3) and z.dtype == dtype
    assert z.itemsize == ITEMSIZE[dtype]
    assert z.nbytes == 6 * ITEMSIZE[dtype]
    assert all(v == 0 for row in z.tolist() for v in row)
    e = cowstore.empty((4,), dtype=dtype)
    assert e.shape == (4,) and e.dtype == dtype
    f = cowstore.full((3,), 1, dtype=dtype)
    assert f.tolist() == ([True] * 3 if dtype == "bool" else [1, 1, 1])
    if dtype != "bool":
        assert cowstore.arange(5, dtype=dtype).tolist() == [0, 1, 2, 3, 4]


def test_default_dtypes():
    assert cowstore.zeros((1,)).dtype == "float32"
    assert cowstore.empty((1,)).dtype == "float32"
    assert cowstore.full((1,), 2.5).dtype == "float32"
    assert cowstore.arange(3).dtype == "int64"


def test_tensor_from_nested_sequences():
    t = cowstore.tensor([[1, 2, 3], [4, 5, 6]], dtype="int16")
    assert t.shape == (2, 3) and t.dtype == "int16"
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
    f = cowstore.tensor([0.5, -1.25], dtype="float64")
    assert f.tolist() == [0.5, -1.25]
    c = cowstore.tensor([1 + 2j, 3], dtype="complex64")
    assert c.tolist() == [1 + 2j, 3 + 0j]
    b = cowstore.tensor([True, False], dtype="bool")
    assert b.tolist() == [True, False]
    s = cowstore.tensor(7, dtype="int32")
    assert s.shape == () and s.item() == 7
    e = cowstore.tensor([], dtype="float32")
    assert e.shape == (0,)


def test_tensor_infers_dtype_like_numpy():
    # Assumption (spec: dtype=None): inferred as NumPy infers it.
    assert cowstore.tensor([1, 2]).dtype == "int64"
    assert cowstore.tensor([1.0, 2]).dtype == "float64"
    assert cowstore.tensor([True, False]).dtype == "bool"
    assert cowstore.tensor([1j]).dtype == "complex128"


def test_tensor_copies():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = cowstore.tensor(a)
    assert t.dtype == "float32" and t.shape == (2, 3)
    assert t.data_ptr() != addr(a)
    a[0, 0] = 9
    assert t[0, 0].item() == 0.0
    u = cowstore.tensor(t)
    assert not u.shares_storage(t) and not u.shares_data(t)
    u.fill_(1)
    assert t[1, 2].item() == 5.0
    b = cowstore.tensor(bytearray(b"\x01\x02"))
    assert b.dtype == "uint8" and b.tolist() == [1, 2]
    d = cowstore.tensor(a, dtype="int64")
    assert d.dtype == "int64" and d.tolist() == [[9, 1, 2], [3, 4, 5]]


def test_asarray():
    t = cowstore.arange(3)
    assert cowstore.asarray(t) is t
    a = np.arange(4, dtype=np.int16)
    u = cowstore.asarray(a)
    assert u.data_ptr() == addr(a)
    b = b"\x00\x00\x80\x3f"
    v = cowstore.asarray(b)
    assert v.is_read_only()
    assert v.dtype == "uint8" and v.numel() == 4


def test_from_buffer_reinterprets():
    ba = bytearray(np.arange(6, dtype=np.float32).tobytes())
    t = cowstore.from_buffer(ba, dtype="float32")
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert not t.is_read_only()
    assert t.is_pinned()  # a writable buffer is aliased, pinned for life
    u = cowstore.from_buffer(ba, dtype="float32", shape=(2, 3))
    assert u.shape == (2, 3) and u.tolist() == [[0.0, 1.0, 2.0],
                                                [3.0, 4.0, 5.0]]
    u[1, 2] = -1
    assert np.frombuffer(ba, dtype=np.float32)[5] == -1.0
    assert t[5].item() == -1.0
    r = cowstore.from_buffer(ba, dtype="int32", read_only=True)
    assert r.is_read_only()
    b = cowstore.from_buffer(ba)  # a bytearray's format is "B"
    assert b.dtype == "uint8" and b.numel() == 24


def test_from_buffer_takes_layout_from_the_buffer():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)[:, 1:, ::2]
    t = cowstore.from_buffer(a)
    assert t.shape == a.shape
    assert t.strides == a.strides
    assert t.data_ptr() == addr(a)
    assert t.tolist() == a.tolist()
    mv = memoryview(np.arange(8, dtype=np.float64))[::3]
    u = cowstore.from_buffer(mv)
    assert u.dtype == "float64" and u.tolist() == [0.0, 3.0, 6.0]


# ---------------------------------------------------------------------------
# Attributes

def test_attributes_match_numpy():
    t = cowstore.zeros((2, 3, 4), dtype="float64")
    a = np.zeros((2, 3, 4))
    assert t.shape == a.shape == (2, 3, 4)
    assert isinstance(t.shape, tuple)
    assert t.ndim == 3
    assert t.strides == a.strides == (96, 32, 8)
    assert t.stride() == (12, 4, 1)
    assert t.itemsize == 8
    assert t.nbytes == 192
    assert t.offset == 0
    assert t.numel() == 24
    assert len(t) == 2
    assert t.is_contiguous()
    assert not t.is_pinned()
    assert not t.is_read_only()
    v = t[1, 1:, ::2]
    r = a[1, 1:, ::2]
    assert v.shape == r.shape and v.strides == r.strides
    assert v.offset == 12 + 4
    assert v.stride() == (4, 2)
    assert not v.is_contiguous()
    assert v.data_ptr() == t.data_ptr() + 16 * 8


def test_zero_dim():
    t = cowstore.full((), 3, dtype="int32")
    assert t.shape == () and t.ndim == 0
    assert t.strides == () and t.stride() == ()
    assert t.numel() == 1
    assert t.item() == 3
    assert t.tolist() == 3
    with pytest.raises(TypeError, match=r"^len\(\) of unsized object$"):
        len(t)


def test_zero_size():
    t = cowstore.zeros((3, 0, 2), dtype="int8")
    assert t.numel() == 0 and t.nbytes == 0
    assert len(t) == 3
    assert t.tolist() == [[], [], []]
    assert t.sum().item() == 0
    t.fill_(1)
    t += 1
    assert t.clone().shape == (3, 0, 2)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_item_types(dtype):
    t = cowstore.tensor(sample(dtype, (1,)))
    v = t.item()
    expected = sample(dtype, (1,)).item()
    assert v == expected
    assert type(v) is type(expected)  # bool, int, float or complex
    assert t.reshape(1, 1).item() == expected


def test_item_bfloat16():
    t = cowstore.full((), 1.5, dtype="bfloat16")
    assert t.item() == 1.5 and type(t.item()) is float
    assert cowstore.full((2,), 3.0, dtype="bfloat16").tolist() == [3.0, 3.0]


def test_repr():
    t = cowstore.tensor([[0.0, 1.0], [2.0, 3.0]], dtype="float32")
    assert repr(t) == "tensor([[0.0, 1.0], [2.0, 3.0]], dtype=float32)"
    big = cowstore.zeros((1000, 1000), dtype="int16")
    r = repr(big)
    assert "1000" in r and "int16" in r
    assert len(r) < 200
    assert "int64" in repr(cowstore.arange(3))
    assert str(cowstore.arange(3))


def test_shares_storage_and_data():
    t = cowstore.arange(10, dtype="float32")
    v = t[2:5]
    c = t.lazy_clone()
    e = t.clone()
    assert v.shares_storage(t) and t.shares_storage(v)
    assert not c.shares_storage(t)
    assert c.shares_data(t)
    assert not e.shares_storage(t) and not e.shares_data(t)
    c.fill_(0)
    assert not c.shares_data(t)


def test_lazy_clone_is_o1_and_counted():
    t = cowstore.zeros((1 << 20,), dtype="float32")
    cowstore.reset_stats()
    c = t.lazy_clone()
    s = cowstore.stats()
    assert s["lazy_clones"] == 1
    assert s["bytes_copied"] == 0
    assert c.data_ptr() == t.data_ptr()
    c[0] = 1
    s = cowstore.stats()
    assert s["materialize_copies"] + s["materialize_steals"] == 1
    assert t[0].item() == 0.0 and c[0].item() == 1.0


def test_stats_and_reset():
    cowstore.reset_stats()
    s = cowstore.stats()
    for k in ("lazy_clones", "ctx_wraps", "eager_fallbacks",
              "materialize_copies", "materialize_steals", "bytes_copied",
              "external_copies", "pinned_clones", "snapshot_copies",
              "snapshot_persists"):
        assert s[k] == 0, k
    t = cowstore.arange(100, dtype="int64")
    c = t.lazy_clone()
    c += 1  # copies: t still shares
    t += 1  # t holds the last share: steals
    s = cowstore.stats()
    assert s["lazy_clones"] == 1
    assert s["ctx_wraps"] == 1
    assert s["materialize_copies"] == 1
    assert s["bytes_copied"] >= 800
    assert s["materialize_steals"] == 1
    arr = t.numpy()
    t.lazy_clone()
    assert cowstore.stats()["pinned_clones"] == 1
    assert cowstore.stats()["eager_fallbacks"] == 1
    del arr


def test_memory_stats_keys():
    m = cowstore.memory_stats()
    for k in ("allocs", "frees", "failures", "live_allocs", "live_bytes",
              "total_bytes"):
        assert isinstance(m[k], int) and m[k] >= 0


def test_retained_and_trim():
    jemalloc = cowstore.memory_stats()["allocator"] == "jemalloc"
    t = cowstore.zeros((1 << 22,))  # 16 MiB, written: resident pages
    t.fill_(1)
    del t
    collect()
    if jemalloc:
        # The freed pages stay mapped for reuse until trimmed.
        assert cowstore.retained_bytes() >= 1 << 24
    cowstore.trim()
    assert cowstore.retained_bytes() == 0
    if jemalloc:
        cowstore.set_retain_limit(256 << 20)  # COW_RETAIN_LIMIT_MAX
    else:
        # The system allocator (sanitizer builds) keeps no cap.
        with pytest.raises(NotImplementedError, match="retain"):
            cowstore.set_retain_limit(256 << 20)


def test_memory_limit_roundtrip():
    old = cowstore.memory_limit()
    try:
        cowstore.set_memory_limit(1 << 40)
        assert cowstore.memory_limit() == 1 << 40
        cowstore.set_memory_limit(None)
        assert cowstore.memory_limit() is None
        cowstore.zeros((1 << 20,))
    finally:
        cowstore.set_memory_limit(old)
    assert cowstore.memory_limit() == old


# ---------------------------------------------------------------------------
# Indexing and views (NumPy as the reference)

REF = np.arange(60, dtype=np.int64).reshape(3, 4, 5)


def ref_tensor():
    return cowstore.arange(60, dtype="int64").reshape(3, 4, 5)


@pytest.mark.parametrize("index", [
    1, -1, (1, 2), (0, 1, 2), (2, -1, -2), slice(1, 3), slice(None, None, 2),
    (slice(None), 1), (Ellipsis, 3), (0, Ellipsis, slice(1, 4)),
    (slice(0, 3, 2), slice(1, None), slice(None, 4, 3)), None,
    (None, 1), (slice(None), None, 2), (1, Ellipsis, None), Ellipsis,
    slice(5, 10), slice(-2, None), (slice(1, 1),), (slice(None, -1),),
])
def test_indexing_matches_numpy(index):
    t = ref_tensor()
    v = t[index]
    r = REF[index]
    if isinstance(r, np.integer):
        r = np.array(r)
    assert v.shape == r.shape
    assert v.tolist() == r.tolist()
    if r.size > 1:
        assert v.shares_storage(t)
        assert v.data_ptr() == t.data_ptr() + (addr(r) - addr(REF))


@pytest.mark.parametrize("index", [1, (slice(None), 2), (Ellipsis, 1),
                                   (slice(0, 3, 2), slice(1, 3)), Ellipsis,
                                   (0, 0, 0)])
@pytest.mark.parametrize("value", ["scalar", "tensor", "numpy", "list"])
def test_setitem_matches_numpy(index, value):
    t = ref_tensor()
    r = REF.copy()
    shape = r[index].shape
    if value == "scalar":
        val, rval = -3, -3
    else:
        rval = -np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        val = {"tensor": lambda: cowstore.tensor(rval),
               "numpy": lambda: rval,
               "list": lambda: rval.tolist()}[value]()
    t[index] = val
    r[index] = rval
    assert t.tolist() == r.tolist()


def test_setitem_broadcasts_and_converts():
    t = cowstore.zeros((2, 3), dtype="float32")
    t[:] = cowstore.tensor([1, 2, 3], dtype="int64")
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2
    t[1] = 0.5
    assert t.tolist() == [[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]


def test_setitem_on_a_lazy_clone_leaves_the_source():
    t = ref_tensor()
    c = t.lazy_clone()
    c[1, 2, 3] = 1000
    assert t[1, 2, 3].item() == REF[1, 2, 3]
    assert c[1, 2, 3].item() == 1000


def test_views():
    t = ref_tensor()
    assert t.T.tolist() == REF.T.tolist()
    assert t.transpose(0, 2).tolist() == REF.transpose(2, 1, 0).tolist()
    assert t.transpose(-1, 0).shape == (5, 4, 3)
    assert t.permute(1, 2, 0).tolist() == REF.transpose(1, 2, 0).tolist()
    assert t.permute(1, 2, 0).strides == REF.transpose(1, 2, 0).strides
    assert t.unsqueeze(1).shape == (3, 1, 4, 5)
    assert t.unsqueeze(-1).shape == (3, 4, 5, 1)
    assert t.unsqueeze(0).tolist() == [REF.tolist()]
    s = cowstore.zeros((1, 3, 1, 2))
    assert s.squeeze().shape == (3, 2)
    assert s.squeeze(0).shape == (3, 1, 2)
    assert s.squeeze(2).shape == (1, 3, 2)
    e = cowstore.arange(3).reshape(1, 3).expand(4, 3)
    assert e.shape == (4, 3)
    assert e.stride() == (0, 1)
    assert e.tolist() == [[0, 1, 2]] * 4
    for v in (t.T, t.transpose(0, 1), t.permute(2, 0, 1), t.unsqueeze(0),
              s.squeeze(), e):
        assert v.shares_storage(t) or v.shares_storage(s) or \
            v.shares_storage(e)


def test_T_of_matrix_and_vector():
    m = cowstore.arange(6).reshape(2, 3)
    assert m.T.shape == (3, 2)
    assert m.T.strides == (8, 24)
    assert cowstore.arange(4).T.shape == (4,)


def test_contiguous_and_clone():
    t = ref_tensor()
    assert t.contiguous() is t
    v = t.transpose(0, 2)
    c = v.contiguous()
    assert c.is_contiguous()
    assert not c.shares_storage(t)
    assert c.tolist() == v.tolist()
    k = t.clone()
    assert k.tolist() == t.tolist()
    assert not k.shares_data(t)


# ---------------------------------------------------------------------------
# Reshape, view and the reshape modes

def test_reshape_alias_mode_is_a_view():
    cowstore.set_reshape_mode("alias")
    assert cowstore.get_reshape_mode() == "alias"
    x = cowstore.zeros((4,), dtype="float32")
    y = x.reshape(2, 2)
    assert y.shares_storage(x)
    y.fill_(7)
    assert x.tolist() == [7.0] * 4


def test_reshape_lazy_copy_mode():
    cowstore.set_reshape_mode("lazy_copy")
    assert cowstore.get_reshape_mode() == "lazy_copy"
    x = cowstore.full((4,), 1, dtype="float32")
    cowstore.reset_stats()
    y = x.reshape(2, 2)
    assert not y.shares_storage(x)
    assert y.shares_data(x)
    assert cowstore.stats()["bytes_copied"] == 0
    y.fill_(7)
    assert x.tolist() == [1.0] * 4
    assert y.tolist() == [[7.0, 7.0], [7.0, 7.0]]


def test_view_always_aliases():
    for mode in ("alias", "lazy_copy", "warn"):
        with cowstore.reshape_mode(mode):
            x = cowstore.zeros((6,), dtype="int32")
            v = x.view(2, 3)
            assert v.shares_storage(x)
            v[1, 1] = 5
            assert x[4].item() == 5


def test_reshape_copies_when_strides_forbid_a_view():
    for mode in ("alias", "lazy_copy", "warn"):
        with cowstore.reshape_mode(mode):
            x = cowstore.arange(6).reshape(2, 3)
            y = x.T.reshape(6)
            assert y.tolist() == [0, 3, 1, 4, 2, 5]
            assert not y.shares_storage(x)
            y.fill_(0)
            assert x.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_reshape_results_match_numpy():
    a = np.arange(24).reshape(2, 3, 4)
    t = cowstore.arange(24).reshape(2, 3, 4)
    for shape in [(24,), (4, 6), (2, 12), (1, 24, 1), (2, 3, 2, 2)]:
        assert t.reshape(*shape).tolist() == a.reshape(shape).tolist()
        assert t.view(*shape).tolist() == a.reshape(shape).tolist()
    tt = t.permute(2, 0, 1)
    assert tt.reshape(4, 6).tolist() == \
        a.transpose(2, 0, 1).reshape(4, 6).tolist()


def test_reshape_mode_context_manager_is_per_thread():
    cowstore.set_reshape_mode("alias")
    seen = {}
    with cowstore.reshape_mode("lazy_copy"):
        x = cowstore.zeros((4,))
        assert not x.reshape(2, 2).shares_storage(x)

        def other():
            y = cowstore.zeros((4,))
            seen["other"] = y.reshape(2, 2).shares_storage(y)

        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert seen["other"] is True  # the other thread kept the process mode
    x = cowstore.zeros((4,))
    assert x.reshape(2, 2).shares_storage(x)
    assert cowstore.get_reshape_mode() == "alias"


def test_reshape_mode_context_manager_restores_on_error():
    cowstore.set_reshape_mode("alias")
    with pytest.raises(KeyError):
        with cowstore.reshape_mode("lazy_copy"):
            raise KeyError("x")
    x = cowstore.zeros((4,))
    assert x.reshape(4).shares_storage(x)


# ---------------------------------------------------------------------------
# The warn mode and the shadow policy

READS = {
    "sum": lambda x: x.sum().item(),
    "add": lambda x: (x + 0).tolist(),
    "tolist": lambda x: x.tolist(),
    "item": lambda x: x[0].item(),
    "repr": lambda x: repr(x),
    "clone": lambda x: x.clone().tolist(),
    "numpy_read_only": lambda x: x.numpy(read_only=True).tolist(),
    "bytes": lambda x: bytes(x),
    "equal": lambda x: x.equal(x),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_warn_mode_reports_reliance_on_aliasing(read):
    # y = x.reshape(...) in warn mode, write y, read x: the read's result
    # depends on reshape aliasing, whichever way x is read.
    cowstore.set_shadow_policy("warn_always")
    cowstore.set_reshape_mode("warn")
    x = cowstore.full((4,), 1, dtype="float32")
    y = x.reshape(2, 2)
    assert y.shares_storage(x)  # still the legacy alias
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to report yet
        y.fill_(7)
    with pytest.warns(cowstore.AliasingWarning) as rec:
        READS[read](x)  # read after y's write: relies on the alias
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cowstore.AliasingWarning)
        assert x.sum().item() == 28.0  # legacy results
    assert any("alias" in str(w.message).lower() for w in rec)


def test_warn_mode_with_context_manager_and_write_after_write():
    cowstore.set_shadow_policy("warn_always")
    with cowstore.reshape_mode("warn"):
        x = cowstore.zeros((6,), dtype="int32")
        v = x.view(2, 3)  # a view shares x's shadow: never reported
        u = x.reshape(3, 2)
        x += 1
        v += 1
        with pytest.warns(cowstore.AliasingWarning):
            u.fill_(5)  # write after another set's write
        with pytest.warns(cowstore.AliasingWarning):
            assert x.sum().item() == 30  # read after u's write


def test_warn_mode_silent_without_reliance():
    cowstore.set_shadow_policy("warn_always")
    cowstore.set_reshape_mode("warn")
    x = cowstore.arange(6, dtype="int64")
    y = x.reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.tolist() == [[0, 1, 2], [3, 4, 5]]  # reads only
        assert x.sum().item() == 15
        x += 1  # x's own set writes, x reads
        assert x.tolist() == [1, 2, 3, 4, 5, 6]


def aliasing_warnings(policy):
    """Under shadow @policy, three reads of x after a write through its
    warn-mode reshape: how many AliasingWarnings they gave (at least 1)."""
    cowstore.set_shadow_policy(policy)
    assert cowstore.get_shadow_policy() == policy
    cowstore.set_reshape_mode("warn")
    x = cowstore.zeros((4,))
    y = x.reshape(2, 2)
    y.fill_(1)
    with pytest.warns(cowstore.AliasingWarning) as rec:
        x.sum()
        x + 1
        x.sum()
    return len([w for w in rec
                if issubclass(w.category, cowstore.AliasingWarning)])


def test_warn_once_reports_once_per_storage():
    assert aliasing_warnings("warn_once") == 1


def test_warn_always_reports_every_access():
    assert aliasing_warnings("warn_always") >= 3


def test_error_policy_raises_aliasing_error():
    cowstore.set_shadow_policy("error")
    assert cowstore.get_shadow_policy() == "error"
    cowstore.set_reshape_mode("warn")
    x = cowstore.zeros((4,))
    y = x.reshape(2, 2)
    y.fill_(3)
    with pytest.raises(cowstore.AliasingError) as e:
        x.sum()
    assert str(e.value)
    x2 = cowstore.zeros((4,))
    y2 = x2.reshape(4)
    x2 += 1
    with pytest.raises(cowstore.AliasingError):
        y2.fill_(9)  # write after write: refused, nothing changes
    # the refused write changed no generation: x2's own read is fine
    cowstore.set_shadow_policy("warn_always")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x2.tolist() == [1.0] * 4


def test_warning_filter_error_turns_warning_into_exception():
    cowstore.set_shadow_policy("warn_always")
    cowstore.set_reshape_mode("warn")
    x = cowstore.zeros((4,))
    y = x.reshape(4)
    y += 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", cowstore.AliasingWarning)
        with pytest.raises(cowstore.AliasingWarning):
            x.sum()


def test_lazy_copy_mode_computes_what_warn_mode_warns_about():
    # docs/reshape.md's example: under lazy_copy, u is a copy of t before
    # the additions, so fill_(u) does not reach t.
    results = {}
    cowstore.set_shadow_policy("warn_always")
    for mode in ("alias", "lazy_copy", "warn"):
        with cowstore.reshape_mode(mode), warnings.catch_warnings():
            warnings.simplefilter("ignore", cowstore.AliasingWarning)
            t = cowstore.full((4,), 1, dtype="float32")
            u = t.reshape(2, 2)
            v = t.view(2, 2)
            t += 1
            v += 1
            u.fill_(7)
            results[mode] = t[0].item()
    assert results == {"alias": 7.0, "lazy_copy": 3.0, "warn": 7.0}


# ---------------------------------------------------------------------------
# functional()

def program():
    x = cowstore.arange(12, dtype="float32").reshape(3, 4)
    v = x[1]
    v += 10
    w = x.T[2:]
    w.fill_(-1)
    x *= 2
    return x.tolist(), v.tolist(), w.tolist(), x.sum().item()


def test_functional_gives_the_strided_results():
    expected = program()
    with cowstore.functional():
        got = program()
    assert got == expected


def test_functional_tensors_have_no_writable_memory():
    with cowstore.functional():
        t = cowstore.arange(4, dtype="float64")
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        with pytest.raises((NotImplementedError, BufferError)):
            t.numpy()  # writable: the values belong to the layer
        r = t.numpy(read_only=True)  # its current value, a snapshot
        assert r.tolist() == [0.0, 1.0, 2.0, 3.0]
    # after the block, tensors are plain again
    p = cowstore.arange(4, dtype="float64")
    a = p.numpy()
    a[0] = 5
    assert p[0].item() == 5.0
    # and a functional tensor still works outside the block
    t += 1
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_functional_is_per_thread():
    out = {}
    with cowstore.functional():
        def other():
            p = cowstore.arange(3, dtype="float32")
            a = p.numpy()  # a plain tensor: writable memory
            out["writable"] = a.flags.writeable
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert out["writable"] is True


# ---------------------------------------------------------------------------
# Ops and sum

def test_binary_ops_match_numpy():
    a = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    b = np.arange(4, dtype=np.int32) * 3
    ta, tb = cowstore.tensor(a), cowstore.tensor(b)
    assert (ta + tb).tolist() == (a + b).tolist()
    assert (ta * tb).tolist() == (a * b).tolist()
    assert (-ta).tolist() == (-a).tolist()
    assert (ta + 2).tolist() == (a + 2).tolist()
    assert (2 + ta).tolist() == (2 + a).tolist()
    assert (ta * 3).tolist() == (a * 3).tolist()
    assert (3 * ta).tolist() == (3 * a).tolist()
    r = ta + tb
    assert not r.shares_storage(ta) and r.is_contiguous()
    assert r.dtype == "int32"


def test_inplace_ops_match_numpy():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = cowstore.tensor(a)
    ptr = id(t)
    t += 1.5
    a += 1.5
    t *= cowstore.tensor([1.0, -1.0, 2.0], dtype="float64")
    a *= np.array([1.0, -1.0, 2.0])
    t += t
    a += a
    assert id(t) == ptr  # in place: the same object
    assert t.tolist() == a.tolist()


def test_integer_wraparound_and_bool_ops():
    t = cowstore.full((2,), 127, dtype="int8")
    t += 1
    assert t.tolist() == [-128, -128]
    u = cowstore.zeros((1,), dtype="uint8")
    assert (-(u + 1)).tolist() == [255]
    b = cowstore.tensor([True, False, False], dtype="bool")
    c = cowstore.tensor([True, True, False], dtype="bool")
    assert (b + c).tolist() == [True, True, False]  # or
    assert (b * c).tolist() == [True, False, False]  # and


def test_complex_ops():
    a = np.array([1 + 2j, -3 + 0.5j], dtype=np.complex64)
    t = cowstore.tensor(a)
    assert (t * t).tolist() == (a * a).tolist()
    assert (t + 1).tolist() == (a + 1).tolist()
    assert (-t).tolist() == (-a).tolist()


def test_float16_ops_round_like_numpy():
    a = (np.arange(16, dtype=np.float16) * np.float16(0.1))
    t = cowstore.tensor(a)
    assert (t * t).tolist() == (a * a).tolist()
    assert (t + t * 3).tolist() == (a + a * np.float16(3)).tolist()


@pytest.mark.parametrize("dtype,sum_dtype", [
    ("bool", "int64"), ("int8", "int64"), ("uint8", "int64"),
    ("int16", "int64"), ("int32", "int64"), ("int64", "int64"),
    ("uint16", "uint64"), ("uint32", "uint64"), ("uint64", "uint64"),
    ("float16", "float16"), ("bfloat16", "bfloat16"),
    ("float32", "float32"), ("float64", "float64"),
    ("complex64", "complex64"), ("complex128", "complex128")])
def test_sum_dtypes(dtype, sum_dtype):
    if dtype == "bfloat16":
        t = cowstore.full((2, 3), 1.5, dtype="bfloat16")
        expected = 9.0
    else:
        a = sample(dtype, (2, 3))
        t = cowstore.tensor(a)
        expected = a.sum().item()
    s = t.sum()
    assert s.shape == ()
    assert s.dtype == sum_dtype
    assert s.item() == expected


def test_sum_dim_keepdim():
    a = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    t = cowstore.tensor(a)
    for dim in range(-3, 3):
        assert t.sum(dim).tolist() == a.sum(dim).tolist()
        assert t.sum(dim=dim, keepdim=True).tolist() == \
            a.sum(dim, keepdims=True).tolist()
        assert t.sum(dim, True).shape == a.sum(dim, keepdims=True).shape
    assert t.sum().item() == a.sum()
    assert t.T[1:].sum(0).tolist() == a.T[1:].sum(0).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64",
                                   "complex128"])
def test_sum_is_numpys_bit_for_bit_up_to_8192_elements(dtype):
    """Contiguous sums are NumPy 1.24's pairwise sums (ops.h): the same
    bits for every length up to NumPy's 8192-element reduction chunk, on
    values of many magnitudes (where the order of additions shows)."""
    rng = np.random.default_rng(11)
    real = np.float32 if dtype in ("float32", "complex64") else np.float64
    for n in list(range(0, 300)) + [511, 1000, 4097, 8191, 8192]:
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
        if dtype.startswith("complex"):
            x = x + 1j * rng.standard_normal(n) * 10.0 ** rng.integers(
                -6, 6, n)
        a = x.astype(dtype)
        got = np.asarray(cowstore.tensor(a).sum().numpy())
        want = np.asarray(np.add.reduce(a), dtype=dtype)
        assert got.tobytes() == want.tobytes(), (dtype, n, got, want)


def test_long_sums_are_pairwise_over_the_whole_run():
    """Past 8192 elements NumPy adds its chunks' sums in order; cowstore
    keeps summing pairwise. Against an exact sum (math.fsum), cowstore's
    error stays within ops.h's bound, k = 26 + ceil(log2(n / 128))."""
    import math
    rng = np.random.default_rng(12)
    n = 1 << 20
    a = rng.uniform(0.5, 1.5, n).astype(np.float32)
    exact = math.fsum(a.astype(np.float64))
    got = cowstore.tensor(a).sum().item()
    k = 26 + math.ceil(math.log2(n / 128))
    u = 2.0 ** -24
    bound = k * u * exact / (1 - k * u)
    assert abs(got - exact) <= bound, (got, exact, bound)


def test_sum_over_no_elements():
    assert cowstore.zeros((0, 3)).sum().item() == 0
    assert cowstore.zeros((0, 3)).sum(0).tolist() == [0.0, 0.0, 0.0]


def test_fill_and_copy():
    t = cowstore.zeros((2, 3), dtype="int16")
    assert t.fill_(4) is t
    assert t.tolist() == [[4] * 3] * 2
    assert t.copy_(cowstore.arange(3)) is t  # broadcast, int64 -> int16
    assert t.tolist() == [[0, 1, 2]] * 2
    t.copy_(np.array([[1.9, -2.9, 3.5], [0, 0, 0]]))  # truncation
    assert t.tolist() == [[1, -2, 3], [0, 0, 0]]
    t.copy_([[7, 8, 9], [1, 2, 3]])
    assert t.tolist() == [[7, 8, 9], [1, 2, 3]]
    t.T.copy_(cowstore.zeros((3, 2), dtype="int16"))
    assert t.tolist() == [[0] * 3] * 2
    f = cowstore.zeros((2,), dtype="float32")
    f.fill_(0.1)
    assert f.tolist() == [np.float32(0.1).item()] * 2
    b = cowstore.zeros((3,), dtype="bool")
    b.copy_(np.array([0.0, 2.0, float("nan")]))
    assert b.tolist() == [False, True, True]


def test_copy_self_overlap():
    t = cowstore.arange(6)
    t[1:].copy_(t[:-1])  # overlapping: read as before the op
    assert t.tolist() == [0, 0, 1, 2, 3, 4]


def test_equal():
    a = cowstore.arange(6).reshape(2, 3)
    b = cowstore.tensor([[0, 1, 2], [3, 4, 5]], dtype="int64")
    assert a.equal(b)
    assert not a.equal(b.reshape(3, 2))
    assert not a.equal(b.reshape(6))
    b[0, 0] = 1
    assert not a.equal(b)
    n = cowstore.full((1,), float("nan"))
    assert not n.equal(n)
    assert a.T.equal(a.T.contiguous())


def test_tolist_matches_numpy_for_every_dtype():
    for dtype in NUMPY_DTYPES:
        a = sample(dtype, (2, 3))
        t = cowstore.tensor(a)
        assert t.tolist() == a.tolist(), dtype
        assert t.T.tolist() == a.T.tolist(), dtype
        np.testing.assert_array_equal(to_numpy_values(t[1]), a[1])


def test_numpy_method():
    t = cowstore.arange(6, dtype="float32").reshape(2, 3)
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 3)
    assert addr(a) == t.data_ptr()
    assert a.flags.writeable
    a[1, 1] = 40
    assert t[1, 1].item() == 40.0
    del a
    collect()
    r = t.T.numpy(read_only=True)
    assert not r.flags.writeable
    assert r.strides == (4, 12)
    assert addr(r) == t.data_ptr()


# ---------------------------------------------------------------------------
# Iteration, and Python ints beyond 64 bits (issue 36).

def test_zero_d_tensor_is_not_iterable():
    """As NumPy: iterating a 0-d array is a TypeError (it gave [])."""
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        list(np.array(5))
    for t in (cowstore.tensor(5), cowstore.zeros(()), cowstore.arange(3)[1]):
        # NumPy's message (issue 39; test_interop_edges.py, every dtype).
        with pytest.raises(TypeError, match="iteration over a 0-d array"):
            list(t)
        with pytest.raises(TypeError, match="iteration over a 0-d array"):
            iter(t)
    rows = list(cowstore.arange(6).reshape(2, 3))
    assert [r.tolist() for r in rows] == [[0, 1, 2], [3, 4, 5]]
    assert list(cowstore.zeros((0, 3))) == []


BIG_INTS = (2**63, 2**64, 2**64 + 1, 3**50, -2**63 - 1, -2**70, 2**100)
NUMPY_FLOATS = ("float16", "float32", "float64", "complex64", "complex128")


def numpy_full(value, dtype):
    """What NumPy stores for `value` in `dtype` (bool: any nonzero int)."""
    return np.full(2, value, dtype=np.dtype(dtype))


@pytest.mark.parametrize("dtype", NUMPY_FLOATS + ("bool",))
@pytest.mark.parametrize("value", BIG_INTS)
def test_big_ints_convert_to_float_dtypes_as_numpy(dtype, value):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16: inf
        want = numpy_full(value, dtype)
    t = cowstore.zeros(2, dtype=dtype)
    t.fill_(value)
    got = [cowstore.full(2, value, dtype=dtype), t,
           cowstore.tensor([value, value], dtype=dtype),
           cowstore.tensor([[value], [value]], dtype=dtype).reshape(2)]
    t2 = cowstore.zeros(2, dtype=dtype)
    t2[:] = value
    got.append(t2)
    for g in got:
        np.testing.assert_array_equal(to_numpy_values(g), want)
    if dtype != "bool":
        # scalar ops: the int converted to the tensor's dtype, as above
        z = cowstore.zeros(2, dtype=dtype)
        np.testing.assert_array_equal(to_numpy_values(z + value), want)
        z += value
        np.testing.assert_array_equal(to_numpy_values(z), want)
        one = cowstore.full(2, 1, dtype=dtype)
        np.testing.assert_array_equal(to_numpy_values(one * value), want)


def test_big_ints_in_bfloat16_through_float64():
    t = cowstore.full(3, 2**64, dtype="bfloat16")
    assert t.tolist() == [float(2**64)] * 3      # 2**64 is exact there
    assert cowstore.tensor([2**70, 1], dtype="bfloat16").tolist() == \
        [float(2**70), 1.0]


def test_ints_beyond_float64_overflow_as_numpy():
    with pytest.raises(OverflowError):
        np.full(1, 2**1024, dtype=np.float64)
    for call in (lambda: cowstore.full(1, 2**1024, dtype="float64"),
                 lambda: cowstore.zeros(1, dtype="float32").fill_(-2**1024),
                 lambda: cowstore.tensor([2**1024], dtype="float64"),
                 lambda: cowstore.zeros(1, dtype="float64") + 2**1024):
        with pytest.raises(OverflowError):
            call()


@pytest.mark.parametrize("dtype", ("int8", "int32", "int64", "uint8",
                                   "uint32", "uint64"))
def test_big_ints_into_integer_dtypes_raise_as_numpy(dtype):
    for value in (2**64, -2**63 - 1, 2**100):
        with pytest.raises(OverflowError):
            np.full(1, value, dtype=np.dtype(dtype))
        for call in (lambda: cowstore.full(1, value, dtype=dtype),
                     lambda: cowstore.zeros(1, dtype=dtype).fill_(value),
                     lambda: cowstore.tensor([value], dtype=dtype),
                     lambda: cowstore.zeros(1, dtype=dtype) + value):
            with pytest.raises(OverflowError):
                call()


def test_big_ints_without_a_dtype():
    """NumPy makes object arrays of these; cowstore has no object dtype
    and asks for one that holds them. Up to 2**64 - 1 uint64 does."""
    for data in ([2**64], [1.5, 2**64], 2**64, [[1], [-2**63 - 1]]):
        with pytest.raises(OverflowError, match="pass a dtype"):
            cowstore.tensor(data)
    assert cowstore.tensor([2**63, 2**64 - 1, 5], dtype="uint64").tolist() \
        == [2**63, 2**64 - 1, 5]
    assert cowstore.full(1, 2**64 - 1, dtype="uint64").tolist() == [2**64 - 1]
    with pytest.raises(OverflowError):
        cowstore.tensor([2**64], dtype="uint64")
    with pytest.raises(OverflowError):
        cowstore.tensor([2**63, 1.5], dtype="uint64")
