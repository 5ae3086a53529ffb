#!/usr/bin/env bash
# Builds shmbus and runs the demo (installs the Debian packages first).
# Extra arguments go to shmbus-demo (e.g. --duration 10).
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the demo and what it starts (shmbusd), not the tests and benchmarks.
dir=$(bash scripts/build.sh --release --target shmbus_demo)
exec "$dir/tools/shmbus-demo" "$@"
