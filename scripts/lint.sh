#!/usr/bin/env bash
# clang-format (check only) and clang-tidy over the runtime, tools and tests.
#   scripts/lint.sh          report
#   scripts/lint.sh --fix    rewrite formatting in place
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "lint.sh: install clang-format and clang-tidy (apt-get install clang-format clang-tidy)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
fi
if command -v clang-tidy >/dev/null; then
  [ -f build/compile_commands.json ] || bash scripts/build.sh >/dev/null
  mapfile -t sources < <(git ls-files 'runtime/src/*.cpp' 'tools/*.cpp')
  clang-tidy -p build --quiet "${sources[@]}"
fi
