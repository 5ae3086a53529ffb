#!/usr/bin/env bash
# The man pages and the bash completion, as a user meets them:
#  - a page for shmtool and each of its verbs (the verbs its --help lists:
#    a new verb without a page fails), shmbusd(8), shmbus-bridge(1),
#    shmbus-gateway(1) and shmbus-msggen(1); `man -l` renders each, with its EXIT STATUS and
#    ENVIRONMENT sections;
#  - the completion script, sourced in bash: `complete -p shmtool` names its
#    function; it completes verbs, bag verbs, a verb's options (from its own
#    --help) and a live channel's name in a domain this test makes.
#   man_and_completion.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tool=$build/tools/shmtool
fail() { echo "FAIL: $*" >&2; exit 1; }

verbs=$("$tool" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z]*\) .*/\1/p')
[ -n "$verbs" ] || fail "no verbs in shmtool --help"
pages=(shmtool.1 shmbusd.8 shmbus-bridge.1 shmbus-gateway.1 shmbus-msggen.1)
for v in $verbs; do pages+=("shmtool-$v.1"); done
for p in "${pages[@]}"; do
  f=$build/man/$p.gz
  [ -f "$f" ] || fail "no man page $p (build/man)"
  text=$(MANWIDTH=80 man -l "$f" 2>&1) || fail "man -l $p: $text"
  for section in NAME SYNOPSIS "EXIT STATUS" ENVIRONMENT; do
    grep -q "^$section" <<<"$text" || fail "$p has no $section section"
  done
done
echo "man pages: ${#pages[@]} render with EXIT STATUS and ENVIRONMENT"

domain="compl_$$"
cleanup() {
  [ -n "${pub:-}" ] && kill "$pub" 2>/dev/null && wait "$pub" 2>/dev/null
  "$tool" --domain "$domain" clean >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$tool" --domain "$domain" pub /completion/live_channel --type shmbus_msgs/String --rate 10 '{"data": "x"}' >/dev/null &
pub=$!
for _ in $(seq 200); do
  "$tool" --domain "$domain" find shmbus_msgs/String 2>/dev/null | grep -q live_channel && break
  sleep 0.05
done

out=$(PATH="$build/tools:$PATH" bash --norc --noprofile -c '
  source "$1"
  complete -p shmtool
  complete_line() {
    read -ra COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _shmtool
    echo "$1 => ${COMPREPLY[*]}"
  }
  complete_line "shmtool ec"
  complete_line "shmtool bag fil"
  complete_line "shmtool bw --win"
  complete_line "shmtool bag doctor --js"
  complete_line "shmtool service ca"
  complete_line "shmtool bag diff --chan"
  complete_line "shmtool --domain '"$domain"' echo /completion/li"
  complete_line "shmtool --domain '"$domain"' hz "
' _ "$src/tools/shmtool/shmtool.bash-completion")
echo "$out"
grep -qx 'complete -F _shmtool shmtool' <<<"$out" || fail "complete -p shmtool"
grep -qx 'shmtool ec => echo' <<<"$out" || fail "verb"
grep -qx 'shmtool bag fil => filter' <<<"$out" || fail "bag verb"
grep -qx 'shmtool bw --win => --window' <<<"$out" || fail "a verb's option"
grep -qx 'shmtool bag doctor --js => --json' <<<"$out" || fail "a bag verb's option"
grep -qx 'shmtool service ca => call' <<<"$out" || fail "a service verb"
grep -qx 'shmtool bag diff --chan => --channel' <<<"$out" || fail "a bag verb's option with a value"
grep -qx "shmtool --domain $domain echo /completion/li => /completion/live_channel" <<<"$out" || fail "live channel"
grep -q "shmtool --domain $domain hz  => .*/completion/live_channel" <<<"$out" || fail "channels listed"
echo "completion: verbs, options and live channel names"
