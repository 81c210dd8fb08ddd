"""test_module_init.py - the package cowstore around the extension
cowstore._cowstore, initialised in two phases (PEP 489): a second module
object made from the same spec is filled by the exec slot again, its
functions bound to it, with the same process-wide types and exceptions
(docs/python.md, "Install"). The check's negative control: NumPy 1.24's
_multiarray_umath, initialised in one phase, gives its first module object
back.
"""
import importlib.util
import pickle

import cowstore


def test_the_package_reexports_the_extension():
    ext = cowstore._cowstore
    assert ext.__name__ == "cowstore._cowstore"
    public = sorted(n for n in vars(ext) if not n.startswith("_"))
    assert cowstore.__all__ == public
    assert all(getattr(cowstore, n) is getattr(ext, n) for n in public)
    assert cowstore.__version__ == ext.__version__
    # Pickles name cowstore._rebuild, which resolves.
    data = pickle.dumps(cowstore.arange(3))
    assert b"cowstore" in data and b"_rebuild" in data
    assert pickle.loads(data).tolist() == [0, 1, 2]


def second_module(name):
    """A module object made and executed from @name's spec."""
    spec = importlib.util.find_spec(name)
    again = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(again)
    return again


def initialised_again(name, first):
    again = second_module(name)
    return again is not first and again.__dict__ is not first.__dict__


def test_a_second_module_object_is_initialised_again():
    first = cowstore._cowstore
    assert initialised_again("cowstore._cowstore", first)
    again = second_module("cowstore._cowstore")
    assert again.zeros.__self__ is again and first.zeros.__self__ is first
    assert again.Tensor is first.Tensor
    for name in ("AliasingWarning", "AliasingError", "SafetensorError",
                 "CancelledError", "ReleasedError"):
        assert getattr(again, name) is getattr(first, name), name
    t = again.arange(4)
    assert isinstance(t, cowstore.Tensor) and t.sum().item() == 6


def test_a_single_phase_module_fails_the_check():
    import numpy.core._multiarray_umath as single
    assert not initialised_again("numpy.core._multiarray_umath", single)
