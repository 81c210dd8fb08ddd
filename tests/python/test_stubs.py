"""test_stubs.py - the package's type stubs (python/cowstore/__init__.pyi)
against the module they describe, with Debian's mypy:

- stubtest (mypy.stubtest) finds no difference between the stubs and the
  module imported (names, parameters, their kinds and defaults, __all__);
  its negative controls are stubs that lie (a parameter renamed, a default
  changed, a function missing, one that does not exist), which it must
  reject naming the lie;
- every class in the stubs names exactly the members the runtime class
  defines, special methods included (stubtest 1.0 does not report a special
  method the stubs leave out, such as an operator the module gained): its
  control is the stubs without Tensor.__neg__;
- `mypy --strict` accepts stub_sample.py, a program that uses every public
  name (checked here), which also runs; its control is a program that
  misuses a Tensor, which mypy must reject for that.

The package checked is the one imported (the build tree's on PYTHONPATH).
"""
import ast
import os
import re
import shutil
import subprocess
import sys

import pytest

import cowstore

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(os.path.abspath(cowstore.__file__))
SAMPLE = os.path.join(HERE, "stub_sample.py")
# Members every class has that stubs leave to object's.
IGNORED = {"__doc__", "__module__", "__repr__", "__weakref__"}


def run(cmd, cwd, **env):
    r = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, **env),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    return r.returncode, r.stdout


def stubtest(parent, cwd):
    """stubtest on the package cowstore found in folder @parent."""
    return run([sys.executable, "-m", "mypy.stubtest", "cowstore"], cwd,
               PYTHONPATH=parent)


def lying_copy(tmp_path, old, new):
    """A copy of the package whose stubs have @old replaced by @new."""
    dst = tmp_path / "pkg" / "cowstore"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns(
        "__pycache__"))
    stub = dst / "__init__.pyi"
    text = stub.read_text()
    assert text.count(old) == 1, old
    stub.write_text(text.replace(old, new))
    return str(tmp_path / "pkg")


def test_stubtest_finds_the_stubs_true(tmp_path):
    rc, out = stubtest(os.path.dirname(PACKAGE), tmp_path)
    assert rc == 0 and "Success: no issues found" in out, out


LIES = [
    ("def arange(n: SupportsIndex", "def arange(count: SupportsIndex",
     r'cowstore\.arange is inconsistent, stub argument "count" differs '
     r'from runtime argument "n"'),
    ('def zeros(shape: _Shape, dtype: _DTypeLike = "float32")',
     'def zeros(shape: _Shape, dtype: _DTypeLike = "float64")',
     r"cowstore\.zeros is inconsistent, runtime argument \"dtype\" has a "
     r"default value of 'float32', which is different from stub argument "
     r"default 'float64'"),
    ("def trim() -> None: ...\n", "",
     r"cowstore\.trim is not present in stub"),
    ("def trim() -> None: ...\n",
     "def trim() -> None: ...\ndef untrim() -> None: ...\n",
     r"cowstore\.untrim is not present at runtime"),
    ("    def lazy_clone(self) -> Tensor: ...\n", "",
     r"cowstore\.Tensor\.lazy_clone is not present in stub"),
]


@pytest.mark.parametrize("old,new,expect", LIES,
                         ids=["renamed", "default", "missing", "extra",
                              "missing_method"])
def test_stubtest_rejects_a_stub_that_lies(tmp_path, old, new, expect):
    rc, out = stubtest(lying_copy(tmp_path, old, new), tmp_path)
    assert rc != 0 and re.search(expect, out), out


def stub_members(stub_text):
    """{class name: the names its body defines} of a stub file."""
    members = {}
    for node in ast.parse(stub_text).body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets)
            members[node.name] = names
    return members


def member_gaps(stub_text, module):
    """(class, member, where it is missing) for each member one side has."""
    gaps = []
    for cls, names in sorted(stub_members(stub_text).items()):
        runtime = set(vars(getattr(module, cls))) - IGNORED
        gaps += [(cls, m, "stub") for m in sorted(runtime - names)]
        gaps += [(cls, m, "runtime") for m in sorted(names - runtime)]
    return gaps


def stub_text():
    with open(os.path.join(PACKAGE, "__init__.pyi"), encoding="utf-8") as f:
        return f.read()


def test_stub_classes_name_every_member_of_the_classes():
    classes = stub_members(stub_text())
    assert {n for n in cowstore.__all__
            if isinstance(getattr(cowstore, n), type)} == set(classes)
    assert member_gaps(stub_text(), cowstore) == []


def test_member_check_rejects_a_stub_without_an_operator():
    lie = stub_text().replace("    def __neg__(self) -> Tensor: ...\n", "")
    assert member_gaps(lie, cowstore) == [("Tensor", "__neg__", "stub")]


def mypy_strict(program, cwd):
    return run([sys.executable, "-m", "mypy", "--strict", "--cache-dir",
                os.path.join(cwd, ".mypy_cache"), program], cwd,
               MYPYPATH=os.path.dirname(PACKAGE))


def test_mypy_strict_accepts_the_sample(tmp_path):
    rc, out = mypy_strict(SAMPLE, str(tmp_path))
    assert rc == 0 and "Success: no issues found in 1 source file" in out, out


def test_mypy_strict_rejects_a_misuse(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import cowstore\n"
                   "name: str = cowstore.arange(3)\n"
                   "cowstore.zeros(3).transpose(0)\n")
    rc, out = mypy_strict(str(bad), str(tmp_path))
    assert rc == 1, out
    assert 'Incompatible types in assignment (expression has type "Tensor", ' \
        'variable has type "str")' in out, out
    assert 'bad.py:3: error: Too few arguments for "transpose" of "Tensor"' \
        in out, out


def test_the_sample_uses_every_public_name_and_runs(tmp_path):
    with open(SAMPLE, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names}
    wanted = set(cowstore.__all__)
    for name in cowstore.__all__:
        obj = getattr(cowstore, name)
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            wanted |= {m for m in vars(obj)
                       if not m.startswith("_") or m.startswith("__dlpack")}
    assert sorted(wanted - used) == []
    rc, out = run([sys.executable, SAMPLE, str(tmp_path)], str(tmp_path),
                  PYTHONPATH=os.path.dirname(PACKAGE))
    assert rc == 0 and "every public name used" in out, out
