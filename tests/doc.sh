#!/usr/bin/env bash
# tests/doc.sh [OUTDIR] - render the API reference from the header comments
# (doc/Doxyfile, Doxygen) into OUTDIR (default build/doc; OUTDIR/html/index.html)
# and fail on any Doxygen warning: a public call, macro, type or member
# without a /** comment, or a comment Doxygen cannot read.
#   - Doxygen checks only the names of files it documents, so every header
#     must open with an @file block: one without fails here.
#   - The check must be able to fail: a copy of the headers with an
#     undocumented public function and macro added must make Doxygen warn
#     about both, or this script fails.
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
}

warnings=$(render "$PWD/include" "$out")
if [ -n "$warnings" ]; then
	echo "$warnings"
	echo "doc: $(grep -c . <<<"$warnings") Doxygen warnings (above)"
	status=1
fi

# The check itself: an undocumented public function and macro must be seen.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r include "$tmp/include"
h=$tmp/include/tally/counter.h
sed -i 's|^#endif /\* TALLY_COUNTER_H \*/$|static inline int tally_doc_selftest(void) { return 0; }\n#define TALLY_DOC_SELFTEST 1\n&|' "$h"
grep -q tally_doc_selftest "$h" || { echo "doc: self-test: could not plant a name in counter.h"; exit 2; }
planted=$(render "$tmp/include" "$tmp/out")
for name in tally_doc_selftest TALLY_DOC_SELFTEST; do
	grep -q "$name.*not documented" <<<"$planted" ||
		{ echo "doc: self-test: an undocumented $name went unreported"; status=1; }
done

if [ $status = 0 ]; then
	echo "doc: every public name documented (${#headers[@]} headers); $out/html/index.html"
fi
exit $status
