#!/usr/bin/env bash
# tests/readme.sh [FILE.md ...] - compile every C snippet of the README
# (default: README.md at the top of the tree), so that none drifts from the
# headers. Each ```c block is compiled as C11 with -Wall -Wextra -Werror
# against include/ (gcc, or $CC), with liburcu-memb's flags; it fails with
# the block's README line on the first error, and the compiler's messages
# point at README lines (#line).
#
# The convention, written in the Markdown (it renders as plain code):
#
#   ```c                 a whole translation unit, compiled as it stands
#                        (its own #include lines); linked as well when it
#                        defines main(), with liburcu-memb and -pthread -lm.
#
#   ```c fragment        statements and declarations, as inside a function:
#                        placed in the body of a void function, after
#                        #include <tally/tally.h>. The fragment's own
#                        #include lines (its first lines, say) go above the
#                        function, so it can show what it includes.
#
#   ```c fragment tally/rstat.h tally/export_rstat.h
#                        words after "fragment" ending in .h are more headers
#                        to include (<tally/rstat.h>, ...) before the body.
#
#   <!-- c context       an HTML comment (not rendered) right before a block:
#   extern struct tally_counter hits;
#   static void release(struct tally_ref *r) { (void)r; }
#   -->                  its lines, up to a line "-->", are C placed at file
#                        scope before the next ```c block (after its
#                        headers): the declarations a fragment uses without
#                        showing them. It applies to that one block.
#
# Every snippet is a piece, not a program that uses all it shows, so
# -Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-function
# are added; every other warning is an error. A snippet that includes
# <tally/serve.h> (or names it) needs libmicrohttpd: where pkg-config has no
# libmicrohttpd it is reported as skipped, not failed. Other fences (sh,
# yaml, plain) are not looked at. A self-test checks that a broken snippet
# is reported with its line.
#
# Figures: bench/RESULTS.md is the one source of measured figures. The
# README's "## Benchmarks" section quotes it by copying table rows: every
# row of a table there (its header included, its |---| line not) must be a
# line of bench/RESULTS.md (beside the README) as it stands, verbatim; and
# the section's prose (outside tables, fenced blocks and `code spans`)
# holds no digit, so no figure is stated there but by a copied row. A
# figure rerun in RESULTS.md thus fails the README until its row is copied
# again. A self-test checks that a row not in RESULTS.md and a digit in
# the prose are both reported with their lines.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cc=${CC:-gcc}
command -v "$cc" >/dev/null || { echo "readme: no C compiler ($cc)" >&2; exit 2; }
urcu_cflags=$(pkg-config --cflags liburcu-memb 2>/dev/null) ||
	{ echo "readme: no liburcu-memb (pkg-config; Debian: liburcu-dev)" >&2; exit 2; }
urcu_libs=$(pkg-config --libs liburcu-memb)
mhd=0
if pkg-config --exists libmicrohttpd 2>/dev/null; then
	mhd=1
	mhd_cflags=$(pkg-config --cflags libmicrohttpd)
	mhd_libs=$(pkg-config --libs libmicrohttpd)
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tally-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
flags=(-std=c11 -Wall -Wextra -Werror -Wno-unused-variable -Wno-unused-but-set-variable
	-Wno-unused-function -I"$root/include")

# extract FILE.md DIR: writes DIR/<k>.c for each ```c block and a line
# "k fence-line kind(tu|fragment) serve(0|1) main(0|1)" per block to
# DIR/list.
extract() {
	awk -v dir="$2" -v md="$(basename "$1")" -v path="$1" '
	function flush_block(   f, i, h, n, words, serve, hasmain) {
		f = dir "/" k ".c"
		serve = (info ~ /(^|[ \t])tally\/serve\.h([ \t]|$)/)
		printf "" > f
		if (frag) {
			print "#include <tally/tally.h>" > f
			n = split(info, words, /[ \t]+/)
			for (i = 1; i <= n; i++)
				if (words[i] ~ /\.h$/)
					print "#include <" words[i] ">" > f
		}
		if (nctx) {
			printf "#line %d \"%s\"\n", ctxline + 1, md > f
			for (i = 1; i <= nctx; i++)
				print ctx[i] > f
		}
		hasmain = 0
		for (i = 1; i <= nbody; i++) {
			if (body[i] ~ /^[ \t]*#[ \t]*include[ \t]*<tally\/serve\.h>/)
				serve = 1
			if (body[i] ~ /(^|[^A-Za-z0-9_])main[ \t]*\(/)
				hasmain = 1
		}
		if (frag) {
			# the fragment: its #include lines go above the function
			for (i = 1; i <= nbody; i++)
				if (body[i] ~ /^[ \t]*#[ \t]*include/) {
					printf "#line %d \"%s\"\n", fence + i, md > f
					print body[i] > f
				}
			printf "void tally_readme_snippet_%d(void);\n", k > f
			printf "void tally_readme_snippet_%d(void)\n{\n", k > f
		}
		printf "#line %d \"%s\"\n", fence + 1, md > f
		for (i = 1; i <= nbody; i++)
			print (frag && body[i] ~ /^[ \t]*#[ \t]*include/ ? "" : body[i]) > f
		if (frag)
			print "}" > f
		close(f)
		print k, fence, (frag ? "fragment" : "tu"), serve, hasmain > (dir "/list")
		nctx = 0
	}
	inblock {
		if ($0 ~ /^```[ \t]*$/) { flush_block(); inblock = 0; next }
		body[++nbody] = $0
		next
	}
	inctx {
		if ($0 ~ /^-->[ \t]*$/) { inctx = 0; pending = 1; next }
		ctx[++nctx] = $0
		next
	}
	/^<!--[ \t]+c[ \t]+context[ \t]*$/ { inctx = 1; nctx = 0; ctxline = NR; next }
	/^```c([ \t]|$)/ {
		k++
		pending = 0
		inblock = 1; nbody = 0; fence = NR
		info = substr($0, 5)
		sub(/^[ \t]+/, "", info)
		frag = (info ~ /^fragment([ \t]|$)/)
		next
	}
	pending && /[^ \t]/ {
		printf "readme: %s:%d: a c context comment must be followed by a ```c block (blank lines between at most)\n", path, ctxline
		bad = 1
		exit 1
	}
	END {
		if (bad) exit 1
		if (inblock) { printf "readme: %s:%d: the ```c block is not closed\n", path, fence; exit 1 }
		if (inctx) { printf "readme: %s:%d: the c context comment is not closed (-->)\n", path, ctxline; exit 1 }
	}' "$1"
}

# check FILE.md: compile its snippets; prints a line per failure; returns
# the number of failures (0: all compiled or skipped).
check() {
	local md=$1 dir k fence kind serve hasmain out more libs rc label n=0 failed=0 skipped=0
	dir=$(mktemp -d "$work/md.XXXXXX")
	: >"$dir/list"
	extract "$md" "$dir" || return 1
	while read -r k fence kind serve hasmain; do
		more=() libs=()
		if [ "$serve" = 1 ]; then
			if [ $mhd = 0 ]; then
				echo "readme: $md:$fence: skipped (the snippet uses tally/serve.h; no libmicrohttpd)"
				skipped=$((skipped + 1))
				continue
			fi
			# shellcheck disable=SC2206
			more=($mhd_cflags) libs=($mhd_libs)
		fi
		n=$((n + 1))
		# shellcheck disable=SC2086
		if [ "$hasmain" = 1 ] && [ "$kind" = tu ]; then # a program: link it too
			out=$("$cc" "${flags[@]}" $urcu_cflags ${more[@]+"${more[@]}"} "$dir/$k.c" \
				-o "$dir/$k" $urcu_libs ${libs[@]+"${libs[@]}"} -pthread -lm 2>&1)
		else
			out=$("$cc" "${flags[@]}" $urcu_cflags ${more[@]+"${more[@]}"} -c "$dir/$k.c" \
				-o "$dir/$k.o" 2>&1)
		fi
		rc=$?
		if [ $rc -ne 0 ]; then
			failed=$((failed + 1))
			label=c
			[ "$kind" = fragment ] && label='c fragment'
			echo "readme: $md:$fence: the \`\`\`$label block does not compile ($cc):"
			sed 's/^/    /' <<<"$out" | head -30
		fi
	done <"$dir/list"
	echo "readme: $md: $n snippets compiled, $failed failed, $skipped skipped"
	return $failed
}

# The check must be able to fail: a broken fragment on line 6 of a planted
# file is reported with that line, and a good one beside it passes.
selftest() {
	local md="$work/selftest.md" out
	printf '%s\n' '# t' '```c fragment' 'struct tally_counter c;' 'tally_counter_init(&c, 0, 0);' \
		'```' '```c fragment' 'tally_counter_add_nonexistent(&c, 1);' '```' >"$md"
	out=$(check "$md")
	if ! grep -q "selftest.md:6: the \`\`\`c fragment block does not compile" <<<"$out" ||
		grep -q 'selftest.md:2:' <<<"$out"; then
		echo "readme: self-test: a broken snippet was not reported at its line:"
		sed 's/^/    /' <<<"$out"
		return 1
	fi
}

# figures FILE.md [RESULTS.md]: check the "## Benchmarks" section of
# FILE.md against RESULTS.md (default: bench/RESULTS.md beside FILE.md);
# prints a line per failure; returns the number of failures (at most 255).
figures() {
	local md=$1 results=${2:-$(dirname "$1")/bench/RESULTS.md} out n
	if ! grep -q '^## Benchmarks[[:space:]]*$' "$md"; then
		echo "readme: $md: no Benchmarks section: no figures to check"
		return 0
	fi
	if [ ! -f "$results" ]; then
		echo "readme: $md: no $results to check its Benchmarks section against"
		return 1
	fi
	out=$(awk -v md="$md" -v res="$results" '
	FNR == NR { have[$0] = 1; next }
	/^## / { insec = ($0 ~ /^## Benchmarks[ \t]*$/); next }
	!insec { next }
	/^```/ { fence = !fence; next }
	fence { next }
	/^\|/ {
		if ($0 ~ /^\|[-:| \t]+\|[ \t]*$/)
			next
		rows++
		if (!($0 in have)) {
			printf "readme: %s:%d: this row is not a line of %s (copy it again from there):\n    %s\n", md, FNR, res, $0
			bad++
		}
		next
	}
	{
		line = $0
		gsub(/`[^`]*`/, "", line)
		if (line ~ /[0-9]/) {
			printf "readme: %s:%d: a figure outside a row copied from %s (quote it as a row, or spell it out):\n    %s\n", md, FNR, res, $0
			bad++
		}
	}
	END {
		printf "readme: %s: %d benchmark rows checked against %s, %d failed\n", md, rows, res, bad
		exit bad > 255 ? 255 : bad
	}' "$results" "$md")
	n=$?
	echo "$out"
	return $n
}

# The figures check must be able to fail: a row not in the results (line
# 5) and a digit in the prose (line 8) are reported, a copied row is not.
figures_selftest() {
	local md="$work/figures.md" res="$work/RESULTS.md" out
	printf '%s\n' '| case | ns |' '|---|---|' '| add | 1.5 |' >"$res"
	# shellcheck disable=SC2016 # the backquotes are Markdown's, not the shell's
	printf '%s\n' '# t' '## Benchmarks' '| case | ns |' '|---|---|' '| add | 1.4 |' '| add | 1.5 |' \
		'Runs with `TALLY_BENCH_THREADS=1,2`, two threads.' 'The add is 3x faster.' '## Next' '5 ns' >"$md"
	out=$(figures "$md" "$res")
	if ! grep -q 'figures.md:5: this row is not' <<<"$out" ||
		! grep -q 'figures.md:8: a figure outside' <<<"$out" ||
		grep -q 'figures.md:\(3\|6\|7\|10\):' <<<"$out"; then
		echo "readme: self-test: the figures check did not report what it should:"
		sed 's/^/    /' <<<"$out"
		return 1
	fi
}

status=0
selftest || status=1
figures_selftest || status=1
[ $# -eq 0 ] && set -- "$root/README.md"
for md in "$@"; do
	[ -f "$md" ] || { echo "readme: no such file: $md" >&2; exit 2; }
	check "$md" || status=1
	figures "$md" || status=1
done
exit $status
