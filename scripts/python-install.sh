#!/usr/bin/env bash
# python-install.sh - install the Python package cowstore with pip for one
# interpreter: Debian's /usr/bin/python3 by default, or the one given, e.g.
# a virtual environment's bin/python. A thin wrapper over
#   PYTHON -m pip install --no-build-isolation .
# (pyproject.toml, setup.py: setuptools runs this tree's CMake) that first
# installs the Debian packages the build needs (scripts/deps.sh python).
# Outside a virtual environment it passes --break-system-packages, which
# Debian's pip asks for before it installs for the system's interpreter
# (PEP 668): as root the package goes to /usr/local/lib/python3.X/
# dist-packages, Debian's folder for what it does not manage, otherwise to
# the user's site folder. pip lists it and removes it:
#   PYTHON -m pip uninstall [--break-system-packages] cowstore
#
# Usage: scripts/python-install.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-/usr/bin/python3}
scripts/deps.sh python

flags=(--no-build-isolation)
if "$python" -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
	flags+=(--break-system-packages)
fi
"$python" -m pip install "${flags[@]}" .
# From another folder, so that the installed package is the one imported.
(cd / && "$python" -c 'import cowstore; print("cowstore", cowstore.__version__, "installed:", cowstore.__file__)')
