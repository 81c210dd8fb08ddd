#!/usr/bin/env bash
# run.sh - the main job: build the release configuration and run the stress
# harness with its default scenarios (about half a minute), printing its
# report. Extra arguments go to cow_stress (see docs/stress.md), e.g.
#   scripts/run.sh --scenario materialize-race --threads 16 --seconds 60
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target cow_stress >/dev/null
exec build/release/stress/cow_stress "$@"
