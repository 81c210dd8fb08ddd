#!/usr/bin/env bash
# ops-vs-numpy.sh - cowstore's ops against NumPy's, side by side in one
# run (tests/python/bench_ops.py: three interleaved rounds, ratios of
# cowstore's time to NumPy's per op, dtype and size). Builds the release
# preset's Python module first; run it on an otherwise idle machine (about
# five minutes). Arguments go to bench_ops.py (--rounds, --sizes, --dtypes,
# --ops, --repeats).
#
#   scripts/ops-vs-numpy.sh [ARGS...] > docs/perf/ops/ops-vs-numpy.md
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >&2
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target cowstore_python >&2
exec env PYTHONPATH=build/release/python /usr/bin/python3 \
    tests/python/bench_ops.py "$@"
