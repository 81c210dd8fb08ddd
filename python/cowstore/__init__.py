"""cowstore: copy-on-write tensor storage, safe under concurrency.

The package holds the extension module cowstore._cowstore (C,
python/src/) and re-exports every name it has: cowstore.X is
cowstore._cowstore.X. It is a package so that it can ship its type stubs
(__init__.pyi) with the py.typed marker (PEP 561). See docs/python.md.
"""
from . import _cowstore

__doc__ = _cowstore.__doc__

# Every public name of the extension, and the pickle reconstructor that
# Tensor.__reduce__ names (cowstore._rebuild).
__all__ = sorted(n for n in vars(_cowstore) if not n.startswith("_"))
globals().update({n: getattr(_cowstore, n) for n in __all__})
_rebuild = _cowstore._rebuild
__version__ = _cowstore.__version__

# The functions say they are cowstore's (help(), repr, pickle), as the
# types do (their tp_name is "cowstore.X").
for _f in [_rebuild] + [getattr(_cowstore, n) for n in __all__]:
    if type(_f).__name__ == "builtin_function_or_method":
        _f.__module__ = __name__
del _f
