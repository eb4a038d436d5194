#!/usr/bin/env bash
# Header hygiene: every header in <include-dir>/tally/*.h (internal ones too)
# must compile alone, included twice, as C11 and as C++11 and C++17, with gcc,
# g++, clang and clang++ under -Wall -Wextra -Wpedantic -Werror; headers
# that need no liburcu also as C11 with gcc -m32 and with 32-bit words.
#   tests/hygiene.sh <include-dir>
# Prints one line per failure (with the compiler's output) and a summary;
# exits non-zero if anything failed.
set -uo pipefail

inc=${1:?usage: hygiene.sh <include-dir>}
inc=$(cd "$inc" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

warn=(-Wall -Wextra -Wpedantic -Werror -fsyntax-only)
# liburcu's headers are where pkg-config says (usually a system path).
urcu=$(pkg-config --cflags liburcu-memb 2>/dev/null || true)

have() { command -v "$1" >/dev/null 2>&1; }

pass=0
fail=0
skipped=()
failed=()

# compile <label> <tu> <compiler> <flags...>
compile() {
	local label=$1 tu=$2 cc=$3
	shift 3
	local out
	# shellcheck disable=SC2086
	if out=$("$cc" "$@" "${warn[@]}" -I"$inc" $urcu "$tu" 2>&1); then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed+=("$label")
		echo "FAIL: $label"
		echo "$out" | sed 's/^/    /' | head -40
	fi
}

headers=("$inc"/tally/*.h)
if [ ! -e "${headers[0]}" ]; then
	echo "hygiene: no headers in $inc/tally" >&2
	exit 2
fi

for cc in gcc g++ clang clang++; do
	have "$cc" || skipped+=("$cc (not installed)")
done
m32=1
if have gcc; then
	echo 'int main(void) { return 0; }' >"$work/m32.c"
	gcc -m32 "$work/m32.c" -o "$work/m32" >/dev/null 2>&1 || m32=0
	[ $m32 = 1 ] || skipped+=("gcc -m32 (no multilib)")
fi

for h in "${headers[@]}"; do
	name=$(basename "$h")
	c="$work/${name%.h}.c"
	cxx="$work/${name%.h}.cc"
	printf '#include <tally/%s>\n#include <tally/%s>\nint main(void) { return 0; }\n' \
		"$name" "$name" >"$c"
	printf '#include <tally/%s>\n#include <tally/%s>\nint main() { return 0; }\n' \
		"$name" "$name" >"$cxx"

	for cc in gcc clang; do
		have "$cc" || continue
		compile "$name: $cc -std=c11" "$c" "$cc" -std=c11
	done
	for cxxc in g++ clang++; do
		have "$cxxc" || continue
		for std in c++11 c++17; do
			compile "$name: $cxxc -std=$std" "$cxx" "$cxxc" -std=$std
		done
	done
	have gcc && compile "$name: gcc -std=c11 -DTALLY_WORD_BITS=32" "$c" gcc -std=c11 \
		-DTALLY_WORD_BITS=32
	have g++ && compile "$name: g++ -std=c++17 -DTALLY_WORD_BITS=32" "$cxx" g++ -std=c++17 \
		-DTALLY_WORD_BITS=32

	# -m32: only headers that do not pull in liburcu (no i386 liburcu here).
	if have gcc && [ $m32 = 1 ]; then
		# shellcheck disable=SC2086
		deps=$(gcc -M -I"$inc" $urcu "$c" 2>/dev/null || true)
		if ! grep -q '/urcu' <<<"$deps"; then
			compile "$name: gcc -m32 -std=c11" "$c" gcc -m32 -std=c11
		fi
	fi
done

echo "hygiene: ${#headers[@]} headers, $pass compiles passed, $fail failed"
for s in "${skipped[@]}"; do
	echo "hygiene: skipped $s"
done
if [ $fail -ne 0 ]; then
	printf 'hygiene: FAILED: %s\n' "${failed[@]}"
	exit 1
fi
exit 0
