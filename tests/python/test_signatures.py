"""test_signatures.py - every public function, class and method of cowstore
has a signature that inspect.signature reads (the text signature each
docstring of python/src/*.c starts with: "name(sig)\\n--\\n\\n"), so help(),
IDEs and stubtest see the parameters. The check's negative control: a
class whose method is a C function without one (the builtin min) fails it,
naming that method.
"""
import inspect
import types

import cowstore

# Exception classes take BaseException's arguments, which CPython's own
# exceptions give no signature either; they are not checked.


def callables(ns):
    """(name, object) for every public callable of namespace @ns (its
    __all__), and for its classes every callable member they define."""
    for name in ns.__all__:
        obj = getattr(ns, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        if not callable(obj):
            continue
        yield name, obj
        if isinstance(obj, type):
            for member, value in vars(obj).items():
                if member == "__new__":
                    continue   # the class's own signature (checked above)
                if callable(value):
                    yield "%s.%s" % (name, member), value


def unsigned(ns):
    """The names of @ns's callables that have no signature."""
    missing = []
    for name, obj in callables(ns):
        try:
            inspect.signature(obj)
        except (ValueError, TypeError):
            missing.append(name)
    return missing


def test_every_public_callable_has_a_signature():
    names = [n for n, _ in callables(cowstore)]
    assert len(names) > 80 and "Tensor.sum" in names and "safe_open" in names
    assert unsigned(cowstore) == []


def test_a_method_without_a_signature_fails_the_check():
    class Fake:
        method = min      # a C function without a text signature
        ok = cowstore.Tensor.sum
    ns = types.SimpleNamespace(__all__=["Fake", "zeros"], Fake=Fake,
                               zeros=cowstore.zeros)
    assert unsigned(ns) == ["Fake.method"]


def test_signatures_say_what_the_functions_take():
    p = inspect.signature(cowstore.from_dlpack).parameters
    assert list(p) == ["obj", "device", "copy", "read_only"]
    assert all(p[k].kind is inspect.Parameter.KEYWORD_ONLY
               for k in ("device", "copy", "read_only"))
    assert "copy" in cowstore.from_dlpack.__doc__ and \
        "device" in cowstore.from_dlpack.__doc__
    assert str(inspect.signature(cowstore.Tensor.sum)) == \
        "(self, /, dim=None, keepdim=False)"
    assert str(inspect.signature(cowstore.Tensor.transpose)) == \
        "(self, d0, d1, /)"
    assert str(inspect.signature(cowstore.safe_open)) == \
        "(filename, *, pread=False)"
    # The docstring no longer repeats the signature's line.
    assert cowstore.zeros.__doc__.startswith("a new tensor of zeros")
    # The functions say they are the package's (help(), pickle).
    assert cowstore.zeros.__module__ == "cowstore"
    assert cowstore.Tensor.__module__ == "cowstore"
