"""package_check.py MODE SRC WORK - the Python package as a user installs
it (docs/python.md, "Install"), from a fresh copy of the source tree SRC
(its files that git tracks or does not ignore: no build folders) in WORK,
with the interpreter that runs this script:

  pip:   python3 -m venv --system-site-packages VENV
         VENV/bin/pip install --no-build-isolation .
  script: scripts/python-install.sh VENV/bin/python (pip underneath)
  sdist: python3 -m build --no-isolation (the source distribution, and a
         wheel built from it, MANIFEST.in's files), then as wheel
  wheel: python3 -m build --wheel --no-isolation, then
         VENV/bin/pip install the wheel; the wheel holds the package, its
         stubs and py.typed, and its extension needs no cowstore shared
         library (readelf -d) and exports PyInit__cowstore alone (nm -D)

then, either way: `import cowstore` from another folder finds the venv's
copy, which exchanges an array with NumPy; `mypy --strict` type-checks
stub_sample.py against the installed package (PEP 561: py.typed, found in
the venv's site-packages), and `pip uninstall -y cowstore` leaves nothing
of it. Each check has a negative control that it must reject, for the
reason it names: the removal check run before the uninstall, the wheel
check on the wheel without py.typed, the linkage check on a shared object
linked against libcowstore.so (built from the same copy).

ctest: python.package_pip, _script, _wheel and _sdist (labels
python;package).
"""
import glob
import os
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "stub_sample.py")


class CheckFailed(Exception):
    pass


def run(cmd, cwd, check=True, **env):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, **env),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if check and r.returncode != 0:
        raise CheckFailed("%s failed (%d):\n%s" % (cmd[0], r.returncode,
                                                    r.stdout))
    return r


def expect_failure(reason, fn, *args):
    """The negative control: fn(*args) must fail, saying @reason."""
    try:
        fn(*args)
    except CheckFailed as e:
        if reason not in str(e):
            raise CheckFailed("control failed for another reason than "
                              "%r: %s" % (reason, e))
        print("control rejected, as it must: %s" % str(e).splitlines()[0])
        return
    raise CheckFailed("control passed: expected a failure, %r" % reason)


def fresh_copy(src, dst):
    """The files of @src that git tracks or does not ignore, into @dst."""
    r = run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], src)
    n = 0
    for rel in r.stdout.split("\0"):
        path = os.path.join(src, rel)
        if rel and os.path.isfile(path) and not os.path.islink(path):
            os.makedirs(os.path.dirname(os.path.join(dst, rel)),
                        exist_ok=True)
            shutil.copy2(path, os.path.join(dst, rel))
            n += 1
    print("copied %d files of %s" % (n, src))


def site_packages(venv):
    r = run([os.path.join(venv, "bin", "python"), "-c",
             "import sysconfig; print(sysconfig.get_path('platlib'))"], venv)
    return r.stdout.strip()


def check_installed(venv, elsewhere):
    """The venv's cowstore imports from another folder and works."""
    site = site_packages(venv)
    r = run([os.path.join(venv, "bin", "python"), "-c", """
import os, sys, numpy as np, cowstore
where = os.path.dirname(cowstore.__file__)
assert where == os.path.join(sys.argv[1], 'cowstore'), where
a = np.arange(12, dtype=np.float32).reshape(3, 4)
t = cowstore.from_dlpack(a)
assert t.data_ptr() == a.ctypes.data and t.shape == (3, 4)
assert (np.from_dlpack(t.lazy_clone()) == a).all()
print('imported cowstore', cowstore.__version__, 'from', where)
""", site], elsewhere, check=False)
    if r.returncode != 0:
        raise CheckFailed("the installed package failed:\n" + r.stdout)
    print(r.stdout.strip())
    r = run([os.path.join(venv, "bin", "pip"), "show", "-f", "cowstore"],
            elsewhere)
    for f in ("cowstore/__init__.pyi", "cowstore/py.typed"):
        if f not in r.stdout:
            raise CheckFailed("pip show -f lists no %s:\n%s" % (f, r.stdout))


def check_typed(venv, elsewhere):
    """mypy --strict finds the installed stubs (py.typed) by itself."""
    r = run([sys.executable, "-m", "mypy", "--strict", "--python-executable",
             os.path.join(venv, "bin", "python"), "--cache-dir",
             os.path.join(elsewhere, ".mypy_cache"), SAMPLE], elsewhere,
            check=False, MYPYPATH="")
    if r.returncode != 0 or "Success" not in r.stdout:
        raise CheckFailed("mypy --strict on the installed package:\n" +
                          r.stdout)
    print(r.stdout.strip())


def check_removed(venv, elsewhere):
    """Nothing of cowstore is left in the venv."""
    site = site_packages(venv)
    left = [n for n in os.listdir(site) if n.lower().startswith("cowstore")]
    # Where `import cowstore` would load from (None: nowhere; a copy
    # outside the venv, in the system's site folders, is not this one).
    r = run([os.path.join(venv, "bin", "python"), "-c",
             "import importlib.util as u; s = u.find_spec('cowstore'); "
             "print(s.origin if s else None)"], elsewhere)
    origin = r.stdout.strip()
    if left or origin.startswith(venv + os.sep):
        raise CheckFailed("cowstore is still installed: import finds %s, "
                          "left in %s: %s" % (origin, site, left))


def install_check_uninstall(venv, elsewhere, install):
    run([sys.executable, "-m", "venv", "--system-site-packages", venv],
        elsewhere)
    install()
    check_installed(venv, elsewhere)
    check_typed(venv, elsewhere)
    expect_failure("cowstore is still installed", check_removed, venv,
                   elsewhere)
    run([os.path.join(venv, "bin", "pip"), "uninstall", "-y", "cowstore"],
        elsewhere)
    check_removed(venv, elsewhere)
    print("uninstalled: nothing of cowstore is left")


def check_wheel(whl):
    """The wheel holds the package: code, stubs, marker, one extension."""
    names = zipfile.ZipFile(whl).namelist()
    for f in ("cowstore/__init__.py", "cowstore/__init__.pyi",
              "cowstore/py.typed"):
        if f not in names:
            raise CheckFailed("%s missing from %s" % (f, whl))
    ext = [n for n in names if n.startswith("cowstore/_cowstore.")
           and n.endswith(".so")]
    other = [n for n in names if not n.startswith(("cowstore/",
                                                   "cowstore-"))]
    if len(ext) != 1 or other:
        raise CheckFailed("%s: extensions %s, files outside the package %s"
                          % (whl, ext, other))
    return ext[0]


def check_linkage(so):
    """@so needs no cowstore or jemalloc shared library and exports only
    its module's init function."""
    dyn = run(["readelf", "-d", so], os.path.dirname(so)).stdout
    needed = [l.split("[")[1].rstrip("]") for l in dyn.splitlines()
              if "(NEEDED)" in l]
    bad = [n for n in needed if "cowstore" in n or "jemalloc" in n]
    if bad:
        raise CheckFailed("%s needs %s (the library must be linked in "
                          "statically); NEEDED: %s" % (so, bad, needed))
    syms = run(["nm", "-D", "--defined-only", so], os.path.dirname(so))
    exported = [l.split()[-1] for l in syms.stdout.splitlines()
                if len(l.split()) == 3 and l.split()[1] in "TDBRVW"]
    if exported != ["PyInit__cowstore"]:
        raise CheckFailed("%s exports %s, not PyInit__cowstore alone"
                          % (so, exported[:10]))
    print("%s: NEEDED %s, exports PyInit__cowstore alone" % (
        os.path.basename(so), needed))


def linkage_control(src, work):
    """A shared object linked against libcowstore.so, built from the
    copy's CMake build (setup.py's, in build/setuptools)."""
    builds = glob.glob(os.path.join(src, "build", "setuptools", "temp.*",
                                    "cmake"))
    if len(builds) != 1:
        raise RuntimeError("no single CMake build in %s: %s" % (src, builds))
    run(["cmake", "--build", builds[0], "--target", "cowstore"], work)
    lib = glob.glob(os.path.join(builds[0], "libcowstore.so"))[0]
    c = os.path.join(work, "control.c")
    with open(c, "w") as f:
        f.write("#include <cowstore/cowstore.h>\n"
                "const char *PyInit__cowstore(void);\n"
                "const char *PyInit__cowstore(void)\n"
                "{ return cow_version_string(); }\n")
    so = os.path.join(work, "control.so")
    run(["cc", "-shared", "-fPIC", "-o", so, c,
         "-I" + os.path.join(src, "include"),
         "-I" + os.path.join(builds[0], "include"),
         "-L" + os.path.dirname(lib), "-lcowstore"], work)
    return so


def main():
    mode, src, work = sys.argv[1], os.path.abspath(sys.argv[2]), \
        os.path.abspath(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    copy = os.path.join(work, "src")
    elsewhere = os.path.join(work, "elsewhere")
    venv = os.path.join(work, "venv")
    os.makedirs(elsewhere)
    fresh_copy(src, copy)
    os.environ.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1",
                      PYTHONDONTWRITEBYTECODE="1")
    os.environ.pop("PYTHONPATH", None)
    if mode == "pip":
        install_check_uninstall(venv, elsewhere, lambda: run(
            [os.path.join(venv, "bin", "pip"), "install",
             "--no-build-isolation", "."], copy))
    elif mode == "script":
        install_check_uninstall(venv, elsewhere, lambda: run(
            [os.path.join(copy, "scripts", "python-install.sh"),
             os.path.join(venv, "bin", "python")], copy))
    elif mode == "wheel":
        dist = os.path.join(work, "dist")
        run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
             "--outdir", dist], copy)
        wheels = glob.glob(os.path.join(dist, "*.whl"))
        if len(wheels) != 1:
            raise CheckFailed("expected one wheel in %s: %s" % (dist, wheels))
        whl = wheels[0]
        ext = check_wheel(whl)
        print("%s: the package, its stubs, py.typed and %s" % (
            os.path.basename(whl), ext))
        stripped = os.path.join(work, "control-" + os.path.basename(whl))
        with zipfile.ZipFile(whl) as zin, \
                zipfile.ZipFile(stripped, "w") as zout:
            for item in zin.infolist():
                if item.filename != "cowstore/py.typed":
                    zout.writestr(item, zin.read(item.filename))
        expect_failure("cowstore/py.typed missing", check_wheel, stripped)
        unpacked = os.path.join(work, "unpacked")
        zipfile.ZipFile(whl).extract(ext, unpacked)
        check_linkage(os.path.join(unpacked, ext))
        expect_failure("needs ['libcowstore.so", check_linkage,
                       linkage_control(copy, work))
        install_check_uninstall(venv, elsewhere, lambda: run(
            [os.path.join(venv, "bin", "pip"), "install", "--no-index",
             whl], elsewhere))
    elif mode == "sdist":
        # The source distribution, and the wheel built from it unpacked.
        dist = os.path.join(work, "dist")
        run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
             dist], copy)
        sdists = glob.glob(os.path.join(dist, "*.tar.gz"))
        wheels = glob.glob(os.path.join(dist, "*.whl"))
        if len(sdists) != 1 or len(wheels) != 1:
            raise CheckFailed("expected one sdist and one wheel in %s: %s"
                              % (dist, os.listdir(dist)))
        ext = check_wheel(wheels[0])
        print("%s, and from it %s with %s" % (os.path.basename(sdists[0]),
              os.path.basename(wheels[0]), ext))
        install_check_uninstall(venv, elsewhere, lambda: run(
            [os.path.join(venv, "bin", "pip"), "install", "--no-index",
             wheels[0]], elsewhere))
    else:
        sys.exit("usage: package_check.py pip|script|wheel|sdist SRC WORK")
    print("package_check %s: ok" % mode)


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as e:
        print("FAILED: %s" % e, flush=True)
        sys.exit(1)
