"""stub_sample.py DIR - a program that uses every public name of cowstore
(cowstore.__all__, and every public method and property of its classes),
written for `mypy --strict` against the package's stubs
(python/cowstore/__init__.pyi; tests/python/test_stubs.py and
package_check.py type-check it), and run by those tests too, so that the
types the stubs promise are the ones the module gives (the asserts below).
It writes one file into DIR.
"""
import copy
import os
import pickle
import sys
import warnings

import numpy as np

import cowstore
from cowstore import Tensor


def tensors() -> Tensor:
    z = cowstore.zeros((2, 3))
    e = cowstore.empty(4, dtype="int32")
    f = cowstore.full([2, 2], 1.5, dtype=np.float64)
    a = cowstore.arange(6)
    t = cowstore.tensor([[1, 2], [3, 4]], dtype="int64")
    n = cowstore.asarray(np.ones(3, dtype=np.float32))
    b = cowstore.from_buffer(b"\x01\x02\x03\x04", dtype="uint8", shape=(2, 2),
                             read_only=True)
    d = cowstore.from_dlpack(np.arange(3.0), device="cpu", copy=True,
                             read_only=False)
    assert z.shape == (2, 3) and e.dtype == "int32"
    assert f.tolist() == [[1.5, 1.5], [1.5, 1.5]]
    assert a.numel() == 6 and t.ndim == 2 and n.itemsize == 4
    assert b.is_read_only() and not d.is_pinned()
    assert cowstore.dtypes[0] == "bool" and isinstance(cowstore.__version__,
                                                       str)
    return a


def methods(a: Tensor) -> None:
    m = a.reshape(2, 3)
    v = m.view((3, 2)).expand(3, 2).transpose(0, 1).permute(1, 0)
    u = v.unsqueeze(0).squeeze(0).squeeze()
    assert u.shape == (3, 2) and m.T.shape == (3, 2)
    assert m.strides == (24, 8) and m.stride() == (3, 1) and m.offset == 0
    assert m.nbytes == 48 and m.data_ptr() != 0 and m.is_contiguous()
    assert not m.is_functional() and m.shares_storage(a)
    c = m.lazy_clone()
    assert c.shares_data(m) and not m.clone().shares_data(m)
    assert copy.copy(m).equal(copy.deepcopy(m).contiguous())
    total: bool | int | float | complex = m.sum().item()
    assert total == 15 and m.sum(dim=0, keepdim=True).shape == (1, 3)
    rows: list[list[int]] = m.tolist()
    assert rows[1] == [3, 4, 5]
    arr = m.numpy(read_only=True)
    assert int(arr.sum()) == 15
    cap = m.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0),
                       copy=False, read_only=True)
    assert cap is not None and m.__dlpack_device__() == (1, 0)
    r = m.__reduce__()
    assert r[0] is cowstore._rebuild and pickle.loads(pickle.dumps(m)).equal(m)
    w = cowstore.zeros(3).fill_(2).copy_(np.ones(3, dtype=np.float32))
    w += 1
    w *= 2.0
    s: Tensor = -(w + 1) * 2 + w
    s = 1 + s
    s = 2 * s
    assert s.tolist() == [-10.0, -10.0, -10.0]
    assert float(s[0]) == -10.0 and int(s[1]) == -10 and bool(s[2])
    assert len(s) == 3 and [x.item() for x in s] == [-10.0, -10.0, -10.0]
    s[0] = 7
    s[1:, ...] = cowstore.zeros(2)
    assert s[None, 0:2].shape == (1, 2)
    d: Tensor = (s - 1) / 2 // 1 % 3
    d -= 1
    d /= 2
    d //= 1
    d %= 5
    q: Tensor = cowstore.arange(3) ** 2
    q **= 1
    eq: Tensor = (q == q.clone()) != (q < 2)
    assert eq.tolist() == [False, False, True]
    mm: Tensor = cowstore.zeros((2, 3)).fill_(1) @ cowstore.zeros(3).fill_(1)
    assert mm.tolist() == [3.0, 3.0] and (q >= 0).tolist() == [True] * 3
    assert s[::-1].shape == (3,) and s[[0, 2]].shape == (2,)


def files(tmp: str) -> None:
    path = os.path.join(tmp, "sample.safetensors")
    cowstore.save_file({"a": cowstore.arange(4)}, path, {"k": "v"})
    loaded: dict[str, Tensor] = cowstore.load_file(path, pread=True)
    assert loaded["a"].tolist() == [0, 1, 2, 3]
    with cowstore.safe_open(path, pread=False) as f:
        assert f.keys() == ["a"] and f.metadata() == {"k": "v"}
        assert f.get_tensor("a").shape == (4,) and f.stats()["tensors"] >= 1
    f.close()
    snap: cowstore.Snapshot = cowstore.snapshot({"b": cowstore.arange(2)})
    assert snap.names == ("b",) and snap.count == 1 and len(snap) == 1
    assert snap.is_held("b") and snap.get("b").tolist() == [0, 1]
    job: cowstore.SaveJob = snap.save(path, None, mode="persist_first",
                                      keep=True)
    job.wait()
    assert job.done() and job.progress[0] == job.progress[1]
    job.cancel()
    snap.cancel()
    snap.release("b")
    snap.release()
    assert snap.stats()["tensors"] == 1
    for e in (cowstore.SafetensorError, cowstore.CancelledError,
              cowstore.ReleasedError, cowstore.AliasingError):
        assert issubclass(e, Exception)
    try:
        snap.get("b")
    except cowstore.ReleasedError:
        pass


def modes() -> None:
    before = cowstore.get_reshape_mode()
    cowstore.set_reshape_mode("warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cowstore.AliasingWarning)
        with cowstore.reshape_mode("lazy_copy"):
            assert cowstore.get_reshape_mode() == "lazy_copy"
    cowstore.set_reshape_mode(before)
    policy = cowstore.get_shadow_policy()
    cowstore.set_shadow_policy("warn_always")
    cowstore.set_shadow_policy(policy)
    with cowstore.functional():
        assert cowstore.zeros(1).is_functional()
    cowstore.reset_stats()
    assert cowstore.stats()["lazy_clones"] == 0
    assert isinstance(cowstore.memory_stats()["allocator"], str)
    limit = cowstore.memory_limit()
    cowstore.set_memory_limit(limit)
    try:
        cowstore.set_retain_limit(64 << 20)
    except NotImplementedError:
        pass    # the system allocator (sanitizer builds) retains nothing
    cowstore.trim()
    assert cowstore.retained_bytes() >= 0


def main() -> None:
    methods(tensors())
    files(sys.argv[1])
    modes()
    print("stub_sample: every public name used")


if __name__ == "__main__":
    main()
