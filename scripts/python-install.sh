#!/usr/bin/env bash
# python-install.sh - build the cowstore Python module (python/) against the
# release library of this tree and install it for one interpreter: Debian's
# /usr/bin/python3 by default (into /usr/local/lib/python3.X/dist-packages),
# or the interpreter given, e.g. a virtual environment's bin/python (into
# that environment). Installs the Debian packages it needs as root
# (scripts/deps.sh python). docs/python.md says why this is not pip.
#
# Usage: scripts/python-install.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-/usr/bin/python3}
scripts/deps.sh python

build=build/python-install
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
	-DCOW_BUILD_TOOLS=OFF -DCOW_PYTHON=ON -DPython3_EXECUTABLE="$python" \
	-UCOW_PYTHON_INSTALL_DIR >/dev/null
cmake --build "$build" --target cowstore_python -j"$(nproc)"
cmake --install "$build" --component python
# From another folder, so that the installed module is the one imported.
(cd / && "$python" -c 'import cowstore; print("cowstore", cowstore.__version__, "installed:", cowstore.__file__)')
