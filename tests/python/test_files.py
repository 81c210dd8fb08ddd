"""Snapshots and safetensors files from Python (docs/python.md, "Files and
snapshots"): cowstore.save_file, load_file, safe_open, snapshot() and its
background save.

Files cowstore writes are parsed by an independent reader written from the
format's specification (tests/files/st_spec.py: struct and json, no
cowstore code), values compared through numpy.frombuffer and, for
bfloat16, torch.frombuffer; files that reader's writer makes are loaded by
cowstore byte for byte."""
import glob
import os
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest

import cowstore
from conftest import collect, gil_pauses, live_bytes, sample

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "files"))
import st_spec  # noqa: E402

# cowstore's dtypes and their codes in the format (complex128 has none).
CODE = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16",
        "uint16": "U16", "int32": "I32", "uint32": "U32", "int64": "I64",
        "uint64": "U64", "float16": "F16", "bfloat16": "BF16",
        "float32": "F32", "float64": "F64", "complex64": "C64"}
DTYPES = tuple(CODE)
MODES = ("stream", "persist_first")


# ---------------------------------------------------------------------------
# Helpers.

def make(dtype, shape, seed=0):
    """A cowstore tensor of its own and the NumPy array of its values
    (float32 for bfloat16: the sample values are exact in bfloat16)."""
    # (sample's ascontiguousarray makes a 0-d array 1-d: reshaped back)
    if dtype == "bfloat16":
        ref = sample("float32", shape, seed).reshape(shape)
        return cowstore.tensor(ref, dtype="bfloat16"), ref
    ref = sample(dtype, shape, seed).reshape(shape)
    t = cowstore.tensor(ref)
    assert t.shape == tuple(shape)
    return t, ref


def bf16_bytes(f32):
    """bfloat16's bytes of float32 values that bfloat16 holds exactly: the
    upper half of each float32 (the format's definition of bfloat16)."""
    f32 = np.ascontiguousarray(f32, dtype="<f4")
    return (f32.view("<u4") >> 16).astype("<u2").tobytes()


def ref_bytes(dtype, ref):
    """The bytes a file holds for values @ref: little-endian, C order."""
    if dtype == "bfloat16":
        return bf16_bytes(ref)
    return np.ascontiguousarray(ref).astype(st_spec.NUMPY[CODE[dtype]]).tobytes()


def raw(t):
    """The bytes of a cowstore tensor's values in C order."""
    if t.dtype == "bfloat16":
        return bf16_bytes(np.asarray(cowstore.tensor(t, dtype="float32")))
    return np.ascontiguousarray(np.asarray(t)).tobytes()


def cases(dtype):
    """Tensors of every kind of shape and layout: {name: (tensor, the
    NumPy array of its values)}. Views keep their bases' storages."""
    out = {}
    for name, shape in (("scalar", ()), ("empty", (0,)),
                        ("empty3", (3, 0, 2)), ("vec", (7,)),
                        ("mat", (3, 4)), ("cube", (2, 3, 4))):
        out[name] = make(dtype, shape, seed=len(out))
    t, r = make(dtype, (10,), seed=7)
    out["strided"] = (t[::3], r[::3])
    t, r = make(dtype, (3, 4), seed=8)
    out["transposed"] = (t.T, r.T)
    t, r = make(dtype, (4, 6), seed=9)
    out["noncontig"] = (t[1:3, ::2], r[1:3, ::2])
    t, r = make(dtype, (2, 3, 4), seed=10)
    out["permuted"] = (t.permute(2, 0, 1), r.transpose(2, 0, 1))
    t, r = make(dtype, (3, 1), seed=11)
    out["expanded"] = (t.expand(3, 4), np.broadcast_to(r, (3, 4)))
    t, r = make(dtype, (2, 5), seed=12)  # two views of one storage
    out["row0"] = (t[0], r[0])
    out["row1"] = (t[1], r[1])
    return out


def save(how, tensors, path, metadata=None):
    """Save @tensors with save_file or a snapshot's background save."""
    if how == "save_file":
        cowstore.save_file(tensors, path, metadata)
        return None
    snap = cowstore.snapshot(tensors)
    job = snap.save(path, metadata, mode=how)
    job.wait()
    assert job.done()
    assert job.progress == (snap.stats()["bytes"],) * 2
    return snap


def read_spec(path):
    with open(path, "rb") as f:
        return st_spec.read(f.read())


def leftovers(path):
    """Temporary files a save left next to @path (.NAME.cowstore-*)."""
    d, name = os.path.split(path)
    return glob.glob(os.path.join(d, "." + name + ".cowstore-*"))


# ---------------------------------------------------------------------------
# Round trips, checked by the independent reader.

@pytest.mark.parametrize("how", ("save_file",) + MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype_and_layout(tmp_path, dtype, how, request):
    path = str(tmp_path / "t.safetensors")
    cs = cases(dtype)
    save(how, {k: t for k, (t, _) in cs.items()}, path)
    f = read_spec(path)
    # the header: padded with spaces to a multiple of 8
    assert f["header_len"] % 8 == 0
    assert f["header_text"] == f["header_text"].rstrip(" ") + " " * (
        len(f["header_text"]) - len(f["header_text"].rstrip(" ")))
    assert f["metadata"] is None
    got = {t["name"]: t for t in f["tensors"]}
    assert set(got) == set(cs)
    torch = None
    if dtype == "bfloat16" and os.environ.get("COWSTORE_PY_SKIP_TORCH") != "1":
        torch = request.getfixturevalue("torch")
    for name, (t, ref) in cs.items():
        e = got[name]
        assert e["dtype"] == CODE[dtype], name
        assert tuple(e["shape"]) == ref.shape, name
        # each tensor starts aligned to its element size
        assert (8 + f["header_len"] + e["begin"]) % t.itemsize == 0, name
        assert e["data"] == ref_bytes(dtype, ref), name
        if dtype == "bfloat16":
            if torch is not None and len(e["data"]) > 0:
                v = torch.frombuffer(bytearray(e["data"]),
                                     dtype=torch.bfloat16)
                assert v.float().reshape(ref.shape).numpy().tolist() == \
                    ref.tolist(), name
        else:
            v = np.frombuffer(e["data"], dtype=st_spec.NUMPY[CODE[dtype]])
            np.testing.assert_array_equal(v.reshape(ref.shape), ref,
                                          err_msg=name)
    # and cowstore reads back what it wrote
    back = cowstore.load_file(path)
    assert sorted(back) == sorted(cs)
    for name, (t, ref) in cs.items():
        b = back[name]
        assert b.dtype == dtype and b.shape == ref.shape, name
        assert raw(b) == ref_bytes(dtype, ref), name
    assert not leftovers(path)


def test_no_tensors(tmp_path):
    """An empty mapping: a file of an empty JSON object, padded."""
    path = str(tmp_path / "e.safetensors")
    cowstore.save_file({}, path)
    f = read_spec(path)
    assert f["tensors"] == [] and f["header_text"].strip() == "{}"
    assert cowstore.load_file(path) == {}
    job = cowstore.snapshot({}).save(path, mode="persist_first")
    job.wait()
    assert job.progress == (0, 0)
    with cowstore.safe_open(path) as sf:
        assert sf.keys() == [] and sf.metadata() is None


def test_complex128_is_refused_naming_the_tensor(tmp_path):
    path = str(tmp_path / "c.safetensors")
    t = cowstore.zeros((2,), dtype="complex128")
    with pytest.raises(ValueError, match=r'"z128".*complex128|complex128'
                       r'.*"z128"'):
        cowstore.save_file({"ok": cowstore.zeros((1,)), "z128": t}, path)
    with pytest.raises(ValueError, match="z128"):
        cowstore.snapshot({"z128": t}).save(path)
    assert not os.path.exists(path) and not leftovers(path)


def test_numpy_arrays_and_buffers_are_taken(tmp_path):
    """NumPy arrays (writable: a pinned DLPack import, which the snapshot
    copies, counted; read-only: shared, no copy), bytes and nested lists
    all save as their values."""
    path = str(tmp_path / "n.safetensors")
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    ro = np.arange(4, dtype=np.int16)
    ro.flags.writeable = False
    snap = cowstore.snapshot({"w": w, "ro": ro, "b": b"\x01\x02\x03",
                              "bools": np.array([True, False, True])})
    s = snap.stats()
    # w and the bool array (NumPy 1.24 exports bool through its buffer,
    # writable: pinned too) are copied at the take; ro and b are not
    assert s["pinned_copies"] == 2
    assert s["pinned_bytes"] == w.nbytes + 3
    snap.save(path).wait()
    f = {t["name"]: t for t in read_spec(path)["tensors"]}
    assert f["w"]["data"] == w.tobytes() and f["w"]["dtype"] == "F32"
    assert f["ro"]["data"] == ro.tobytes() and f["ro"]["dtype"] == "I16"
    assert f["b"]["data"] == b"\x01\x02\x03" and f["b"]["dtype"] == "U8"
    assert f["bools"]["data"] == b"\x01\x00\x01"
    assert f["bools"]["dtype"] == "BOOL"
    # the same mapping through save_file
    cowstore.save_file({"w": w, "ro": ro}, path)
    back = cowstore.load_file(path)
    np.testing.assert_array_equal(np.asarray(back["w"]), w)
    np.testing.assert_array_equal(np.asarray(back["ro"]), ro)


def test_metadata_round_trip(tmp_path):
    path = str(tmp_path / "m.safetensors")
    md = {"format": "pt", "ünïcödé": "värde ✓", "quote\"back\\slash":
          "line\nbreak\ttab", "": "empty key"}
    cowstore.save_file({"x": cowstore.zeros((2,))}, path, metadata=md)
    f = read_spec(path)
    assert dict(f["metadata"]) == md
    with cowstore.safe_open(path) as sf:
        assert sf.metadata() == md
    snap = cowstore.snapshot({"x": cowstore.zeros((2,))})
    snap.save(path, {"a": "b"}, mode="persist_first").wait()
    with cowstore.safe_open(path) as sf:
        assert sf.metadata() == {"a": "b"}
    # no metadata, or an empty dict: no "__metadata__" at all
    cowstore.save_file({"x": cowstore.zeros((2,))}, path, {})
    assert read_spec(path)["metadata"] is None
    with cowstore.safe_open(path) as sf:
        assert sf.metadata() is None


def test_bad_arguments_name_the_function_and_argument(tmp_path):
    path = str(tmp_path / "bad.safetensors")
    x = cowstore.zeros((2,))
    with pytest.raises(TypeError, match="save_file: metadata keys? .*str|"
                       "save_file: each metadata value is a str, not int"):
        cowstore.save_file({"x": x}, path, {"k": 1})
    with pytest.raises(ValueError, match="save_file: each metadata value "
                       ".* holds a NUL"):
        cowstore.save_file({"x": x}, path, {"k": "a\0b"})
    with pytest.raises(TypeError, match="save_file: each tensor's name is "
                       "a str, not int"):
        cowstore.save_file({1: x}, path)
    with pytest.raises(TypeError, match="save_file: tensors is a mapping "
                       "of names to tensors, not list"):
        cowstore.save_file([x], path)
    with pytest.raises(TypeError, match=r"snapshot: tensors\['s'\]: "):
        cowstore.snapshot({"s": "not a tensor"})
    with pytest.raises(ValueError, match='mode is "stream" or '
                       '"persist_first", not \'fast\''):
        cowstore.snapshot({"x": x}).save(path, mode="fast")
    # the names the file format refuses (cowstore's C checks)
    with pytest.raises(ValueError, match="__metadata__"):
        cowstore.save_file({"__metadata__": x}, path)
    with pytest.raises(ValueError, match="named \"\", which a safetensors"):
        cowstore.save_file({"": x}, path)
    assert not os.path.exists(path) and not leftovers(path)


# ---------------------------------------------------------------------------
# Files from the independent writer, loaded by cowstore.

def spec_tensors():
    """(name, code, shape, bytes) for every dtype, and the values."""
    out, refs = [], {}
    for i, dtype in enumerate(DTYPES):
        for j, shape in enumerate(((), (0,), (3,), (2, 3))):
            name = "%s/%d-ü" % (dtype, j)
            _, ref = make(dtype, shape, seed=i + j)
            out.append((name, CODE[dtype], shape, ref_bytes(dtype, ref)))
            refs[name] = (dtype, ref)
    return out, refs


@pytest.mark.parametrize("pread", (False, True))
def test_independent_writer_files_load_byte_for_byte(tmp_path, pread):
    path = str(tmp_path / "spec.safetensors")
    ts, refs = spec_tensors()
    md = [("framework", "none"), ("ключ", "значение")]
    data = st_spec.write(ts, metadata=md)
    with open(path, "wb") as f:
        f.write(data)
    d = cowstore.load_file(path, pread=pread)
    assert list(d) == sorted(refs)
    for name, (dtype, ref) in refs.items():
        t = d[name]
        assert t.dtype == dtype and t.shape == ref.shape, name
        assert raw(t) == ref_bytes(dtype, ref), name
    with cowstore.safe_open(path, pread=pread) as f:
        assert f.keys() == sorted(refs)
        assert f.metadata() == dict(md)
        total = 0
        for name, (dtype, ref) in refs.items():
            assert raw(f.get_tensor(name)) == ref_bytes(dtype, ref), name
            total += len(ref_bytes(dtype, ref))
        s = f.stats()
        assert s["tensors"] == len(refs)
        assert s["unaligned_copies"] == 0
        if pread:
            assert s["mapped_bytes"] == 0 and s["bytes_read"] == total
        else:
            assert s["mapped_bytes"] == len(data) and s["bytes_read"] == 0


def test_unaligned_tensors_are_copied_and_counted(tmp_path):
    """A writer that does not pad its header leaves tensors unaligned: each
    is copied into aligned memory when taken, and counted."""
    path = str(tmp_path / "u.safetensors")
    a = np.arange(5, dtype="<f8")
    data = st_spec.write([("a", "F64", (5,), a.tobytes())], pad=False,
                         trail=b"  ")
    assert (8 + struct_len(data)) % 8 != 0
    with open(path, "wb") as f:
        f.write(data)
    with cowstore.safe_open(path) as f:
        t = f.get_tensor("a")
        assert f.stats()["unaligned_copies"] == 1
    np.testing.assert_array_equal(np.asarray(t), a)


def struct_len(data):
    return int.from_bytes(data[:8], "little")


def test_broken_files_raise_safetensor_error(tmp_path):
    """A file that breaks a rule of the format: cowstore.SafetensorError (a
    ValueError) naming the rule and the tensor (tests/files/st_interop.py
    has one file per rule; these check the Python exception)."""
    path = str(tmp_path / "bad.safetensors")
    good = st_spec.write([("w", "F32", (2,), b"\0" * 8)])
    broken = {
        "short": (b"\x01\x02", "shorter than"),
        "extent": (st_spec.assemble(st_spec.header_text(
            [["w", {"dtype": "F32", "shape": [3],
                    "data_offsets": [0, 8]}]]), b"\0" * 8), '"w"'),
        "after": (good + b"\0", "after"),
    }
    for name, (data, words) in broken.items():
        with open(path, "wb") as f:
            f.write(data)
        for call in (cowstore.load_file, cowstore.safe_open):
            with pytest.raises(cowstore.SafetensorError, match=words) as e:
                call(path)
            assert isinstance(e.value, ValueError)
            assert "COW_EFORMAT" in str(e.value), name
    with pytest.raises(OSError, match="No such file"):
        cowstore.load_file(str(tmp_path / "missing.safetensors"))


# ---------------------------------------------------------------------------
# Loading: zero copy.

def test_load_file_is_zero_copy_and_a_write_copies_one_tensor(tmp_path):
    path = str(tmp_path / "z.safetensors")
    big = {"t%d" % i: cowstore.full((1 << 16,), float(i), dtype="float32")
           for i in range(8)}
    cowstore.save_file(big, path)
    with open(path, "rb") as f:
        on_disk = f.read()
    collect()
    before = live_bytes()
    cowstore.reset_stats()
    d = cowstore.load_file(path)
    s = cowstore.stats()
    assert s["bytes_copied"] == 0 and s["materialize_copies"] == 0
    assert s["eager_fallbacks"] == 0
    # the tensors' 2 MiB are the mapping's, not the allocator's
    assert live_bytes() - before < (1 << 16)
    for t in d.values():
        assert t.is_read_only()
    # reads copy nothing: NumPy sees the mapping itself
    a = np.asarray(d["t3"])
    assert a.__array_interface__["data"][0] == d["t3"].data_ptr()
    c = d["t5"].lazy_clone()
    assert c.shares_data(d["t5"])
    assert cowstore.stats()["bytes_copied"] == 0
    # a write copies that tensor alone
    d["t2"][0] = 42.0
    s = cowstore.stats()
    assert s["materialize_copies"] == 1 and s["external_copies"] == 1
    assert s["bytes_copied"] == d["t2"].nbytes
    assert not d["t2"].is_read_only()
    assert all(d[k].is_read_only() for k in d if k != "t2")
    assert d["t2"][0].item() == 42.0 and d["t2"][1].item() == 2.0
    assert np.asarray(d["t3"])[0] == 3.0
    with open(path, "rb") as f:
        assert f.read() == on_disk


def test_safe_open_keys_get_tensor_metadata_and_closing(tmp_path):
    path = str(tmp_path / "o.safetensors")
    names = ["zeta", "alpha", "Ωmega", "beta.weight", "a"]
    cowstore.save_file({n: cowstore.full((2,), i, dtype="int32")
                        for i, n in enumerate(names)}, path)
    f = cowstore.safe_open(path)
    with f as g:
        assert g is f
        assert g.keys() == sorted(names)
        assert g.metadata() is None
        t = g.get_tensor("Ωmega")
        with pytest.raises(KeyError):
            g.get_tensor("missing")
        with pytest.raises(TypeError):
            g.get_tensor(3)
    for call in (f.keys, f.metadata, f.stats, lambda: f.get_tensor("a")):
        with pytest.raises(ValueError, match="closed"):
            call()
    with pytest.raises(ValueError, match="closed"):
        f.__enter__()
    f.close()  # again: nothing
    assert t.tolist() == [2, 2]  # tensors outlive the handle
    assert "closed" in repr(f)


def test_safe_open_closed_while_other_threads_get_tensors(tmp_path):
    """close() while other threads are inside get_tensor (the GIL released
    there): the handle goes with the last of them; every tensor taken is
    valid."""
    path = str(tmp_path / "c.safetensors")
    cowstore.save_file({"t%d" % i: cowstore.full((4096,), i, dtype="int64")
                        for i in range(16)}, path)
    for pread in (False, True):
        for _ in range(20):
            f = cowstore.safe_open(path, pread=pread)
            got, errors = [], []
            start = threading.Barrier(5)

            def taker():
                start.wait()
                try:
                    for i in range(16):
                        got.append((i, f.get_tensor("t%d" % i)))
                except ValueError as e:
                    errors.append(str(e))

            threads = [threading.Thread(target=taker) for _ in range(4)]
            for th in threads:
                th.start()
            start.wait()
            f.close()
            for th in threads:
                th.join()
            assert all("closed" in e for e in errors)
            for i, t in got:
                assert t.sum().item() == 4096 * i


# ---------------------------------------------------------------------------
# Snapshots.

def test_snapshot_object():
    a, _ = make("float32", (3, 4))
    b, _ = make("int64", (5,))
    snap = cowstore.snapshot({"a": a, "b": b, "a_row": a[1]})
    assert snap.names == ("a", "b", "a_row")
    assert snap.count == 3 and len(snap) == 3
    a.fill_(7)
    g = snap.get("a")
    assert g.tolist() == sample("float32", (3, 4)).tolist()
    g.fill_(1)  # a lazy copy: never reaches the snapshot
    assert snap.get("a").tolist() == sample("float32", (3, 4)).tolist()
    s = snap.stats()
    assert set(s) == {"tensors", "bytes", "held_tensors", "extra_bytes",
                      "extra_peak", "writer_copies", "writer_persists",
                      "pinned_copies", "pinned_bytes"}
    assert s["tensors"] == 3 and s["held_tensors"] == 3
    assert s["bytes"] == 48 + 40 + 16
    assert s["writer_copies"] == 1  # a's first write copied its storage
    assert snap.is_held("b")
    snap.release("b")
    assert not snap.is_held("b")
    with pytest.raises(cowstore.ReleasedError, match='"b".*released'):
        snap.get("b")
    assert issubclass(cowstore.ReleasedError, LookupError)
    with pytest.raises(KeyError):
        snap.get("nope")
    snap.release()
    assert snap.stats()["held_tensors"] == 0
    assert "0 held" in repr(snap)
    with pytest.raises(TypeError):
        cowstore.Snapshot()
    with pytest.raises(ValueError, match="functional"):
        with cowstore.functional():
            f = cowstore.zeros((2,))
        cowstore.snapshot({"f": f})


@pytest.mark.parametrize("mode", MODES)
def test_writers_during_a_save_leave_the_snapshot_values(tmp_path, mode):
    """A thread writes every tensor while the save runs: the file holds the
    values at the snapshot; the writers needed no coordination. In a
    persist-first save no write copies (a writer persists what it reaches
    first, or finds it persisted and released). Tried until the writer
    wrote while the save ran (at most five times)."""
    path = str(tmp_path / "w.safetensors")
    ts = {"t%02d" % i: cowstore.full((1 << 18,), i, dtype="float32")
          for i in range(64)}  # 64 MiB
    for attempt in range(5):
        for i, t in enumerate(ts.values()):
            t.fill_(i)
        snap = cowstore.snapshot(ts)
        go, stop = threading.Event(), threading.Event()
        during = []

        def writer():
            go.wait()
            k = 1000
            while not stop.is_set():
                running = not job.done()
                # the other way round from the save's order (by name):
                # the writer reaches tensors the save has not
                for t in reversed(list(ts.values())):
                    t.fill_(k)
                during.append(running)
                k += 1

        th = threading.Thread(target=writer)
        th.start()
        # the save first: a persist-first save is in force once save()
        # returns, and from then on the writers' first writes persist
        try:
            job = snap.save(path, mode=mode)
            go.set()
            job.wait()
        finally:
            go.set()
            stop.set()
            th.join()
        back = cowstore.load_file(path)
        for i in range(64):
            v = np.asarray(back["t%02d" % i])
            assert (v == i).all(), (i, v[:4])
        last = 1000 + len(during) - 1
        assert all((np.asarray(t) == last).all() for t in ts.values())
        s = snap.stats()
        print("%s: %d writer rounds, %d while the save ran, writer_copies "
              "%d, writer_persists %d" % (mode, len(during), sum(during),
                                          s["writer_copies"],
                                          s["writer_persists"]))
        if mode == "stream":
            assert s["writer_persists"] == 0
        else:
            assert s["writer_copies"] == 0
        if any(during):
            break
    assert any(during), "the save always ended before the writer wrote"


def test_take_reads_every_tensor_whole_while_threads_write():
    """Taking a snapshot is a read of every tensor: it holds each tensor's
    stripe for reading, so a write of another thread (fill_, one op) is
    in it whole or not at all, for every tensor, every time."""
    ts = [cowstore.zeros((1 << 14,), dtype="int64") for _ in range(6)]
    views = [t[::2] for t in ts]
    stop = threading.Event()

    def writer(ws):
        k = 1
        while not stop.is_set():
            for t in ws:
                t.fill_(k)
            k += 1

    threads = [threading.Thread(target=writer, args=(ts[i::2],))
               for i in range(2)]
    for th in threads:
        th.start()
    try:
        for _ in range(300):
            snap = cowstore.snapshot(
                {**{"t%d" % i: t for i, t in enumerate(ts)},
                 **{"v%d" % i: v for i, v in enumerate(views)}})
            for name in snap.names:
                a = np.asarray(snap.get(name))
                assert (a == a[0]).all(), (name, np.unique(a)[:5])
    finally:
        stop.set()
        for th in threads:
            th.join()


def test_save_handle_progress_done_wait(tmp_path):
    path = str(tmp_path / "p.safetensors")
    n = 48
    snap = cowstore.snapshot({"t%d" % i: cowstore.full((1 << 18,), i,
                                                       dtype="int32")
                              for i in range(n)})
    total = snap.stats()["bytes"]
    job = snap.save(path)
    seen = [job.progress]
    while not job.done():
        seen.append(job.progress)
    job.wait()
    job.wait()  # any number of times
    seen.append(job.progress)
    assert all(t == total for _, t in seen)
    dones = [d for d, _ in seen]
    assert dones == sorted(dones)
    assert dones[-1] == total
    assert job.done()
    assert "done" in repr(job)
    print("progress samples: %d distinct of %d" % (len(set(dones)),
                                                   len(dones)))
    back = cowstore.load_file(path)
    assert all(back["t%d" % i].sum().item() == i * (1 << 18)
               for i in range(n))
    with pytest.raises(TypeError):
        cowstore.SaveJob()


def test_cancel_leaves_the_destination_and_no_temporary_file(tmp_path):
    path = str(tmp_path / "dest.safetensors")
    with open(path, "wb") as f:
        f.write(b"the old file")
    ino = os.stat(path).st_ino
    ts = {"t%d" % i: cowstore.full((1 << 18,), i, dtype="float32")
          for i in range(32)}
    for mode in MODES:
        # cancelled before it starts: it stops at its first chunk
        snap = cowstore.snapshot(ts)
        snap.cancel()
        job = snap.save(path, mode=mode)
        with pytest.raises(cowstore.CancelledError, match="cancel"):
            job.wait()
        with pytest.raises(cowstore.CancelledError):
            job.wait()
        assert job.progress[0] < job.progress[1]
        assert open(path, "rb").read() == b"the old file"
        assert os.stat(path).st_ino == ino
        assert not leftovers(path)
        # the snapshot is still usable, and the next save goes through
        assert snap.stats()["held_tensors"] == 32
        snap.save(path, mode=mode).wait()
        assert cowstore.load_file(path)["t5"].sum().item() == 5 * (1 << 18)
        with open(path, "wb") as f:
            f.write(b"the old file")
        ino = os.stat(path).st_ino
    # cancelled midway, through the handle: a big save, cancelled once
    # some of it is written (it may have ended by then: try again)
    big = {"t%d" % i: cowstore.full((1 << 20,), i, dtype="float32")
           for i in range(64)}
    midway = 0
    for _ in range(10):
        snap = cowstore.snapshot(big)
        job = snap.save(path)
        while job.progress[0] == 0 and not job.done():
            pass
        job.cancel()
        try:
            job.wait()
        except cowstore.CancelledError:
            midway += 1
            assert 0 < job.progress[0] < job.progress[1]
            assert open(path, "rb").read() == b"the old file"
            assert os.stat(path).st_ino == ino
            assert not leftovers(path)
            break
        with open(path, "wb") as f:
            f.write(b"the old file")
        ino = os.stat(path).st_ino
    assert midway == 1


def test_dropping_a_running_job_cancels_it_and_waits(tmp_path):
    """A SaveJob dropped while its save runs: the save is cancelled and the
    drop waits for it to stop, so no temporary file is left once it
    returns, and the destination is either untouched or the whole file
    (the save may have ended first: tried until one was cancelled)."""
    ts = {"t%d" % i: cowstore.full((1 << 20,), i) for i in range(32)}
    cancelled = 0
    for k in range(10):
        path = str(tmp_path / ("drop%d.safetensors" % k))
        snap = cowstore.snapshot(ts)
        job = snap.save(path)
        del job
        assert not leftovers(path)
        if os.path.exists(path):
            assert cowstore.load_file(path)["t9"].sum().item() == 9 << 20
        else:
            cancelled += 1
            break
    assert cancelled == 1


def test_save_errors_raise_the_right_exception(tmp_path):
    x = cowstore.zeros((4,))
    missing = str(tmp_path / "no" / "such" / "dir" / "f.safetensors")
    with pytest.raises(OSError, match="No such file or directory"):
        cowstore.save_file({"x": x}, missing)
    snap = cowstore.snapshot({"x": x, "y": x})
    with pytest.raises(OSError, match="No such file or directory"):
        snap.save(missing)
    assert snap.stats()["held_tensors"] == 2
    snap.release("y")
    with pytest.raises(cowstore.ReleasedError, match='"y"'):
        snap.save(str(tmp_path / "r.safetensors"))
    assert not os.path.exists(str(tmp_path / "r.safetensors"))
    assert not leftovers(str(tmp_path / "r.safetensors"))
    # one save per snapshot at a time: BufferError (COW_EBUSY)
    big = cowstore.snapshot({"t%d" % i: cowstore.full((1 << 20,), i)
                             for i in range(32)})
    busy = 0
    for k in range(10):
        job = big.save(str(tmp_path / ("b%d" % k)), keep=True)
        try:
            big.save(str(tmp_path / ("c%d" % k)), keep=True)
        except BufferError as e:
            assert "COW_EBUSY" in str(e)
            busy += 1
        job.wait()
        if busy:
            break
    assert busy == 1


def test_a_failure_in_the_job_is_raised_by_wait(tmp_path):
    """A save that fails midway on the job's thread (a file size limit,
    RLIMIT_FSIZE, in a child process: EFBIG): wait() raises OSError; the
    destination is as it was and no temporary file is left."""
    path = str(tmp_path / "f.safetensors")
    with open(path, "wb") as f:
        f.write(b"old")
    code = r"""
import os, resource, signal, sys
import cowstore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
snap = cowstore.snapshot({"t%d" % i: cowstore.zeros((1 << 18,))
                          for i in range(4)})
for mode in ("stream", "persist_first"):
    try:
        job = snap.save(sys.argv[1], mode=mode, keep=True)
        job.wait()
    except OSError as e:
        print(mode, type(e).__name__, e)
"""
    r = subprocess.run([sys.executable, "-c", code, path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    out = r.stdout.decode()
    assert r.returncode == 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith(("stream",
                                                            "persist"))]
    assert len(lines) == 2, out
    assert lines[0].startswith("stream OSError") and "File too large" in \
        lines[0], out
    assert "COW_EIO" in lines[0], out
    # persist first reserves the space first: it fails before the job
    # starts (save() would raise) or in it; either way an OSError
    assert lines[1].startswith("persist_first OSError"), out
    assert open(path, "rb").read() == b"old"
    assert not leftovers(path)


def test_the_job_thread_never_runs_a_python_deleter(tmp_path):
    """Memory a Python object owns (a read-only buffer) shared by a
    snapshot: the save's thread drops the snapshot's share as it writes,
    but the Snapshot object keeps one more, so the buffer is released on
    a Python thread, when the Snapshot goes, never on the job's thread."""
    path = str(tmp_path / "d.safetensors")
    arr = np.arange(1 << 16, dtype=np.float32)
    arr.flags.writeable = False
    released_on = []
    weakref.finalize(arr, lambda: released_on.append(
        threading.get_ident()))
    ref = weakref.ref(arr)
    snap = cowstore.snapshot({"a": cowstore.from_buffer(arr)})
    del arr
    collect()
    assert ref() is not None  # the snapshot shares it
    job = snap.save(path)
    job.wait()
    assert not snap.is_held("a")  # the save released the snapshot's share
    assert released_on == [] and ref() is not None
    del job, snap
    collect()
    assert released_on == [threading.get_ident()]
    np.testing.assert_array_equal(np.asarray(cowstore.load_file(path)["a"]),
                                  np.arange(1 << 16, dtype=np.float32))


# ---------------------------------------------------------------------------
# The GIL.

def test_gil_is_released_while_a_large_save_runs(tmp_path):
    """While save_file (on the calling thread) or a background save and
    its wait() run, another Python thread keeps running: the longest pause
    it sees is far shorter than the save (with the GIL held throughout it
    would be the whole save). Five tries each; one clear run is enough
    (conftest.gil_pauses)."""
    path = str(tmp_path / "g.safetensors")
    ts = {"t%d" % i: cowstore.full((1 << 20,), i) for i in range(16)}  # 64 MiB

    def background(mode):
        def run():
            cowstore.snapshot(ts).save(path, mode=mode).wait()
        return run

    results = gil_pauses({"save_file": lambda: cowstore.save_file(ts, path),
                          "stream": background("stream"),
                          "persist_first": background("persist_first")})
    print("longest pause / save time:", results)
    assert all(r < 0.5 for r in results.values()), results
    assert cowstore.load_file(path)["t7"].sum().item() == 7 * (1 << 20)


# ---------------------------------------------------------------------------
# Fork.

def test_a_job_running_at_fork_is_cancelled_in_the_child(tmp_path):
    """A child forked while a save runs: its copy of the job reports
    CancelledError (the C library's fork handlers; the job's thread is not
    in the child), its writes never reach the parent's file; the parent's
    save completes with the snapshot's values."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    ts = {"t%d" % i: cowstore.full((1 << 20,), i, dtype="float32")
          for i in range(32)}
    seen = set()
    for k in range(10):
        path = str(tmp_path / ("k%d.safetensors" % k))
        snap = cowstore.snapshot(ts)
        job = snap.save(path, mode="persist_first")
        pid = os.fork()
        if pid == 0:  # the child
            code = 3
            try:
                try:
                    job.wait()
                    code = 0  # it had ended before the fork
                except cowstore.CancelledError:
                    assert job.done()
                    for t in ts.values():  # writers: never the target
                        t.fill_(-1)
                    code = 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status), status
        code = os.WEXITSTATUS(status)
        assert code in (0, 1), code
        seen.add(code)
        job.wait()
        back = cowstore.load_file(path)
        for i in range(32):
            assert back["t%d" % i].sum().item() == i * (1 << 20), i
        assert not leftovers(path)
        if 1 in seen:
            break
    assert 1 in seen, "the job always ended before the fork"


def test_nothing_is_left_behind(tmp_path):
    """Snapshots (with their extra shares of read-only memory), jobs
    finished, cancelled and dropped, handles and loaded tensors: once all
    are gone, the library's live bytes are back where they were."""
    path = str(tmp_path / "l.safetensors")
    collect()
    start = live_bytes()
    for k in range(5):
        ro = np.arange(1000, dtype=np.int32)
        ro.flags.writeable = False
        ts = {"a": cowstore.full((1 << 16,), k), "ro": ro,
              "w": np.ones(100), "v": cowstore.arange(50)[::5]}
        cowstore.save_file(ts, path, {"k": str(k)})
        snap = cowstore.snapshot(ts)
        snap.save(path, mode=MODES[k % 2], keep=k % 2 == 1).wait()
        other = cowstore.snapshot(ts)
        other.cancel()
        with pytest.raises(cowstore.CancelledError):
            other.save(path, mode=MODES[k % 2]).wait()
        job = other.save(path)  # dropped at once: cancelled or done
        del job, other
        d = cowstore.load_file(path, pread=k % 2 == 0)
        with cowstore.safe_open(path) as f:
            t = f.get_tensor("a")
        d["a"][0] = 1
        del ts, snap, d, f, t, ro
    collect()
    assert live_bytes() == start
