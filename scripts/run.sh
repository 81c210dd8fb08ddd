#!/usr/bin/env bash
# run.sh - the main job: build the release configuration of the library
# and cow_stress (the preset "run": release without the tests, so it needs
# only what `scripts/deps.sh run` installs) and run the stress harness with
# its default scenarios (about half a minute), printing its report. Extra
# arguments go to cow_stress (see docs/stress.md), e.g.
#   scripts/run.sh --scenario materialize-race --threads 16 --seconds 60
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run
cmake --preset run >/dev/null
cmake --build --preset run -j2 >/dev/null
exec build/run/stress/cow_stress "$@"
