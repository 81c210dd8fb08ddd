"""setup.py - the part of the Python package's build that pyproject.toml
cannot say: the extension cowstore._cowstore is CMake's target
cowstore_python (python/CMakeLists.txt), built by this tree's CMake in
setuptools' build folder (release configuration, the library linked
statically, for the interpreter that runs the build), and the version is
CMakeLists.txt's project(VERSION).

    pip install --no-build-isolation .        (docs/python.md, "Install")
    python3 -m build --wheel --no-isolation
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(cowstore VERSION ([0-9]+\.[0-9]+\.[0-9]+)",
                      f.read())
    if m is None:
        raise RuntimeError("CMakeLists.txt: no project(cowstore VERSION ...)")
    return m.group(1)


class CMakeBuild(build_ext):
    """Builds each extension (one: cowstore._cowstore) with CMake."""

    def build_extension(self, ext):
        build = os.path.join(os.path.abspath(self.build_temp), "cmake")
        subprocess.run(
            ["cmake", "-S", ROOT, "-B", build,
             "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF",
             "-DCOW_BUILD_TOOLS=OFF", "-DCOW_PYTHON=ON",
             "-DPython3_EXECUTABLE=" + sys.executable],
            check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or \
            str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "--target",
                        "cowstore_python", "--parallel", jobs], check=True)
        built = glob.glob(os.path.join(build, "python", "cowstore",
                                       "_cowstore*.so"))
        if len(built) != 1:
            raise RuntimeError("expected one extension in %s, found %s"
                               % (build, built))
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(
    version=version(),
    # sources: CMake's (python/CMakeLists.txt), not setuptools'.
    ext_modules=[Extension("cowstore._cowstore", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # build/setuptools, beside the CMake presets' folders in build/.
    options={"build": {"build_base": "build/setuptools"}},
)
