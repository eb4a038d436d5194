#!/usr/bin/env bash
# Build fuzz_model.c with clang's libFuzzer (and ASan + UBSan) and run it.
#   tests/fuzz/run.sh [--out DIR] [--clang CLANG] [--fresh] [-- libFuzzer args ...]
# Without libFuzzer arguments: -runs=2000 -seed=1 -max_len=1024 (the
# short fixed-seed run of the test suite, about 15 s: the committed corpus,
# which already reaches what 10,000 runs from its first 84 inputs found,
# then fresh mutations of it). Long runs on demand, e.g.
#   tests/fuzz/run.sh --out /tmp/tally-fuzz -- -max_total_time=3600 -jobs=2
# The fuzzer reads and grows DIR/corpus and also reads tests/fuzz/corpus
# (never written). --fresh empties DIR/corpus first (a reproducible run).
# Crashes are written to DIR/crash-*; replay one with DIR/fuzz_model FILE
# (TALLY_FUZZ_VERBOSE=1 names each call).
# TALLY_FUZZ_WORD_BITS=32 builds with 32-bit words.
# Exits 77 (skipped) where clang cannot link a libFuzzer program or
# liburcu's pkg-config file is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${TMPDIR:-/tmp}/tally-fuzz
clang=clang
fresh=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--clang) clang=$2; shift 2 ;;
	--fresh) fresh=1; shift ;;
	--) shift; break ;;
	*) echo "usage: $0 [--out DIR] [--clang CLANG] [--fresh] [-- libFuzzer args]" >&2; exit 2 ;;
	esac
done
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-runs=2000 -seed=1 -max_len=1024)

mkdir -p "$out"
out=$(cd "$out" && pwd)
[ $fresh = 1 ] && rm -rf "$out/corpus"
mkdir -p "$out/corpus"

printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
	>"$out/probe.c"
if ! "$clang" -fsanitize=fuzzer,address,undefined "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
	echo "fuzz_model: skipped: $clang cannot link libFuzzer (Debian: libclang-rt-<version>-dev)"
	sed 's/^/    /' "$out/probe.log" | head -5
	exit 77
fi
if ! urcu_cflags=$(pkg-config --cflags liburcu-memb) || ! urcu_libs=$(pkg-config --libs liburcu-memb); then
	echo "fuzz_model: skipped: no liburcu-memb (pkg-config)"
	exit 77
fi
defs=()
[ -n "${TALLY_FUZZ_WORD_BITS:-}" ] && defs+=("-DTALLY_WORD_BITS=$TALLY_FUZZ_WORD_BITS")

# shellcheck disable=SC2086
"$clang" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Wpedantic -Werror ${defs[@]+"${defs[@]}"} -I"$root/include" $urcu_cflags \
	"$here/fuzz_model.c" -o "$out/fuzz_model" $urcu_libs -pthread -lm
cd "$out"
echo "fuzz_model: $out/fuzz_model ${args[*]} $out/corpus $here/corpus"
exec ./fuzz_model -artifact_prefix="$out/" "${args[@]}" "$out/corpus" "$here/corpus"
