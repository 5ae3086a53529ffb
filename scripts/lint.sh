#!/usr/bin/env bash
# clang-format (check only) over every C++ file, and clang-tidy 22 (.clang-tidy;
# every finding fails) over the sources of runtime/, daemon/ and tools/.
#   scripts/lint.sh          check (exit 1 on a finding)
#   scripts/lint.sh --fix    rewrite formatting in place, then check
set -euo pipefail
cd "$(dirname "$0")/.."
# Like the other scripts, lint installs what it needs (idempotent: nothing
# is asked of apt when the tools are there), so CI can start on a new machine.
for tool in clang-format clang-tidy-22; do
  command -v "$tool" >/dev/null || { bash scripts/install-deps.sh >&2; break; }
done
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
fi
clang-format --dry-run --Werror "${files[@]}"
[ -f build/compile_commands.json ] || bash scripts/build.sh >/dev/null
mapfile -t sources < <(git ls-files '*.cpp' | grep -E '^(runtime|daemon|tools)/')
# clang-tidy counts the warnings it suppressed in system headers on stderr:
# noise, dropped (pipefail keeps its exit code).
# One clang-tidy per core, four sources each (xargs fails when any does).
# Compiler warnings are the compiler's to report (GCC, -Werror in CI):
# clang 22 would add libstdc++ 12's own use of get_temporary_buffer, which
# it deprecates, under std::stable_sort.
printf '%s\0' "${sources[@]}" |
  xargs -0 -n 4 -P "$(nproc)" clang-tidy-22 -p build --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-deprecated-declarations 2>&1 |
  { grep -v '^[0-9]* warnings generated\.$' || true; }
echo "lint: ${#files[@]} files formatted, ${#sources[@]} sources clean"
