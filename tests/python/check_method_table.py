"""check_method_table.py - python.many_methods (asan preset): the module
variant built with tests/faults/python_many_methods.h, whose ops table has
N more methods (_extra_00 ... _extra_77, octal digits: another name for
equal each), imports, and every Tensor method of both tables is there and
works. With a method table of fixed size that the merge overflows, the
import writes past the table's end (AddressSanitizer's report) or stops
with a fatal error.

    python3 check_method_table.py N
"""
import sys

import cowstore


def main():
    n = int(sys.argv[1])
    names = ["_extra_%o%o" % (i // 8, i % 8) for i in range(n)]
    t = cowstore.arange(4)
    missing = [m for m in names + ["lazy_clone", "sum", "fill_", "equal",
                                   "numpy", "__reduce__"]
               if not hasattr(t, m)]
    assert not missing, "methods missing: %s" % missing
    assert all(getattr(t, m)(t.lazy_clone()) for m in names)
    assert t.sum().item() == 6
    print("%d extra methods, and both tables' own, all present" % n)


if __name__ == "__main__":
    main()
