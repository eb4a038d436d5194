#!/usr/bin/env bash
# tests/doc.sh [OUTDIR] - render the API reference from the header comments
# (doc/Doxyfile, Doxygen) into OUTDIR (default build/doc; OUTDIR/html/index.html)
# and fail on any Doxygen warning: a public call, macro, type or member
# without a /** comment, or a comment Doxygen cannot read.
#   - Doxygen checks only the names of files it documents, so every header
#     must open with an @file block: one without fails here.
#   - Doxygen does not always warn about a struct whose members are all
#     private: every public struct, union and enum must have a /** comment
#     above its definition (checked here).
#   - The check must be able to fail: a copy of the headers with an
#     undocumented public function, macro and struct added must be reported
#     for all three, or this script fails.
# doc/doxify.py turns plain comments above public names into /** ones.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-build/doc}" && cd "${1:-build/doc}" && pwd)
command -v doxygen >/dev/null || { echo "doc: doxygen missing (Debian: doxygen)" >&2; exit 2; }

headers=(include/tally/*.h include/tally/*/*.h)
status=0
for h in "${headers[@]}"; do
	grep -q '^ \* @file' "$h" || { echo "$h:1: no @file block: its names go unchecked"; status=1; }
done

# Doxygen does not always warn about a struct, union or enum whose members
# are all private (excluded): every public one needs a /** comment above
# its definition (blank lines allowed between).
undocumented_types() { # headers...: prints file:line of each
	awk 'FNR == 1 { doc = 0; inc = 0 }
	inc { if ($0 ~ /\*\//) inc = 0; next }
	/^[ \t]*\/\*/ {
		doc = ($0 ~ /^[ \t]*\/\*\*/ && $0 !~ /^[ \t]*\/\*\*</)
		if ($0 !~ /\*\//) inc = 1
		next
	}
	/^[ \t]*$/ { next }
	/^(typedef[ \t]+)?(struct|union|enum)[ \t]+tally_[a-z0-9][a-z0-9_]*[ \t]*\{/ {
		if (!doc && match($0, /(struct|union|enum)[ \t]+tally_[a-z0-9_]*/))
			print FILENAME ":" FNR ": warning: " substr($0, RSTART, RLENGTH) \
				" is not documented (no /** comment above it)"
	}
	{ doc = 0 }' "$@"
}

render() { # include-root, output dir: prints the warnings
	mkdir -p "$2"
	(cat doc/Doxyfile
	 echo "INPUT = $1/tally"
	 echo "STRIP_FROM_PATH = $1"
	 echo "STRIP_FROM_INC_PATH = $1"
	 echo "INCLUDE_PATH = $1"
	 echo "OUTPUT_DIRECTORY = $2"
	 echo "WARN_AS_ERROR = NO"
	 echo "WARN_LOGFILE = $2/warnings.txt") | doxygen - >/dev/null
	cat "$2/warnings.txt"
	undocumented_types "$1"/tally/*.h "$1"/tally/*/*.h
}

warnings=$(render "$PWD/include" "$out")
if [ -n "$warnings" ]; then
	echo "$warnings"
	echo "doc: $(grep -c . <<<"$warnings") Doxygen warnings (above)"
	status=1
fi

# The check itself: an undocumented public function, macro and struct must
# be seen.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r include "$tmp/include"
h=$tmp/include/tally/counter.h
sed -i 's|^#endif /\* TALLY_COUNTER_H \*/$|static inline int tally_doc_selftest(void) { return 0; }\n#define TALLY_DOC_SELFTEST 1\nstruct tally_doc_selftest_s {\n\tint tally__x;\n};\n&|' "$h"
grep -q tally_doc_selftest "$h" || { echo "doc: self-test: could not plant a name in counter.h"; exit 2; }
planted=$(render "$tmp/include" "$tmp/out")
for what in 'tally_doc_selftest(void) (function)' 'TALLY_DOC_SELFTEST (macro definition)' \
	'struct tally_doc_selftest_s is not documented'; do
	grep -qF "$what" <<<"$planted" ||
		{ echo "doc: self-test: an undocumented name went unreported: $what"; status=1; }
done

if [ $status = 0 ]; then
	echo "doc: every public name documented (${#headers[@]} headers); $out/html/index.html"
fi
exit $status
