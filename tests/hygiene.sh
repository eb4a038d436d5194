#!/usr/bin/env bash
# Header hygiene: every header in <include-dir>/tally/*.h (internal ones too;
# the parts under tally/<name>/ refuse to be included alone and are checked
# through their header) must
#   - compile alone, included twice, under -Wall -Wextra -Wpedantic -Werror
#     and the warnings projects commonly add (C: -Wmissing-prototypes
#     -Wstrict-prototypes -Wold-style-definition -Wshadow -Wundef
#     -Wconversion -Wsign-conversion; C++: -Wmissing-declarations -Wundef
#     -Wconversion -Wsign-conversion; not C++'s -Wshadow, which g++ applies
#     to a function named as a struct, tally_serve_stats for one),
#     as C11 and C17 with gcc, clang (14, the default) and clang-16, and as
#     C++11, C++14, C++17 and C++20 with g++, clang++ and clang++-16;
#   - compile so in every code-size mode of config.h as well: TALLY_EXTERN=1
#     with and without TALLY_IMPLEMENTATION (the one unit that defines the
#     update calls: each needs its prototype), and TALLY_INLINE=0 (C11 with
#     gcc and clang, C++17 with g++ and clang++);
#   - compile with 32-bit words (C11 and C++17), and, for headers that need
#     no liburcu, as C11 with gcc -m32;
#   - stop at config.h's #error, with its message as the first error, as C99
#     (gcc, clang) and C++98 (g++, clang++).
#   tests/hygiene.sh <include-dir> [<k>/<n>]
# With k/n, only the k-th of n shares of the headers (every n-th header from
# the k-th; the suite runs the shares as separate tests beside each other).
# A compiler that is not installed is reported as skipped (clang-16 is
# Debian's package clang-16; ./install-deps installs it). Prints one line per
# failure (with the compiler's output) and a summary; exits non-zero if
# anything failed.
set -uo pipefail

inc=${1:?usage: hygiene.sh <include-dir> [<k>/<n>]}
share=${2:-1/1}
share_k=${share%/*}
share_n=${share#*/}
if ! [[ $share_k =~ ^[0-9]+$ && $share_n =~ ^[0-9]+$ ]] || [ "$share_k" -lt 1 ] ||
	[ "$share_k" -gt "$share_n" ]; then
	echo "hygiene: bad share '$share' (k/n, 1 <= k <= n)" >&2
	exit 2
fi
inc=$(cd "$inc" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

warn=(-Wall -Wextra -Wpedantic -Werror -fsyntax-only)
cwarn=(-Wmissing-prototypes -Wstrict-prototypes -Wold-style-definition -Wshadow -Wundef
	-Wconversion -Wsign-conversion)
cxxwarn=(-Wmissing-declarations -Wundef -Wconversion -Wsign-conversion)
# liburcu's headers are where pkg-config says (usually a system path).
urcu=$(pkg-config --cflags liburcu-memb 2>/dev/null || true)
# The message config.h gives below C11 / C++11.
stdmsg='tally requires C11 or C++11'

have() { command -v "$1" >/dev/null 2>&1; }

pass=0
fail=0
skipped=()
failed=()

# compile <label> <tu> <compiler> <flags...>: must compile cleanly.
compile() {
	local label=$1 tu=$2 cc=$3
	shift 3
	local out more=("${cwarn[@]}")
	[[ $tu == *.cc ]] && more=("${cxxwarn[@]}")
	# shellcheck disable=SC2086
	if out=$("$cc" "$@" "${warn[@]}" "${more[@]}" -I"$inc" $urcu "$tu" 2>&1); then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed+=("$label")
		echo "FAIL: $label"
		echo "$out" | sed 's/^/    /' | head -40
	fi
}

# refuse <label> <tu> <compiler> <flags...>: must fail, and the first error
# must be config.h's #error naming the standard.
refuse() {
	local label=$1 tu=$2 cc=$3
	shift 3
	local out first
	# shellcheck disable=SC2086
	if out=$("$cc" "$@" -fsyntax-only -I"$inc" $urcu "$tu" 2>&1); then
		fail=$((fail + 1))
		failed+=("$label")
		echo "FAIL: $label: compiled, expected the #error \"$stdmsg ...\""
		return
	fi
	first=$(grep -m1 -E 'error' <<<"$out")
	if grep -q "$stdmsg" <<<"$first"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed+=("$label")
		echo "FAIL: $label: the first error is not config.h's \"$stdmsg\":"
		echo "$out" | sed 's/^/    /' | head -20
	fi
}

all_headers=("$inc"/tally/*.h)
if [ ! -e "${all_headers[0]}" ]; then
	echo "hygiene: no headers in $inc/tally" >&2
	exit 2
fi
headers=()
for i in "${!all_headers[@]}"; do
	[ $((i % share_n + 1)) = "$share_k" ] && headers+=("${all_headers[$i]}")
done
if [ ${#headers[@]} = 0 ]; then
	echo "hygiene: share $share holds none of the ${#all_headers[@]} headers" >&2
	exit 2
fi

ccs=()
cxxs=()
for cc in gcc clang clang-16; do
	if have "$cc"; then ccs+=("$cc"); else skipped+=("$cc (not installed)"); fi
done
for cxx in g++ clang++ clang++-16; do
	if have "$cxx"; then cxxs+=("$cxx"); else skipped+=("$cxx (not installed)"); fi
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

	for cc in "${ccs[@]}"; do
		for std in c11 c17; do
			compile "$name: $cc -std=$std" "$c" "$cc" -std=$std
		done
		refuse "$name: $cc -std=c99 stops at the #error" "$c" "$cc" -std=c99
	done
	for cxxc in "${cxxs[@]}"; do
		for std in c++11 c++14 c++17 c++20; do
			compile "$name: $cxxc -std=$std" "$cxx" "$cxxc" -std=$std
		done
		refuse "$name: $cxxc -std=c++98 stops at the #error" "$cxx" "$cxxc" -std=c++98
	done
	for mode in "-DTALLY_EXTERN=1" "-DTALLY_EXTERN=1 -DTALLY_IMPLEMENTATION" \
		"-DTALLY_INLINE=0"; do
		read -ra m <<<"$mode"
		for cc in gcc clang; do
			have "$cc" && compile "$name: $cc -std=c11 $mode" "$c" "$cc" -std=c11 "${m[@]}"
		done
		for cxxc in g++ clang++; do
			have "$cxxc" && compile "$name: $cxxc -std=c++17 $mode" "$cxx" "$cxxc" \
				-std=c++17 "${m[@]}"
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

echo "hygiene: ${#headers[@]} headers (share $share of ${#all_headers[@]}), $pass checks passed, $fail failed" \
	"(compilers: ${ccs[*]} ${cxxs[*]})"
for s in "${skipped[@]}"; do
	echo "hygiene: skipped $s"
done
if [ $fail -ne 0 ]; then
	printf 'hygiene: FAILED: %s\n' "${failed[@]}"
	exit 1
fi
exit 0
