#!/usr/bin/env bash
# Static checks over the public headers, through one translation unit per
# header (tally/<name>.h included twice, nothing else), generated in a
# temporary directory:
#   - clang-tidy: bugprone-*, concurrency-*, cert-*, performance-* and the
#     clang static analyzer (clang-analyzer-*), as C11, findings in
#     include/tally/ only, every disabled check and every
#     suppressed finding explained below;
#   - cppcheck: warning, performance and portability classes, as C11 with
#     gcc's predefined macros (the configuration the headers are built in);
#   - with --analyzer (or TALLY_LINT_ANALYZER=1): gcc -fanalyzer as well,
#     every static inline function emitted. Off by default: on gcc 12 it
#     only reports false leaks (see the README, "Static checks").
# clang-tidy and cppcheck see each unit twice: with the default words and
# with TALLY_WORD_BITS=32 (the w32 flavour's), whose #if branches differ.
#   tests/lint.sh [--analyzer] [<include-dir>]
# Prints each finding (file:line: message [check]) and a summary; exits 1 if
# any tool found something, 2 if a tool is missing or failed to run.
set -uo pipefail

analyzer=${TALLY_LINT_ANALYZER:-0}
if [ "${1:-}" = --analyzer ]; then
	analyzer=1
	shift
fi
here=$(cd "$(dirname "$0")" && pwd)
inc=$(cd "${1:-$here/../include}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# liburcu's headers, for rstat.h and export_rstat.h.
urcu=$(pkg-config --cflags liburcu-memb 2>/dev/null || true)

for tool in clang-tidy cppcheck; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "lint: $tool is not installed (./install-deps installs it)" >&2
		exit 2
	fi
done

# ---- clang-tidy ------------------------------------------------------------
# Disabled checks, and why:
#   bugprone-easily-swappable-parameters: a style finding about adjacent
#     parameters of one type (item and delta, sum and count); the API keeps
#     the kernel's shapes, and the tests pin every argument's role.
#   bugprone-implicit-widening-of-multiplication-result: every flagged
#     product is of an item count (at most 2^16, TALLY_RSTAT_ITEMS_MAX and
#     TALLY_VEC_ITEMS_MAX) by a small constant, so it cannot overflow its
#     32-bit type before the widening; the check cannot see those bounds.
#   clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling:
#     asks for C11 Annex K's memset_s/memcpy_s instead of every memset and
#     memcpy; glibc has no Annex K, and the sizes are checked where computed.
checks='-*,bugprone-*,concurrency-*,cert-*,performance-*,clang-analyzer-*'
checks+=',-bugprone-easily-swappable-parameters'
checks+=',-bugprone-implicit-widening-of-multiplication-result'
checks+=',-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling'

# Suppressed findings: check, header (path under include/), a regex the
# flagged source line must match, and why it is not a defect. A finding is
# suppressed only if all three match, so a new one at another place shows.
suppress=(
	# An #include operand, <urcu/urcu-memb.h>: parentheses would break it.
	'bugprone-macro-parentheses|tally/config.h|define TALLY_URCU_HEADER'
	# g is struct tally_group **: sizeof(*g) is the size of one element of
	# an array of pointers, which is what realloc() must get.
	'bugprone-sizeof-expression|tally/rstat/updated.h|realloc\(ids->group, cap \* sizeof\(\*g\)\)'
	# cppcheck: an anonymous mapping takes no file: fd -1 is what POSIX
	# systems that look at it require (macOS reads any other value as a
	# memory tag); cppcheck's posix library wants a descriptor >= 0.
	'invalidFunctionArg|tally/pcpu/arena.h|TALLY__MAP_ANON.*, -1, 0\)'
)

suppressed() { # <file> <line> <check>
	local file=$1 line=$2 check=$3 s c f re src
	src=$(sed -n "${line}p" "$file")
	for s in "${suppress[@]}"; do
		IFS='|' read -r c f re <<<"$s"
		if [[ ",$check," == *",$c,"* && $file == *"/$f" ]] && grep -Eq -- "$re" <<<"$src"; then
			return 0
		fi
	done
	return 1
}

headers=("$inc"/tally/*.h)
for h in "${headers[@]}"; do
	n=$(basename "$h" .h)
	printf '#include <tally/%s.h>\n#include <tally/%s.h>\n' "$n" "$n" >"$work/tu_$n.c"
done

found=0
nsup=0
declare -A seen=()
tidy_raw="$work/tidy.txt"
: >"$tidy_raw"
configs=('' '-DTALLY_WORD_BITS=32')
# Each tool runs on every (unit, configuration) pair, LINT_JOBS (JOBS, 2)
# of them at a time; the outputs are then read in order.
jobs=${LINT_JOBS:-${JOBS:-2}}
pairs=()
for tu in "$work"/tu_*.c; do
	for cfg in "${configs[@]}"; do
		pairs+=("$tu|$cfg")
	done
done
# each <tool-function>: run it on every pair, $jobs at a time; pair i's
# output in $work/<tool>.<i>.out, its exit status in $work/<tool>.<i>.rc.
each() {
	local fn=$1 i tu cfg
	for i in "${!pairs[@]}"; do
		IFS='|' read -r tu cfg <<<"${pairs[$i]}"
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
			wait -n
		done
		("$fn" "$tu" "$cfg" >"$work/$fn.$i.out" 2>&1; echo $? >"$work/$fn.$i.rc") &
	done
	wait
}
tidy() { # <tu> <cfg>
	# shellcheck disable=SC2086
	clang-tidy --quiet -checks="$checks" --header-filter="^$inc/tally/" "$1" -- \
		-std=c11 $2 -I"$inc" $urcu
}
each tidy
for i in "${!pairs[@]}"; do
	IFS='|' read -r tu cfg <<<"${pairs[$i]}"
	one=$work/tidy.$i.out
	rc=$(cat "$work/tidy.$i.rc")
	cat "$one" >>"$tidy_raw"
	# Non-zero with no diagnostic of its own: the tool itself failed
	# (a compile error in a header is a diagnostic, and a finding).
	if [ "$rc" -ne 0 ] && ! grep -Eq ': (warning|error): .*\[[a-z0-9,.-]+\]$' "$one"; then
		echo "lint: clang-tidy failed on $(basename "$tu") $cfg:" >&2
		sed 's/^/    /' "$one" | head -20 >&2
		exit 2
	fi
done
while IFS= read -r w; do
	file=${w%%:*}
	rest=${w#*:}
	line=${rest%%:*}
	check=${w##*[}
	check=${check%]}
	key="$file:$line:$check"
	[ -n "${seen[$key]:-}" ] && continue
	seen[$key]=1
	if suppressed "$file" "$line" "$check"; then
		nsup=$((nsup + 1))
		continue
	fi
	echo "clang-tidy: ${w#"$inc"/}"
	found=$((found + 1))
done < <(grep -E '^/.*: (warning|error): .*\[[a-z0-9,.-]+\]$' "$tidy_raw")
echo "lint: clang-tidy: ${#headers[@]} headers, $found findings, $nsup suppressed (explained in $(basename "$0"))"

# ---- cppcheck ----------------------------------------------------------------
# gcc's predefined macros stand in for the compiler: without them config.h
# and arch.h stop at their #error (no C11, no lock-free atomics). A -D makes
# cppcheck check that one configuration instead of guessing at a dozen.
gcc -std=c11 -dM -E -x c /dev/null >"$work/predefs.h" || exit 2
cpp_raw="$work/cppcheck.txt"
: >"$cpp_raw"
cppc() { # <tu> <cfg>
	# style is left out: it adds scope hints and a false "condition is
	# always true" in tally_export_negotiate (cppcheck 2.10).
	# shellcheck disable=SC2086
	cppcheck --quiet --std=c11 --enable=warning,performance,portability \
		--library=posix --include="$work/predefs.h" -D__GNUC__=12 $2 \
		--error-exitcode=3 --template='{file}:{line}: {severity}: {message} [{id}]' \
		-I"$inc" "$1"
}
each cppc
for i in "${!pairs[@]}"; do
	IFS='|' read -r tu cfg <<<"${pairs[$i]}"
	out=$(cat "$work/cppc.$i.out")
	rc=$(cat "$work/cppc.$i.rc")
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
		echo "lint: cppcheck failed on $(basename "$tu") $cfg:" >&2
		echo "$out" | sed 's/^/    /' | head -20 >&2
		exit 2
	fi
	if [ -n "$out" ]; then
		echo "$out" >>"$cpp_raw"
	fi
done
# A header's finding shows once, whichever translation units include it;
# the suppressions above apply as to clang-tidy's.
cpp_found=0
cpp_sup=0
while IFS= read -r w; do
	file=${w%%:*}
	rest=${w#*:}
	line=${rest%%:*}
	check=${w##*[}
	check=${check%]}
	if suppressed "$file" "$line" "$check"; then
		cpp_sup=$((cpp_sup + 1))
		continue
	fi
	echo "cppcheck: ${w#"$inc"/}"
	cpp_found=$((cpp_found + 1))
done < <(sort -u "$cpp_raw" | grep .)
echo "lint: cppcheck: ${#headers[@]} headers, $cpp_found findings, $cpp_sup suppressed"
found=$((found + cpp_found))

# ---- gcc -fanalyzer (on demand) -------------------------------------------------
if [ "$analyzer" = 1 ]; then
	an_found=0
	for tu in "$work"/tu_*.c; do
		# shellcheck disable=SC2086
		out=$(gcc -std=c11 -O0 -fanalyzer -fkeep-static-functions -fkeep-inline-functions \
			-c -o /dev/null -I"$inc" $urcu "$tu" 2>&1 | grep -E 'warning:')
		if [ -n "$out" ]; then
			echo "$out" | sed "s|^$inc/||; s|^|analyzer: |"
			an_found=$((an_found + $(grep -c . <<<"$out")))
		fi
	done
	echo "lint: gcc -fanalyzer: ${#headers[@]} headers, $an_found findings"
	found=$((found + an_found))
fi

if [ $found -ne 0 ]; then
	echo "lint: $found findings"
	exit 1
fi
echo "lint: clean"
