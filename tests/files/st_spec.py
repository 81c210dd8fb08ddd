"""st_spec.py - an independent safetensors reader and writer for the tests,
written from the format's specification (huggingface/safetensors README:
an 8-byte little-endian header length N, N bytes of UTF-8 JSON mapping each
name to {"dtype", "shape", "data_offsets": [begin, end]} with offsets into
the byte buffer after the header, end exclusive, and an optional
"__metadata__" object of strings; then the tensors' bytes, little-endian,
row-major), not from cowstore's code: Python's struct and json only.

The writer can also break the format on purpose (tests/files/st_interop.py
makes one file per rule): it builds the header from entries the caller may
change, and lays out the bytes as told (padding, order, white space).
"""
import json
import struct

# Element sizes in bytes, from the specification.
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "I32": 4,
         "U32": 4, "I64": 8, "U64": 8, "F16": 2, "BF16": 2, "F32": 4,
         "F64": 8, "C64": 8}
# dtypes the format has beyond those (bits per element): valid files may
# hold them; cowstore has no such dtypes.
OTHER_BITS = {"F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8,
              "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}
# NumPy's dtype for each (BF16 has none: torch.bfloat16).
NUMPY = {"BOOL": "?", "U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2",
         "I32": "<i4", "U32": "<u4", "I64": "<i8", "U64": "<u8",
         "F16": "<f2", "F32": "<f4", "F64": "<f8", "C64": "<c8"}
# The same bytes as unsigned integers of the element's size.
RAW = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}
MAX_HEADER = 100_000_000


class FormatError(Exception):
    """The file breaks a rule of the format."""


class _Pairs(list):
    """A JSON object as its (key, value) pairs, duplicates kept."""


def _pairs(items):
    return _Pairs(items)


def _check_strings(v):
    """Every string (key or value) is Unicode text: no lone surrogate from
    a \\u escape (JSON's grammar lets one through; the reference reader's
    JSON parser refuses it, and so does this one)."""
    if isinstance(v, str):
        v.encode("utf-8")
    elif isinstance(v, list):
        for x in v:
            if isinstance(v, _Pairs):
                _check_strings(x[0])
                _check_strings(x[1])
            else:
                _check_strings(x)


def _numel(shape):
    """The element count as the reference reader computes it: a product
    from the left in 64 bits, refused once it overflows (a later zero does
    not save it); None when it does."""
    n = 1
    for s in shape:
        n *= s
        if n >= 1 << 64:
            return None
    return n


def read(data):
    """Parse and check a whole file's bytes. Returns a dict: header_len,
    header_text, metadata (list of pairs, or None), tensors (list in the
    header's order of dicts: name, dtype, shape, begin, end, data)."""
    if len(data) < 8:
        raise FormatError("shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER:
        raise FormatError("header length above the limit")
    if 8 + n > len(data):
        raise FormatError("header past the end of the file")
    try:
        text = data[8:8 + n].decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError("header not UTF-8: %s" % e) from None
    try:
        obj = json.loads(text, object_pairs_hook=_pairs)
    except ValueError as e:
        raise FormatError("header not JSON: %s" % e) from None
    if not isinstance(obj, _Pairs):
        raise FormatError("header not a JSON object")
    try:
        _check_strings(obj)
    except UnicodeEncodeError:
        raise FormatError("a lone surrogate in a string") from None
    buf = data[8 + n:]
    metadata = None
    tensors = []
    names = set()
    for key, value in obj:
        if key == "__metadata__":
            if metadata is not None:
                raise FormatError("two __metadata__")
            if not isinstance(value, _Pairs) or not all(
                    isinstance(v, str) for _, v in value):
                raise FormatError("__metadata__ not strings")
            if len({k for k, _ in value}) != len(value):
                raise FormatError("duplicate metadata key")
            metadata = list(value)
            continue
        if key in names:
            raise FormatError("duplicate name %r" % key)
        names.add(key)
        info = dict(value) if isinstance(value, _Pairs) else None
        if info is not None and len(info) != len(value):
            # serde's derived reader (the reference's) refuses a field
            # given twice.
            raise FormatError("tensor %r: a field twice" % key)
        if info is None or not {"dtype", "shape",
                                 "data_offsets"} <= set(info):
            raise FormatError("tensor %r: not an entry" % key)
        dtype, shape, offs = (info["dtype"], info["shape"],
                              info["data_offsets"])
        if dtype in SIZES:
            bits = 8 * SIZES[dtype]
        elif dtype in OTHER_BITS:
            bits = OTHER_BITS[dtype]
        else:
            raise FormatError("tensor %r: dtype %r" % (key, dtype))
        if (not isinstance(shape, list) or
                not all(type(s) is int and s >= 0 for s in shape)):
            raise FormatError("tensor %r: shape %r" % (key, shape))
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(type(o) is int and o >= 0 for o in offs)):
            raise FormatError("tensor %r: data_offsets %r" % (key, offs))
        numel = _numel(shape)
        nbits = None if numel is None else numel * bits
        if nbits is None or nbits >= 1 << 64 or nbits % 8 != 0:
            raise FormatError("tensor %r: size overflows or is not whole "
                              "bytes" % key)
        nbytes = nbits // 8
        begin, end = offs
        if end < begin:
            raise FormatError("tensor %r: end before begin" % key)
        if end - begin != nbytes:
            raise FormatError("tensor %r: extent" % key)
        tensors.append({"name": key, "dtype": dtype, "shape": shape,
                        "begin": begin, "end": end,
                        "data": bytes(buf[begin:end])})
    at = 0
    for t in sorted(tensors, key=lambda t: (t["begin"], t["end"])):
        if t["begin"] != at:
            raise FormatError("gap or overlap at %r" % t["name"])
        at = t["end"]
    if at != len(buf):
        raise FormatError("the data is %d bytes, the tensors %d" %
                          (len(buf), at))
    return {"header_len": n, "header_text": text, "metadata": metadata,
            "tensors": tensors}


def entries(tensors, order=None):
    """Header entries for @tensors (a list of (name, dtype, shape, data)),
    laid out in @order (names; by default the reference writer's:
    descending element size, then name). Returns (entries, data): entries
    a list of [name, {"dtype", "shape", "data_offsets"}] in @tensors'
    order, data the concatenated bytes."""
    by_name = {t[0]: t for t in tensors}
    if order is None:
        order = sorted(by_name, key=lambda n: (-SIZES[by_name[n][1]], n))
    offsets = {}
    chunks = []
    at = 0
    for name in order:
        _, dtype, shape, data = by_name[name]
        assert len(data) == _numel(shape) * SIZES[dtype], name
        offsets[name] = [at, at + len(data)]
        chunks.append(data)
        at += len(data)
    ents = [[name, {"dtype": dtype, "shape": list(shape),
                    "data_offsets": offsets[name]}]
            for name, dtype, shape, _ in tensors]
    return ents, b"".join(chunks)


def header_text(ents, metadata=None, ascii_only=False):
    """The JSON object of @ents (and "__metadata__" first, if given) as
    UTF-8 bytes; \\u escapes for everything past ASCII if @ascii_only."""
    parts = []
    if metadata is not None:
        parts.append(json.dumps("__metadata__") + ":" + "{" + ",".join(
            json.dumps(k, ensure_ascii=ascii_only) + ":" +
            json.dumps(v, ensure_ascii=ascii_only) for k, v in metadata) +
            "}")
    for name, info in ents:
        parts.append(json.dumps(name, ensure_ascii=ascii_only) + ":" +
                     json.dumps(info, separators=(",", ":")))
    return ("{" + ",".join(parts) + "}").encode("utf-8")


def assemble(header, data, pad=True, lead=b"", trail=b"", length=None):
    """A file: the length, @lead + @header + @trail (padded with spaces to
    a multiple of 8 when @pad), then @data. @length overrides N."""
    h = lead + header + trail
    if pad:
        h += b" " * (-len(h) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def write(tensors, metadata=None, order=None, pad=True, lead=b"",
          trail=b"", ascii_only=False):
    """A whole valid file's bytes (see entries, header_text, assemble)."""
    ents, data = entries(tensors, order)
    return assemble(header_text(ents, metadata, ascii_only), data, pad,
                    lead, trail)
