"""st_interop.py - cowstore's safetensors files against an independent reader
and writer written from the specification (st_spec.py: struct and json),
values compared through numpy.frombuffer (torch.frombuffer for bfloat16).

Run with Debian's interpreter (numpy 1.24, torch 1.13):
    /usr/bin/python3 st_interop.py CASE path/to/st_tool
CASE is one of the names `st_interop.py list` prints:
  save_{stream,persist}_{sync,job}  cowstore saves every dtype, shapes and
                                    views, names and metadata with
                                    non-ASCII text and escapes; the
                                    independent reader parses the file and
                                    compares every value and the layout
  load_*                            files from the independent writer
                                    (padded or not, tensors in orders that
                                    leave some unaligned, white space before
                                    and after the JSON object, escapes)
                                    loaded by cowstore, mapped and with
                                    pread, byte for byte, with the aligned
                                    ones over the mapping and the others
                                    copied and counted
  reject_*                          one file per rule of the format, each
                                    breaking that rule alone (the same file
                                    before the change loads), refused with
                                    COW_EFORMAT and a message naming the
                                    rule and the tensor or values
Prints "st_interop CASE: N checks passed" or fails with an AssertionError.
"""
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_spec  # noqa: E402

checks = 0
TOOL = None
TMP = None
_torch = None


def torch():
    """torch, imported when a case needs bfloat16 (it takes a second)."""
    global _torch
    if _torch is None:
        import torch as t
        _torch = t
    return _torch


def check(cond, what):
    global checks
    assert cond, what
    checks += 1


def tool(*args):
    """Run st_tool; (exit code, stdout)."""
    r = subprocess.run([TOOL] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    if r.stderr:
        sys.stderr.write(r.stderr.decode(errors="replace"))
    return r.returncode, r.stdout.decode("utf-8", errors="replace")


def dump(path, pread=False):
    """cowstore's view of @path: the JSON st_tool dump prints, or
    ("error", STATUS, MESSAGE)."""
    rc, out = tool("dump", path, *(["pread"] if pread else []))
    m = re.match(r"error (COW_[A-Z]+): (.*)", out, re.S)
    if rc == 3 and m:
        return ("error", m.group(1), m.group(2).strip())
    assert rc == 0, "st_tool dump %s: exit %d: ...%s" % (path, rc, out[-400:])
    d = json.loads(out)
    for t in d["tensors"]:
        t["name"] = bytes.fromhex(t["name"]).decode("utf-8")
        t["data"] = bytes.fromhex(t["data"])
    d["metadata"] = [[bytes.fromhex(k).decode("utf-8"),
                      bytes.fromhex(v).decode("utf-8")]
                     for k, v in d["metadata"]]
    return d


def put(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---------------------------------------------------------------------------
# Values.

INTS = {"U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"}


def values(dtype, shape, rng):
    """Bytes of random values of @dtype (finite, so that values compare)."""
    n = math.prod(shape)
    if dtype == "BOOL":
        return rng.integers(0, 2, n).astype(np.bool_).tobytes()
    if dtype in INTS:
        dt = np.dtype(st_spec.NUMPY[dtype])
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt,
                            endpoint=True).tobytes()
    if dtype == "C64":
        return (rng.standard_normal(n) * 50 + 1j * rng.standard_normal(n) *
                50).astype("<c8").tobytes()
    if dtype == "BF16":
        t = torch()
        f = t.from_numpy(rng.standard_normal(n).astype(np.float32) * 50)
        return f.to(t.bfloat16).view(t.int16).numpy().astype("<i2").tobytes()
    return (rng.standard_normal(n) * 100).astype(
        st_spec.NUMPY[dtype]).tobytes()


def strided_raw(base, itemsize, sizes, strides, offset):
    """The C-order bytes of a strided view of @base (bytes), by NumPy."""
    flat = np.frombuffer(base, st_spec.RAW[itemsize])
    if math.prod(sizes) == 0:
        return b""
    v = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=sizes,
        strides=[s * itemsize for s in strides])
    return np.ascontiguousarray(v).tobytes()


def same_values(dtype, shape, got, base, sizes, strides, offset):
    """The file's bytes @got hold the values of the view, compared as
    values of @dtype: numpy.frombuffer, or torch.frombuffer for BF16."""
    if math.prod(shape) == 0:
        return got == b""
    if dtype == "BF16":
        t = torch()
        a = t.frombuffer(bytearray(got), dtype=t.bfloat16).reshape(shape)
        b = t.frombuffer(bytearray(base), dtype=t.bfloat16).as_strided(
            sizes, strides, offset)
        return bool(t.equal(a, b))
    k = st_spec.SIZES[dtype]
    a = np.frombuffer(got, st_spec.NUMPY[dtype]).reshape(shape)
    flat = np.frombuffer(base, st_spec.NUMPY[dtype])
    b = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=sizes, strides=[s * k for s in strides])
    return a.dtype == b.dtype and np.array_equal(a, b)


# Names and metadata with text past ASCII and characters JSON escapes.
ODD_NAMES = ["caf\u00e9.\u00fc", "\u65e5\u672c\u8a9e", "emoji\U0001F600",
             'quote"back\\slash', "ctl\n\t\x01\x1f", "del\x7f", "a/b"]
ODD_META = [["format", "pt"], ["caf\u00e9", "\u00fcber \u65e5\u672c"],
            ['q"uote', "back\\slash\n\t\x01"], ["emoji", "\U0001F600"],
            ["empty", ""]]


# ---------------------------------------------------------------------------
# cowstore writes, the independent reader reads.

def save_case(mode, how):
    rng = np.random.default_rng(38)
    bases = []   # (dtype, shape, bytes)
    views = []   # (name, base, sizes, strides, offset)

    def base(dtype, shape):
        bases.append((dtype, shape, values(dtype, shape, rng)))
        return len(bases) - 1

    for dtype in st_spec.SIZES:
        b = base(dtype, [4, 6])
        views += [
            (dtype + ".full", b, [4, 6], [6, 1], 0),
            (dtype + ".transposed", b, [6, 4], [1, 6], 0),
            (dtype + ".narrowed", b, [4, 3], [6, 1], 2),
            (dtype + ".stepped", b, [2, 3], [12, 2], 1),
            (dtype + ".expanded", b, [3, 6], [0, 1], 6),
            (dtype + ".scalar", b, [], [], 7),
            (dtype + ".empty", b, [4, 0], [6, 1], 0),
        ]
        b4 = base(dtype, [2, 3, 4, 5])
        views += [
            (dtype + ".1d", b4, [120], [1], 0),
            (dtype + ".3d", b4, [2, 3, 4], [60, 20, 5], 0),
            (dtype + ".4d.permuted", b4, [5, 2, 4, 3], [1, 60, 5, 20], 0),
        ]
        z = base(dtype, [0])
        views.append((dtype + ".zero", z, [0], [1], 0))
    odd = base("F32", [3])
    for i, name in enumerate(ODD_NAMES):
        views.append((name, odd, [1], [1], i % 3))
    spec = []
    for i, (dtype, shape, data) in enumerate(bases):
        spec.append("base %d %s %d %s %s" % (
            i, dtype, len(shape), " ".join(map(str, shape)),
            data.hex() or "-"))
    for name, b, sizes, strides, off in views:
        spec.append("view %s %d %d %s %s %d" % (
            name.encode().hex(), b, len(sizes), " ".join(map(str, sizes)),
            " ".join(map(str, strides)), off))
    for k, v in ODD_META:
        spec.append("meta %s %s" % (k.encode().hex(), v.encode().hex() or
                                    "-"))
    spec_path = put("spec.txt", ("\n".join(spec) + "\n").encode())
    path = os.path.join(TMP, "saved.safetensors")
    rc, out = tool("save", spec_path, path, mode, how)
    check(rc == 0 and out.startswith("saved"), "save: %s" % out)
    with open(path, "rb") as f:
        data = f.read()
    f = st_spec.read(data)  # raises FormatError on any broken rule
    check(True, "the independent reader accepts the file")

    # The layout: the header padded to 8 with spaces, the tensors by
    # descending element size then name, each aligned in the file.
    n = f["header_len"]
    check(n % 8 == 0, "header length %d is a multiple of 8" % n)
    text = f["header_text"]
    check(text.startswith("{") and text.rstrip(" ").endswith("}") and
          set(text[len(text.rstrip(" ")):]) <= {" "},
          "the header is the object, then spaces")
    order = [t["name"] for t in sorted(f["tensors"],
                                       key=lambda t: (t["begin"], t["end"]))]
    dt = {t["name"]: t["dtype"] for t in f["tensors"]}
    want = sorted(dt, key=lambda nm: (-st_spec.SIZES[dt[nm]],
                                      nm.encode("utf-8")))
    check(order == want, "tensors laid out by descending element size, "
          "then name")
    for t in f["tensors"]:
        check((8 + n + t["begin"]) % st_spec.SIZES[t["dtype"]] == 0,
              "%r aligned in the file" % t["name"])
    check(f["metadata"] == [list(p) for p in ODD_META] or
          f["metadata"] == [tuple(p) for p in ODD_META],
          "metadata: %r" % f["metadata"])

    # Every tensor, by name: dtype, shape, bytes and values.
    got = {t["name"]: t for t in f["tensors"]}
    check(sorted(got) == sorted(v[0] for v in views),
          "the file holds every tensor, by its name")
    for name, b, sizes, strides, off in views:
        dtype, _, raw = bases[b]
        t = got[name]
        k = st_spec.SIZES[dtype]
        check(t["dtype"] == dtype and t["shape"] == sizes,
              "%r: %s %s" % (name, t["dtype"], t["shape"]))
        check(t["data"] == strided_raw(raw, k, sizes, strides, off),
              "%r: the bytes of the view in C order" % name)
        check(same_values(dtype, sizes, t["data"], raw, sizes, strides, off),
              "%r: the values of the view (%s)" % (
                  name, "torch.frombuffer" if dtype == "BF16" else
                  "numpy.frombuffer"))

    # And cowstore reads back what it wrote, mapped, with no copy.
    d = dump(path)
    check(isinstance(d, dict), "cowstore opens its own file: %r" % (d,))
    check(d["stats"]["unaligned_copies"] == 0, "no tensor needed a copy")
    for t in d["tensors"]:
        check(t["data"] == got[t["name"]]["data"],
              "%r: cowstore reads the bytes it wrote" % t["name"])
        check(t["in_mapping"] == (t["nbytes"] > 0), "%r: over the mapping" %
              t["name"])


# ---------------------------------------------------------------------------
# The independent writer writes, cowstore reads.

def alignment(dtype):
    """The alignment cowstore needs to map a tensor (tensor.h: its element
    size; half of it for complex dtypes)."""
    k = st_spec.SIZES[dtype]
    return k // 2 if dtype == "C64" else k


def expect_loads(data, tensors, metadata=None, what=""):
    """cowstore loads @data (written by st_spec) byte for byte, mapped and
    with pread: names in the header's order, dtypes, shapes, bytes,
    metadata; tensors aligned in the mapping are over it, the others are
    copies, counted. Returns the independent reader's view and cowstore's
    mapped one."""
    f = st_spec.read(data)  # the file is valid for the specification
    n = f["header_len"]
    path = put("load.safetensors", data)
    by_name = {t[0]: t for t in tensors}
    unaligned = {t["name"] for t in f["tensors"] if t["end"] > t["begin"] and
                 (8 + n + t["begin"]) % alignment(t["dtype"]) != 0}
    mapped = None
    for pread in (False, True):
        mode = "pread" if pread else "mapped"
        d = dump(path, pread)
        mapped = mapped or d
        check(isinstance(d, dict), "%s %s: cowstore refused it: %r" %
              (what, mode, d))
        check([t["name"] for t in d["tensors"]] ==
              [t["name"] for t in f["tensors"]],
              "%s %s: the names in the header's order" % (what, mode))
        for t in d["tensors"]:
            name, dtype, shape, raw = by_name[t["name"]]
            check(t["dtype"] == dtype and t["shape"] == list(shape),
                  "%s %s %r: dtype and shape" % (what, mode, name))
            check(t["data"] == raw, "%s %s %r: byte for byte" %
                  (what, mode, name))
            if pread:
                check(not t["in_mapping"] and not t["read_only"],
                      "%s pread %r: a private writable buffer" % (what,
                                                                  name))
            else:
                check(t["in_mapping"] == (len(raw) > 0 and
                                          name not in unaligned),
                      "%s mapped %r: %s" % (what, name,
                                            "copied (unaligned)" if name in
                                            unaligned else "over the "
                                            "mapping"))
        check(d["metadata"] == [list(p) for p in (metadata or [])],
              "%s %s: metadata %r" % (what, mode, d["metadata"]))
        s = d["stats"]
        check(s["tensors"] == len(tensors), "%s %s: tensors %d" % (
            what, mode, s["tensors"]))
        if pread:
            check(s["mapped_bytes"] == 0 and d["mappings"] == 0,
                  "%s pread: nothing mapped" % what)
            check(s["bytes_read"] == sum(len(t[3]) for t in tensors),
                  "%s pread: bytes_read %d" % (what, s["bytes_read"]))
            check(s["unaligned_copies"] == 0, "%s pread: no copy counted" %
                  what)
        else:
            check(s["mapped_bytes"] == len(data) and d["mappings"] >= 1,
                  "%s mapped: the whole file mapped (%d bytes, %d "
                  "mappings)" % (what, s["mapped_bytes"], d["mappings"]))
            check(s["unaligned_copies"] == len(unaligned),
                  "%s mapped: unaligned_copies %d, expected %d (%s)" % (
                      what, s["unaligned_copies"], len(unaligned),
                      sorted(unaligned)))
            check(s["bytes_read"] == sum(len(by_name[u][3])
                                         for u in unaligned),
                  "%s mapped: bytes_read counts the copies" % what)
    return f, mapped


def every_dtype(rng, shapes=([2, 3],)):
    out = []
    for dtype in st_spec.SIZES:
        for i, shape in enumerate(shapes):
            out.append(("%s.%d" % (dtype, i), dtype, list(shape),
                        values(dtype, shape, rng)))
    return out


SHAPES = ([], [0], [5], [2, 3], [3, 0, 2], [2, 3, 4], [2, 1, 3, 2])


def load_aligned():
    """Every dtype and shape, laid out as the reference writer does."""
    rng = np.random.default_rng(1)
    ts = every_dtype(rng, SHAPES)
    meta = [["format", "np"], ["k", "v"]]
    f, _ = expect_loads(st_spec.write(ts, meta), ts, meta, "aligned")
    check(f["header_len"] % 8 == 0, "padded")


def load_unpadded():
    """The header not padded (N = 3 mod 8): the data starts unaligned, so
    tensors of 2, 4 and 8 bytes are copied, counted, and 1-byte ones are
    mapped."""
    rng = np.random.default_rng(2)
    ts = every_dtype(rng, ([3], [2, 2]))
    meta = [["pad", "none"]]
    for extra in range(8):
        data = st_spec.write(ts, meta + [["x", "y" * extra]], pad=False)
        if (len(data) - len(st_spec.entries(ts)[1])) % 8 == 3:
            break
    f, d = expect_loads(data, ts, meta + [["x", "y" * extra]], "unpadded")
    check(f["header_len"] % 8 == 3, "N = 3 mod 8")
    check(d["stats"]["unaligned_copies"] > 0, "some tensors were copied")


def load_unaligned_order():
    """A padded header, but the tensors in an order of the writer's choice
    with odd lengths: a C64 at 4 mod 8 is still mapped (cowstore needs half
    its element), the tensors after an odd-length one-byte tensor are
    copied."""
    rng = np.random.default_rng(3)
    ts = [("u8", "U8", [3], values("U8", [3], rng)),
          ("bool", "BOOL", [1], values("BOOL", [1], rng)),
          ("c64.a", "C64", [1], values("C64", [1], rng)),
          ("f16", "F16", [3], values("F16", [3], rng)),
          ("i16", "I16", [1], values("I16", [1], rng)),
          ("u8.b", "U8", [1], values("U8", [1], rng)),
          ("c64.b", "C64", [2], values("C64", [2], rng)),
          ("bf16", "BF16", [2], values("BF16", [2], rng)),
          ("f32", "F32", [2], values("F32", [2], rng)),
          ("f64", "F64", [3], values("F64", [3], rng)),
          ("i64", "I64", [1], values("I64", [1], rng))]
    order = [t[0] for t in ts]
    data = st_spec.write(ts, order=order)
    f, d = expect_loads(data, ts, None, "writer's order")
    offs = {t["name"]: 8 + f["header_len"] + t["begin"] for t in f["tensors"]}
    check(offs["c64.a"] % 8 == 4 and offs["c64.b"] % 4 != 0,
          "the layout has a C64 at 4 mod 8 and one unaligned: %r" % offs)
    copied = {t["name"] for t in d["tensors"] if not t["in_mapping"]}
    check(copied == {"c64.b", "bf16", "f32", "f64", "i64"},
          "copied: %s" % sorted(copied))


def load_whitespace():
    """White space before and after the JSON object (the reference reader
    accepts both since 2026): spaces, tabs, newlines, carriage returns."""
    rng = np.random.default_rng(4)
    ts = every_dtype(rng)
    for lead, trail in ((b" ", b""), (b"", b"\n"), (b" \t\r\n", b"\r\n\t "),
                        (b" " * 16, b" " * 3)):
        ents, blob = st_spec.entries(ts)
        data = st_spec.assemble(st_spec.header_text(ents), blob, True, lead,
                                trail)
        expect_loads(data, ts, None, "white space %r %r" % (lead, trail))


def load_escapes():
    """Names and metadata with text past ASCII and escapes: raw UTF-8, \\u
    escapes with surrogate pairs (ensure_ascii), \\/ and short escapes."""
    rng = np.random.default_rng(5)
    ts = [(name, "F32", [2], values("F32", [2], rng)) for name in ODD_NAMES]
    for ascii_only in (False, True):
        data = st_spec.write(ts, ODD_META, ascii_only=ascii_only)
        expect_loads(data, ts, ODD_META, "escapes (ascii_only=%s)" %
                     ascii_only)
    # \/ and every short escape, written by hand.
    header = (b'{"a\\/b\\b\\f":{"dtype":"U8","shape":[1],'
              b'"data_offsets":[0,1]},"__metadata__":{"\\u00e9\\ud83d\\ude00":'
              b'"\\"\\\\\\/\\n\\r\\t"}}')
    ts = [("a/b\b\f", "U8", [1], b"\x07")]
    expect_loads(st_spec.assemble(header, b"\x07"), ts,
                 [["\u00e9\U0001F600", '"\\/\n\r\t']], "short escapes")


def load_empty():
    """No tensor: "{}", metadata only, and 8 + N exactly the file; and
    tensors with no element whose other sizes are huge, as the reference
    reader checks them: its element count is a checked product from the
    left, so [0, 2**62, 2**62] loads and [2**62, 2**62, 0] is refused
    (load_empty's refusal is in overflow())."""
    expect_loads(st_spec.assemble(b"{}", b"", pad=False), [], None, "{}")
    expect_loads(st_spec.write([], [["only", "metadata"]]), [],
                 [["only", "metadata"]], "metadata only")
    ts = [("early", "F32", [0, 2 ** 62, 2 ** 62], b"")]
    expect_loads(st_spec.write(ts), ts, None, "zero-size, huge sizes")


# ---------------------------------------------------------------------------
# One file per rule.

def base_file():
    """The valid file each rule's file is made from: b (I64 [4]) then a
    (F32 [2, 3]) in the data, padded."""
    a = struct.pack("<6f", *range(6))
    b = struct.pack("<4q", -1, 2, -3, 4)
    return [("a", "F32", [2, 3], a), ("b", "I64", [4], b)]


def expect_reject(data, patterns, what, spec_rejects=True):
    """cowstore refuses @data with COW_EFORMAT and a message matching
    every regex in @patterns, mapped and with pread; the independent
    reader refuses it too (unless it is a limit of cowstore's own)."""
    path = put("bad.safetensors", data)
    for pread in (False, True):
        r = dump(path, pread)
        check(isinstance(r, tuple) and r[1] == "COW_EFORMAT",
              "%s: expected COW_EFORMAT, got %r" % (what, r if isinstance(
                  r, tuple) else "a loaded file"))
        msg = r[2]
        check(path in msg, "%s: the message names the file: %s" % (what,
                                                                    msg))
        for p in patterns:
            check(re.search(p, msg) is not None,
                  "%s: message %r lacks /%s/" % (what, msg, p))
    try:
        st_spec.read(data)
        rejected = False
    except st_spec.FormatError:
        rejected = True
    check(rejected == spec_rejects, "%s: the independent reader %s it" % (
        what, "accepts" if not rejected else "refuses"))


def from_base(change_entries=None, change_header=None, change_file=None,
              pad=True, metadata=None):
    """The base file with one change: to the entries (a function of a dict
    name -> info), to the header text, or to the whole file's bytes."""
    ts = base_file()
    ents, blob = st_spec.entries(ts)
    if change_entries is not None:
        d = dict((n, i) for n, i in ents)
        change_entries(d)
        ents = list(d.items()) if not isinstance(d, list) else d
    header = st_spec.header_text(ents, metadata)
    if change_header is not None:
        header = change_header(header)
    data = st_spec.assemble(header, blob, pad)
    if change_file is not None:
        data = change_file(data)
    return data


def base_loads():
    """The unchanged base file loads: a rule's file breaks that rule
    alone."""
    ts = base_file()
    expect_loads(from_base(), ts, None, "the base file")


def reject_short():
    base_loads()
    for n in range(8):
        expect_reject(b"\x02" * n, [r"the file is %d bytes, shorter than "
                                    r"the 8-byte header length" % n],
                      "%d bytes" % n)


def reject_header_too_long():
    base_loads()
    # N = 100,000,001 over a file that holds it (sparse): only N is wrong.
    path = os.path.join(TMP, "bad.safetensors")
    n = 100_000_001
    head = b'{"__metadata__":{"k":"v"}}'
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + head)
        f.truncate(8 + n)
    for pread in (False, True):
        r = dump(path, pread)
        check(isinstance(r, tuple) and r[1] == "COW_EFORMAT" and re.search(
            r"header length 100000001 is above the limit of 100000000",
            r[2]) is not None, "N above the limit: %r" % (r,))
    os.unlink(path)
    # The limit itself is allowed: N = 100,000,000 of JSON and spaces.
    n = 100_000_000
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + head)
        f.write(b" " * (n - len(head)))
    r = dump(path)
    check(isinstance(r, dict) and r["metadata"] == [["k", "v"]],
          "N = 100,000,000 (the limit) loads: %r" % (r if isinstance(r, tuple)
                                                     else "ok",))
    os.unlink(path)


def reject_header_past_end():
    base_loads()
    data = from_base()
    (n,) = struct.unpack("<Q", data[:8])
    cut = data[:8 + n - 1]
    expect_reject(cut, [r"header length %d: 8 \+ %d bytes is past the end "
                        r"of the file \(%d bytes\)" % (n, n, len(cut))],
                  "8 + N one byte past the end")
    big = struct.pack("<Q", len(data)) + data[8:]
    expect_reject(big, [r"header length %d: .* past the end of the file "
                        r"\(%d bytes\)" % (len(data), len(data))],
                  "N longer than the file")


def reject_not_utf8():
    base_loads()
    for bad, label in ((b"\xff", "0xff"), (b"\xc0\xaf", "overlong"),
                       (b"\xed\xa0\x80", "surrogate"),
                       (b"\xe6\x97", "truncated"),
                       (b"\xf4\x90\x80\x80", "past U+10FFFF")):
        def change(h):
            return h.replace(b'"a"', b'"a' + bad + b'"')
        data = from_base(change_header=change)
        at = data.index(bad) - 8
        expect_reject(data, [r"the header is not valid UTF-8 \(header byte "
                             r"%d\)" % at], "not UTF-8 (%s)" % label)


def reject_not_object():
    base_loads()
    for text, found in ((b"[]", "'\\['"), (b'"a"', "'\"'"), (b"1", "'1'"),
                        (b"null", "'n'"), (b"", "the end of the header"),
                        (b"   ", "the end of the header")):
        data = st_spec.assemble(text, b"", pad=False)
        expect_reject(data, [r"expected '\{' at the start \(the header must "
                             r"be a JSON object\), found " + found],
                      "header %r" % text)


def reject_malformed_json():
    base_loads()
    cases = [
        (lambda h: h[:-1], r"expected '\}' to end the header's object, found "
         r"the end of the header \(header byte \d+\)", "no closing brace"),
        (lambda h: h[:-1] + b",}", r"expected '\"' to start a string, found "
         r"'\}' \(header byte \d+\)", "trailing comma"),
        (lambda h: h.replace(b'"a":', b"a:"), r"expected '\"' to start a "
         r"string, found 'a' \(header byte \d+\)", "unquoted key"),
        (lambda h: h.replace(b'"a":', b'"a"'), r"expected ':' after a key, "
         r"found '\{' \(header byte \d+\)", "missing colon"),
        (lambda h: h + b"{}", r"bytes after the header's JSON object "
         r"\(header byte \d+\)", "two objects"),
        (lambda h: h.replace(b'"a"', b'"a\\x"'), r"unknown escape \\x",
         "bad escape"),
        (lambda h: h.replace(b'"a"', b'"a\\ud800"'), r"a high surrogate "
         r"\\ud800 without its low surrogate", "lone surrogate"),
        (lambda h: h.replace(b'"a"', b'"a\x01"'), r"control character 0x01 "
         r"in a string", "raw control character"),
        (lambda h: h.replace(b'"a"', b'"a\\u12"'), r"a \\u escape needs four "
         r"hex digits", "short \\u escape"),
        # In a field the reader skips (a tensor's unknown key), a bad
        # escape of a byte that is not printable.
        (lambda h: h.replace(b'"dtype"', b'"x":"\\\x01","dtype"', 1),
         r'tensor "a": unknown escape \\byte 0x01 \(header byte \d+\)',
         "bad escape of byte 0x01 in a skipped field"),
    ]
    for change, pattern, label in cases:
        expect_reject(from_base(change_header=change), [pattern], label)


def reject_unknown_dtype():
    base_loads()

    def change(d):
        d["a"]["dtype"] = "F33"
    expect_reject(from_base(change), [r'tensor "a": unknown dtype "F33"'],
                  "dtype F33")

    def lower(d):
        d["b"]["dtype"] = "i64"
    expect_reject(from_base(lower), [r'tensor "b": unknown dtype "i64"'],
                  "dtype i64 (case matters)")


def reject_dtype_cowstore_lacks():
    base_loads()
    for name in ("F8_E4M3", "F8_E5M2"):
        def change(d):
            d["a"]["dtype"] = name
            d["a"]["shape"] = [4, 6]  # 24 one-byte elements, same extent
        expect_reject(from_base(change), [
            r'tensor "a": dtype %s is valid safetensors but cowstore has no '
            r'such dtype' % name], name, spec_rejects=False)


def reject_shape_not_non_negative_integers():
    base_loads()
    cases = [([-2, 3], r'tensor "a": .*shape.* is negative \(found -2\)',
              "negative"),
             ([2.0, 3], r'tensor "a": .*shape.* is not an integer \(found '
              r'2\.0\)', "float"),
             (["2", 3], r'tensor "a": .*shape.* is not an integer \(found '
              r'\'"\'\)', "string"),
             ([2, None], r'tensor "a": .*shape.* is not an integer \(found '
              r"'n'\)", "null")]
    for shape, pattern, label in cases:
        def change(d):
            d["a"]["shape"] = shape
        expect_reject(from_base(change), [pattern], "shape %s" % label)
    expect_reject(from_base(change_header=lambda h: h.replace(
        b'"shape":[2,3]', b'"shape":[2,3e0]')), [
        r'tensor "a": .*shape.* is not an integer \(found 3e0\)'],
        "shape with an exponent")

    def not_list(d):
        d["a"]["shape"] = 6
    expect_reject(from_base(not_list), [r"expected '\[' for a shape \(a list "
                                        r"of non-negative integers\), found "
                                        r"'6'", r'tensor "a"'],
                  "shape not a list")


def reject_size_overflow():
    base_loads()
    # 2**62 x 4 float32: the element count fits, times 4 bytes it does not.
    # [2**62, 2**62, 0]: the product from the left overflows before the
    # zero; [2**60, 2]: the count fits, times 32 bits it does not (the
    # reference reader counts bits).
    for shape, label in (([2 ** 62, 4], "count x size"),
                         ([2 ** 32, 2 ** 32, 2], "the count itself"),
                         ([2 ** 62, 2 ** 62, 0], "before a zero"),
                         ([2 ** 60, 2], "count x bits")):
        def change(d):
            d["a"]["shape"] = shape
        expect_reject(from_base(change), [
            r'tensor "a": shape \[%s\] of F32: its element count times its '
            r'element size overflows' % ", ".join(map(str, shape))],
            "overflow (%s)" % label)

    def huge(d):
        d["a"]["shape"] = [2 ** 63]
    expect_reject(from_base(huge), [r'tensor "a": size 9223372036854775808 '
                                    r'does not fit in 63 bits'],
                  "a size past 63 bits")


def reject_end_before_begin():
    base_loads()

    def change(d):
        d["a"]["data_offsets"] = [56, 32]
    expect_reject(from_base(change), [r'tensor "a": data_offsets \[56, 32\] '
                                      r'end before they begin'],
                  "end before begin")


def reject_gap():
    base_loads()

    def change(d):
        d["a"]["data_offsets"] = [40, 64]

    def longer(data):
        return data + b"\0" * 8
    expect_reject(from_base(change, change_file=longer), [
        r'the tensors do not cover the data exactly: "a" begins at 40, but '
        r'"b" before it ends at 32 \(a gap\)'], "gap")

    def first(d):
        d["b"]["data_offsets"] = [8, 40]
        d["a"]["data_offsets"] = [40, 64]
    expect_reject(from_base(first, change_file=longer), [
        r'the first, "b", begins at 8, not 0'], "gap before the first")


def reject_overlap():
    base_loads()

    def change(d):
        d["a"]["data_offsets"] = [24, 48]

    def shorter(data):
        return data[:-8]
    expect_reject(from_base(change, change_file=shorter), [
        r'"a" begins at 24, but "b" before it ends at 32 \(an overlap\)'],
        "overlap")


def reject_extent():
    base_loads()

    def change(d):
        d["a"]["shape"] = [2, 2]
    expect_reject(from_base(change), [
        r'tensor "a": data_offsets \[32, 56\] span 24 bytes, but shape '
        r'\[2, 2\] of F32 needs 16'], "extent larger than the shape")

    def dtype(d):
        d["b"]["dtype"] = "I32"
    expect_reject(from_base(dtype), [
        r'tensor "b": data_offsets \[0, 32\] span 32 bytes, but shape \[4\] '
        r'of I32 needs 16'], "extent of another dtype")


def reject_bytes_after_last():
    base_loads()
    expect_reject(from_base(change_file=lambda d: d + b"12345"), [
        r'5 bytes after the last tensor \("a" ends at 56 of 61\)'],
        "5 bytes after the last tensor")
    expect_reject(st_spec.assemble(b"{}", b"xyz"), [
        r"3 bytes after the header, which lists no tensor"],
        "bytes after a header with no tensor")
    expect_reject(from_base(change_file=lambda d: d[:-4]), [
        r'tensor "a" ends at 56, past the end of the file\'s data '
        r'\(52 bytes\)'], "the last tensor cut short")


def reject_duplicate_names():
    base_loads()

    ts = base_file()
    ents, blob = st_spec.entries(ts)
    ents = [["a", ents[0][1]], ["a", dict(ents[1][1], dtype="F32",
                                          shape=[8])]]
    data = st_spec.assemble(st_spec.header_text(ents), blob)
    expect_reject(data, [r'duplicate tensor name "a"'], "duplicate names")


def reject_duplicate_fields():
    """A field given twice in a tensor's entry: readers that keep the
    first and readers that keep the last would see different tensors (the
    reference reader, serde's derived one, refuses it)."""
    base_loads()
    for field, dup in ((b'"dtype":"F32"', b'"dtype":"I32","dtype":"F32"'),
                       (b'"shape":[2,3]', b'"shape":[3,2],"shape":[2,3]'),
                       (b'"data_offsets":[32,56]',
                        b'"data_offsets":[0,24],"data_offsets":[32,56]')):
        name = field.split(b'"')[1].decode()
        expect_reject(from_base(change_header=lambda h: h.replace(
            field, dup, 1)), [r'tensor "a": two %ss? \(header byte \d+\)' %
                                  name], "%s twice" % name)


def reject_metadata():
    base_loads()
    cases = [
        (b'{"k":1}', r'__metadata__ value of "k" is not a string',
         "a number"),
        (b'{"k":null}', r'__metadata__ value of "k" is not a string',
         "null"),
        (b'{"k":{"x":"y"}}', r'__metadata__ value of "k" is not a string',
         "an object"),
        (b'{"k":["v"]}', r'__metadata__ value of "k" is not a string',
         "a list"),
        (b'["k","v"]', r"expected '\{' for __metadata__ \(it must be an "
         r"object of strings\), found '\['", "a list for __metadata__"),
        (b'"kv"', r"expected '\{' for __metadata__", "a string for "
         r"__metadata__"),
        (b'{"k":"v","k":"w"}', r'duplicate __metadata__ key "k"',
         "duplicate keys"),
    ]
    for meta, pattern, label in cases:
        def change(h):
            return h.replace(b"{", b'{"__metadata__":' + meta + b",", 1)
        expect_reject(from_base(change_header=change), [pattern],
                      "metadata: %s" % label)

    def twice(h):
        return h.replace(b"{", b'{"__metadata__":{},"__metadata__":{},', 1)
    expect_reject(from_base(change_header=twice),
                  [r'duplicate key "__metadata__"'], "two __metadata__")


def reject_data_offsets():
    """data_offsets: two non-negative integers (a rule the table folds into
    begin <= end)."""
    base_loads()
    for offs, pattern in (([0, 24, 48], r"expected '\]' after data_offsets' "
                           r"two integers"),
                          ([24], r"expected ',' in data_offsets"),
                          ([-1, 24], r"data_offsets\[0\] is negative"),
                          ([0.0, 24], r"data_offsets\[0\] is not an "
                           r"integer")):
        def change(d):
            d["a"]["data_offsets"] = offs
        expect_reject(from_base(change), [pattern, r'tensor "a"'],
                      "data_offsets %r" % offs)

    def missing(d):
        del d["a"]["data_offsets"]
    expect_reject(from_base(missing), [r'tensor "a" has no data_offsets'],
                  "no data_offsets")


def reject_cowstore_limits():
    """A valid file past cowstore's own limits: more than 16 dimensions,
    and a name with \\u0000 (a C string cannot hold it)."""
    base_loads()

    def dims(d):
        d["a"]["shape"] = [1] * 15 + [2, 3]
    expect_reject(from_base(dims), [r'tensor "a": 17 dimensions; cowstore '
                                    r'tensors have at most 16'],
                  "17 dimensions", spec_rejects=False)
    expect_reject(from_base(change_header=lambda h: h.replace(
        b'"a"', b'"a\\u0000"')), [r"\\u0000 in a string"], "\\u0000 in a "
        "name", spec_rejects=False)


CASES = {}
for _mode in ("stream", "persist"):
    for _how in ("sync", "job"):
        CASES["save_%s_%s" % (_mode, _how)] = (
            lambda m=_mode, h=_how: save_case(m, h))
for _f in (load_aligned, load_unpadded, load_unaligned_order, load_whitespace,
           load_escapes, load_empty, reject_short, reject_header_too_long,
           reject_header_past_end, reject_not_utf8, reject_not_object,
           reject_malformed_json, reject_unknown_dtype,
           reject_dtype_cowstore_lacks,
           reject_shape_not_non_negative_integers, reject_size_overflow,
           reject_end_before_begin, reject_gap, reject_overlap,
           reject_extent, reject_bytes_after_last, reject_duplicate_names,
           reject_duplicate_fields, reject_metadata, reject_data_offsets, reject_cowstore_limits):
    CASES[_f.__name__] = _f


def main():
    global TOOL, TMP
    if len(sys.argv) == 2 and sys.argv[1] == "list":
        print(" ".join(CASES))
        return
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit("usage: st_interop.py CASE|list ST_TOOL")
    TOOL = sys.argv[2]
    TMP = tempfile.mkdtemp(prefix="cow-st-py-")
    try:
        CASES[sys.argv[1]]()
    finally:
        shutil.rmtree(TMP)
    print("st_interop %s: %d checks passed" % (sys.argv[1], checks))


if __name__ == "__main__":
    main()
