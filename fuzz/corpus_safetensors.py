#!/usr/bin/python3
"""corpus_safetensors.py - write the seed files of fuzz_safetensors.

    /usr/bin/python3 fuzz/corpus_safetensors.py

writes fuzz/corpus/fuzz_safetensors/ (valid files, and one or more files
per rule, each breaking that rule alone), the negative control's input
fuzz/controls/fuzz_safetensors/ and its fuzzing run's seeds (the valid
files) fuzz/controls/fuzz_safetensors_valid/. The files are committed; run this again
after changing it. It replaces the files it writes (valid--*, rule-*) and
leaves the others (fuzzer findings, kept under their own names) alone.

Names: valid--<what> must be accepted, rule-<rule>--<what> refused for
<rule> (the validator's rule names, fuzz/safetensors_ref.c); the test
fuzz.corpus.fuzz_safetensors checks both (fuzz/check_corpus.cmake).

Written from the format alone (struct and json): 8 bytes little-endian N,
N bytes of JSON, the data.
"""
import json
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus", "fuzz_safetensors")
CONTROLS = os.path.join(HERE, "controls", "fuzz_safetensors")
# The fuzzing-level control's seeds: the valid files.
VALID = os.path.join(HERE, "controls", "fuzz_safetensors_valid")

SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4,
        "I64": 8, "U64": 8, "F16": 2, "BF16": 2, "F32": 4, "F64": 8,
        "C64": 8}


def pattern(name, nbytes, dtype):
    """Deterministic bytes for a tensor (0/1 for BOOL)."""
    seed = sum(name.encode()) + 7
    if dtype == "BOOL":
        return bytes((seed + i) % 2 for i in range(nbytes))
    return bytes((seed * 31 + i * 101) % 256 for i in range(nbytes))


def frame(header, data=b"", n=None):
    """A file: N (default: the header's length), header, data."""
    if isinstance(header, str):
        header = header.encode()
    return struct.pack("<Q", len(header) if n is None else n) + header + data


def pad8(text, lead=""):
    """Spaces after the JSON so that 8 + N is a multiple of 8."""
    size = len((lead + text).encode())
    return lead + text + " " * (-size % 8)


def build(tensors, metadata=None, layout="aligned", pad=True):
    """tensors: [(name, dtype, shape)] in the header's order. layout
    "aligned": the data by descending element size, then name (the
    reference writer's order); "given": in the header's order.
    Returns (header text, data)."""
    order = list(tensors)
    if layout == "aligned":
        order.sort(key=lambda t: (-SIZE[t[1]], t[0]))
    offsets, data, pos = {}, b"", 0
    for name, dtype, shape in order:
        nbytes = math.prod(shape) * SIZE[dtype]
        offsets[name] = [pos, pos + nbytes]
        data += pattern(name, nbytes, dtype)
        pos += nbytes
    head = {}
    if metadata is not None:
        head["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        head[name] = {"dtype": dtype, "shape": list(shape),
                      "data_offsets": offsets[name]}
    text = json.dumps(head, separators=(",", ":"), ensure_ascii=False)
    return (pad8(text) if pad else text), data


def file_of(tensors, metadata=None, layout="aligned", pad=True):
    text, data = build(tensors, metadata, layout, pad)
    return frame(text, data)


def entry(dtype, shape, begin, end, extra=""):
    return ('{"dtype":%s,"shape":%s,"data_offsets":[%d,%d]%s}'
            % (json.dumps(dtype), json.dumps(shape), begin, end, extra))


# A small valid base: "a" F32 [2] at [0, 8], "b" U8 [3] at [8, 11].
A = entry("F32", [2], 0, 8)
B = entry("U8", [3], 8, 11)
BASE_DATA = pattern("a", 8, "F32") + pattern("b", 3, "U8")


def base(a=A, b=B, data=BASE_DATA, before="", after="", meta=None):
    """The base file with parts replaced (raw JSON text)."""
    members = []
    if meta is not None:
        members.append('"__metadata__":' + meta)
    members += ['"a":' + a, '"b":' + b]
    return frame(before + "{" + ",".join(members) + "}" + after, data)


def raw(text, data=b""):
    return frame(text, data)


def files():
    out = {}

    # --- valid ------------------------------------------------------
    out["valid--every-dtype"] = file_of(
        [("bool", "BOOL", [3]), ("u8", "U8", [2, 3]),
         ("i8", "I8", [1, 1, 1]), ("i16", "I16", [4]),
         ("u16", "U16", [2, 2]), ("i32", "I32", [3]), ("u32", "U32", [1]),
         ("i64", "I64", [2]), ("u64", "U64", []),
         ("f16", "F16", [2, 3, 1]), ("bf16", "BF16", [5]),
         ("f32", "F32", [2, 2]), ("f64", "F64", [3]), ("c64", "C64", [2])],
        metadata={"format": "pt", "note": "\u00e9t\u00e9 \u2713 \"q\"\n"})
    out["valid--empty-header"] = raw("{}")
    out["valid--empty-header-padded"] = raw("{}      ")
    out["valid--metadata-only"] = raw(pad8('{"__metadata__":{"k":"v"}}'))
    out["valid--empty-metadata"] = base(meta="{}")
    out["valid--zero-size-tensors"] = file_of(
        [("first", "F32", [0]), ("x", "I16", [3]), ("mid", "U8", [3, 0]),
         ("y", "U8", [2]), ("last", "C64", [0, 4])], layout="given")
    # Equal begins: a zero-size tensor at the offset of one with bytes,
    # listed after it, and one at the very end.
    out["valid--zero-size-ties"] = raw(
        '{"big":' + entry("U8", [4], 0, 4) + ',"e0":' +
        entry("F32", [0], 0, 0) + ',"e4":' + entry("I64", [2, 0], 4, 4) +
        "}", pattern("big", 4, "U8"))
    # Sizes up to INT64_MAX with a 0 elsewhere: 0 elements, as long as the
    # product from the left never overflows on the way (a partial product
    # above 2^64 is rule-overflow--before-a-zero).
    out["valid--zero-size-huge-sizes"] = raw(
        '{"p":' + entry("U8", [0, 9223372036854775807], 0, 0) +
        ',"q":' + entry("F64", [9223372036854775807, 0], 0, 0) + "}")
    out["valid--whitespace"] = raw(
        ' \t\r\n{ "a" :\t{ "dtype" : "F32" ,\n"shape" : [ 2 ] , '
        '"data_offsets" : [ 0 , 8 ] } ,\r\n "b":{"dtype":"U8","shape":'
        '[3],"data_offsets":[8,11]}\n}\n\t \r', BASE_DATA)
    # Unaligned: an unpadded header and the data in the header's order.
    out["valid--unaligned"] = file_of(
        [("u8", "U8", [3]), ("f32", "F32", [2]), ("b", "BOOL", [1]),
         ("f64", "F64", [1]), ("i16", "I16", [3]), ("c64", "C64", [1])],
        layout="given", pad=False)
    # C64 needs 4-byte alignment (one part, tensor.h), F64 8: at 4 mod 8
    # the first is mapped as it is, the second copied.
    out["valid--complex-at-4-mod-8"] = raw(
        pad8('{"u":' + entry("U32", [1], 0, 4) + ',"c":' +
             entry("C64", [1], 4, 12) + ',"d":' + entry("F64", [1], 12, 20) +
             ',"v":' + entry("U32", [1], 20, 24) + "}"),
        pattern("x", 24, "U8"))
    out["valid--unknown-keys"] = base(
        a=entry("F32", [2], 0, 8, ',"extra":{"x":[1,-2.5e-3,1E+2,true,'
                'false,null,{"y":"\\u00e9"}],"x":0},"":[]'),
        b='{"note":"\\"}\\"","dtype":"U8","z":1,"shape":[3],"z":2,'
          '"data_offsets":[8,11],"nested":[[[[{}]]]]}')
    out["valid--escaped-names"] = file_of(
        [("\u00e9t\u00e9", "U8", [1]), ("emoji \U0001F600", "U8", [2]),
         ("quote\"back\\slash/", "U8", [1]), ("tab\tnl\n", "U8", [1]),
         ("\u65e5\u672c", "U8", [1]), ("", "U8", [1]),
         ("__metadata", "U8", [1]), ("__METADATA__", "U8", [1])],
        metadata={"k\u00e9y": "v\U0001F600", "": ""})
    # The same names, escaped in the JSON (ensure_ascii, \/ and a
    # surrogate pair), and escaped keys and dtype.
    out["valid--escaped-json"] = raw(
        '{"\\u00e9t\\u00e9":{"dtype":"U\\u0038","shape":[1],'
        '"d\\u0061ta_offsets":[0,1]},"emoji \\ud83d\\ude00":'
        '{"\\u0064type":"U8","shape":[2],"data_offsets":[1,3]},'
        '"slash\\/":' + entry("U8", [1], 3, 4) + ','
        '"\\u005f_metadata__":{"a\\nb":"\\b\\f\\r\\t\\\\"}}',
        bytes([1, 2, 3, 4]))
    out["valid--scalar"] = file_of([("s", "U64", []), ("t", "BF16", [])])
    out["valid--16-dims"] = file_of([("d16", "F32", [1] * 15 + [2])])
    out["valid--header-order"] = file_of(
        [("z", "U8", [1]), ("y", "U8", [2]), ("x", "U8", [3])],
        layout="given")
    out["valid--many-tensors"] = file_of(
        [("t%02d" % i, ["U8", "I16", "F32", "F64"][i % 4], [i % 3 + 1])
         for i in range(40)], metadata={"n": "40"})

    # --- file_too_short, header_too_large, header_past_end --------------
    out["rule-file_too_short--empty"] = b""
    out["rule-file_too_short--seven-bytes"] = b"\x02\x00\x00\x00\x00\x00\x00"
    out["rule-header_too_large--100000001"] = frame("{}", n=100000001)
    out["rule-header_too_large--u64-max"] = frame("{}", n=2**64 - 1)
    out["rule-header_past_end--by-one"] = frame("{}  ", n=5)

    # --- utf8 -----------------------------------------------------------
    for what, bad in [("ff", b"\xff"), ("overlong-slash", b"\xc0\xaf"),
                      ("surrogate", b"\xed\xa0\x80"),
                      ("truncated", b"\xe2\x82"),
                      ("above-10ffff", b"\xf4\x90\x80\x80"),
                      ("lone-continuation", b"\x80")]:
        out["rule-utf8--" + what] = frame(
            b'{"a' + bad + b'":' + A.encode() + b',"b":' + B.encode() +
            b"}", BASE_DATA)
    out["rule-utf8--in-padding"] = frame(
        b'{"a":' + A.encode() + b',"b":' + B.encode() + b"} \xa0",
        BASE_DATA)

    # --- json -----------------------------------------------------------
    out["rule-json--trailing-comma-object"] = base(b=B[:-1] + ",}")
    out["rule-json--trailing-comma-list"] = base(b=entry("U8", [3], 8, 11)
                                                 .replace("[3]", "[3,]"))
    out["rule-json--trailing-comma-header"] = frame(
        '{"a":' + A + ',"b":' + B + ",}", BASE_DATA)
    out["rule-json--comment"] = base(before="/* c */")
    out["rule-json--single-quotes"] = base(b=B.replace('"U8"', "'U8'"))
    out["rule-json--raw-tab-in-string"] = frame(
        '{"a\tb":' + A + ',"b":' + B + "}", BASE_DATA)
    out["rule-json--bad-escape"] = frame(
        '{"\\x61":' + A + ',"b":' + B + "}", BASE_DATA)
    # An unknown escape of a byte that is not printable, in a skipped string
    # (its message once named it "\\byte 0x", cut short).
    out["rule-json--bad-escape-in-skipped-string"] = base(
        a=entry("F32", [2], 0, 8, ',"x":"\\\x7f"'))
    out["rule-json--lone-high-surrogate"] = frame(
        '{"\\ud800":' + A + ',"b":' + B + "}", BASE_DATA)
    out["rule-json--lone-low-surrogate"] = frame(
        '{"\\udc00":' + A + ',"b":' + B + "}", BASE_DATA)
    out["rule-json--high-then-not-low"] = frame(
        '{"\\ud800\\u0041":' + A + ',"b":' + B + "}", BASE_DATA)
    out["rule-json--short-u-escape"] = frame(
        '{"\\u00e":' + A + ',"b":' + B + "}", BASE_DATA)
    out["rule-json--leading-zero"] = base(b=B.replace("[3]", "[03]"))
    out["rule-json--nan"] = base(a=entry("F32", [2], 0, 8, ',"x":NaN'))
    out["rule-json--plus-sign"] = base(a=entry("F32", [2], 0, 8, ',"x":+1'))
    out["rule-json--dot-without-digits"] = base(
        a=entry("F32", [2], 0, 8, ',"x":1.'))
    out["rule-json--true-misspelt"] = base(
        a=entry("F32", [2], 0, 8, ',"x":tru'))
    out["rule-json--unclosed"] = frame('{"a":' + A + ',"b":' + B, BASE_DATA)
    out["rule-json--unclosed-nested"] = base(
        a=entry("F32", [2], 0, 8, ',"x":[[{"y":[]}]'))
    out["rule-json--garbage-after"] = raw("{}x")
    out["rule-json--two-objects"] = raw("{}{}")
    out["rule-json--empty"] = raw("")
    out["rule-json--white-space-only"] = raw("    ")
    out["rule-json--bom"] = frame(b"\xef\xbb\xbf{}")
    # U+00A0, no-break space: UTF-8, but not JSON white space.
    out["rule-json--nbsp-padding"] = frame(
        b'{"a":' + A.encode() + b',"b":' + B.encode() + b"}\xc2\xa0",
        BASE_DATA)
    out["rule-json--nul-byte-padding"] = frame(b"{}\x00\x00")
    out["rule-json--missing-colon"] = base(b=B.replace('"dtype":', '"dtype" '))
    out["rule-json--unquoted-key"] = frame("{a:" + A + ',"b":' + B + "}",
                                           BASE_DATA)
    # --- not_object -----------------------------------------------------
    out["rule-not_object--array"] = raw("[]")
    out["rule-not_object--string"] = raw('"{}"')
    out["rule-not_object--null"] = raw("null")

    # --- nul (cowstore refuses \u0000 in names and metadata) -------------
    out["rule-nul--name"] = frame('{"a\\u0000":' + A + ',"b":' + B + "}",
                                  BASE_DATA)
    out["rule-nul--metadata-value"] = base(meta='{"k":"v\\u0000"}')
    out["rule-nul--metadata-key"] = base(meta='{"k\\u0000":"v"}')
    # Where cowstore keeps no string, \u0000 is fine (the format's rule).
    out["valid--nul-in-ignored-strings"] = base(
        a=entry("F32", [2], 0, 8, ',"x\\u0000":"\\u0000",'
                '"dtype\\u0000":[]'))

    # --- depth (128 levels from the top: an ignored value in a tensor's
    # entry may hold 125 more below it) ---------------------------------
    deep = lambda k: base(a=entry("F32", [2], 0, 8,
                                  ',"x":' + "[" * k + "]" * k))
    out["valid--depth-126-arrays"] = deep(126)
    out["rule-depth--127-arrays"] = deep(127)
    deepo = lambda k: base(a=entry("F32", [2], 0, 8,
                                   ',"x":' + '{"y":' * k + "1" + "}" * k))
    out["valid--depth-125-objects"] = deepo(125)
    out["rule-depth--126-objects"] = deepo(126)

    # --- entry ----------------------------------------------------------
    out["rule-entry--not-object"] = base(b="[8,11]")
    out["rule-entry--null"] = base(b="null")
    out["rule-entry--missing-dtype"] = base(
        b='{"shape":[3],"data_offsets":[8,11]}')
    out["rule-entry--missing-shape"] = base(
        b='{"dtype":"U8","data_offsets":[8,11]}')
    out["rule-entry--missing-data_offsets"] = base(
        b='{"dtype":"U8","shape":[3]}')
    out["rule-entry--dtype-twice"] = base(
        b='{"dtype":"U8","dtype":"U8","shape":[3],"data_offsets":[8,11]}')
    out["rule-entry--shape-twice"] = base(
        b='{"dtype":"U8","shape":[3],"shape":[3],"data_offsets":[8,11]}')
    out["rule-entry--data_offsets-twice"] = base(
        b='{"dtype":"U8","shape":[3],"data_offsets":[8,11],'
          '"data_offsets":[8,11]}')

    # --- dtype ----------------------------------------------------------
    for what, dt in [("unknown", "F128"), ("lowercase", "u8"),
                     ("complex128", "C128"), ("space", "U8 "),
                     ("empty", "")]:
        out["rule-dtype--" + what] = base(b=entry(dt, [3], 8, 11))
    for dt in ["F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
               "F8_E5M2FNUZ"]:
        out["rule-dtype--" + dt] = base(b=entry(dt, [3], 8, 11))
    out["rule-dtype--F4"] = base(b=entry("F4", [2], 8, 9),
                                 data=BASE_DATA[:9])
    out["rule-dtype--F6_E2M3"] = base(b=entry("F6_E2M3", [4], 8, 11))
    out["rule-dtype--F6_E3M2"] = base(b=entry("F6_E3M2", [4], 8, 11))
    out["rule-dtype--nul"] = base(b=entry("U8\u0000", [3], 8, 11))
    out["rule-dtype--number"] = base(
        b='{"dtype":1,"shape":[3],"data_offsets":[8,11]}')

    # --- ndim, shape, overflow ------------------------------------------
    out["rule-ndim--17"] = base(b=entry("U8", [1] * 16 + [3], 8, 11))
    for what, shape in [("negative", "[-3]"), ("float", "[3.0]"),
                        ("exponent", "[3e0]"), ("minus-zero", "[3,-0]"),
                        ("not-list", "3"), ("string-size", '["3"]'),
                        ("null-size", "[null]"), ("nested", "[[3]]"),
                        ("above-int64", "[0,9223372036854775808]"),
                        ("above-u64", "[0,18446744073709551616]")]:
        out["rule-shape--" + what] = base(
            b='{"dtype":"U8","shape":%s,"data_offsets":[8,11]}' % shape)
    out["rule-overflow--count"] = base(
        b=entry("U8", [4294967296, 4294967296], 8, 11))
    out["rule-overflow--bytes"] = base(
        b=entry("F64", [2305843009213693952], 8, 11))
    # The reference reader's count: a checked product from the left (a
    # later 0 does not save it), then in bits.
    out["rule-overflow--before-a-zero"] = base(
        b=entry("U8", [4611686018427387904, 4611686018427387904, 0], 8, 8),
        data=BASE_DATA[:8])
    out["rule-overflow--bits"] = base(
        b=entry("F32", [1152921504606846976, 2], 8, 11))

    # --- offsets, end_before_begin, extent -------------------------------
    for what, offs in [("one", "[8]"), ("three", "[8,11,11]"),
                       ("empty", "[]"), ("negative", "[-8,11]"),
                       ("float", "[8,11.0]"), ("not-list", "8"),
                       ("string", '["8","11"]'),
                       ("above-u64", "[8,18446744073709551616]")]:
        out["rule-offsets--" + what] = base(
            b='{"dtype":"U8","shape":[3],"data_offsets":%s}' % offs)
    out["rule-end_before_begin--swapped"] = raw(
        '{"a":' + entry("U8", [0], 3, 0) + "}")
    out["rule-extent--short"] = base(b=entry("U8", [3], 8, 10),
                                     data=BASE_DATA[:10])
    out["rule-extent--long"] = base(b=entry("U8", [2], 8, 11))
    out["rule-extent--element-size"] = base(a=entry("I16", [2], 0, 8))

    # --- duplicate_name -------------------------------------------------
    out["rule-duplicate_name--twice"] = frame(
        '{"a":' + A + ',"a":' + entry("U8", [3], 8, 11) + "}", BASE_DATA)
    out["rule-duplicate_name--escaped"] = frame(
        '{"a":' + A + ',"\\u0061":' + entry("U8", [3], 8, 11) + "}",
        BASE_DATA)

    # --- coverage, trailing ---------------------------------------------
    out["rule-coverage--gap"] = base(b=entry("U8", [3], 9, 12),
                                     data=BASE_DATA + b"\x00")
    out["rule-coverage--overlap"] = base(b=entry("U8", [3], 7, 10),
                                         data=BASE_DATA[:10])
    out["rule-coverage--not-from-zero"] = base(
        a=entry("F32", [2], 1, 9), b=entry("U8", [3], 9, 12),
        data=BASE_DATA + b"\x00")
    out["rule-coverage--past-end"] = base(data=BASE_DATA[:10])
    out["rule-coverage--zero-size-inside"] = frame(
        '{"a":' + A + ',"b":' + B + ',"e":' + entry("U8", [0], 4, 4) + "}",
        BASE_DATA)
    out["rule-coverage--zero-size-past-end"] = frame(
        '{"a":' + A + ',"b":' + B + ',"e":' + entry("U8", [0], 12, 12) +
        "}", BASE_DATA)
    out["rule-trailing--one-byte"] = base(data=BASE_DATA + b"\x00")
    out["rule-trailing--empty-header-with-data"] = raw("{}", b"\x00")
    out["rule-trailing--after-zero-size"] = raw(
        '{"e":' + entry("F32", [0], 0, 0) + "}", b"\x00\x00\x00\x00")

    # --- metadata -------------------------------------------------------
    out["valid--metadata-null"] = base(meta="null")
    for what, meta in [("number", "1"), ("array", '["k","v"]'),
                       ("string", '"k"'),
                       ("value-number", '{"k":1}'),
                       ("value-null", '{"k":null}'),
                       ("value-object", '{"k":{}}'),
                       ("value-array", '{"k":["v"]}')]:
        out["rule-metadata--" + what] = base(meta=meta)
    out["rule-metadata_duplicate--key"] = base(meta='{"k":"v","k":"w"}')
    out["rule-metadata_duplicate--escaped-key"] = base(
        meta='{"k":"v","\\u006b":"w"}')
    out["rule-metadata_duplicate--twice"] = frame(
        '{"__metadata__":{},"a":' + A + ',"b":' + B +
        ',"__metadata__":{}}', BASE_DATA)
    return out


def main():
    for d in (CORPUS, CONTROLS, VALID):
        os.makedirs(d, exist_ok=True)
    for d in (CORPUS, VALID):
        for name in os.listdir(d):
            if name.startswith("valid--") or name.startswith("rule-"):
                os.unlink(os.path.join(d, name))
    made = files()
    for name, data in sorted(made.items()):
        for d in (CORPUS, VALID) if name.startswith("valid--") else (CORPUS,):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    # The negative control (a validator that accepts bytes after the last
    # tensor) must be caught on this file.
    with open(os.path.join(CONTROLS, "trailing-one-byte"), "wb") as f:
        f.write(made["rule-trailing--one-byte"])
    print("%d files in %s" % (len(made), CORPUS), file=sys.stderr)


if __name__ == "__main__":
    main()
