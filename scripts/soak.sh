#!/usr/bin/env bash
# The chaos soak for as long as you like: 4 channels, 6 publishers and 6
# subscribers (real processes), shmbusd running, random SIGKILL (and
# restart), SIGSTOP and SIGCONT; then the checks of
# tests/multiprocess/test_multiprocess_soak.cpp. CI runs it for 60 s.
#   scripts/soak.sh DURATION_SECONDS [--sanitize address|thread]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:?usage: scripts/soak.sh DURATION_SECONDS [--sanitize address|thread]}"
case "$seconds" in ''|*[!0-9]*) echo "soak.sh: DURATION_SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
shift
dir=$(bash scripts/build.sh "$@")
SHMBUS_SOAK_SECONDS="$seconds" "$dir/tests/shmbus_soak_tests"
