#!/usr/bin/env bash
# The fences the error bounds' arguments rest on, checked in the generated
# code (x86_64): a store-buffering window is not something a 2 s stress run
# on two cores can be trusted to hit, so a missing fence is looked for
# where it would be missing.
#   tally__counter_fold_slot      (counter.h: an add that carried)
#   tally__vec_fold_carried       (vec/fold.h: an update that carried)
#   tally__vec_fold_bank_carried  (the same for multi-item updates)
# Each must execute a full barrier (mfence, or a lock-prefixed or xchg
# instruction) before its first CAS: the fence orders the caller's plain
# per-CPU store before the fold's loads, pairing with the fence a fold
# from another CPU runs after its CAS. Without it the first barrier in the
# function is the fold's own lock cmpxchg, after the loads.
#   fences.sh CC INCLUDE_DIR     exit 0 (checked), 1 (a fence missing),
#                                77 (not an x86_64 compiler, or no objdump)
set -u
cc=$1
inc=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v objdump >/dev/null 2>&1 || { echo "fences: SKIPPED: no objdump"; exit 77; }
case $("$cc" -dumpmachine 2>/dev/null) in
x86_64-*) ;;
*) echo "fences: SKIPPED: not an x86_64 compiler ($cc)"; exit 77 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bad=0
for opt in -O1 -O2 -O3; do
	if ! "$cc" -std=c11 $opt -I"$inc" -c "$here/fences.c" -o "$work/f.o"; then
		echo "fences: FAIL: $cc $opt does not compile fences.c"
		exit 1
	fi
	objdump -d --no-show-raw-insn "$work/f.o" >"$work/f.s"
	for fn in tally__counter_fold_slot tally__vec_fold_carried tally__vec_fold_bank_carried; do
		# the function, or a clone of it (fn.constprop.0, fn.isra.0)
		body=$(awk -v fn="$fn" 'index($2, "<" fn ">:") == 1 || index($2, "<" fn ".") == 1 { on = 1; next }
			on && /^$/ { exit } on' "$work/f.s")
		if [ -z "$body" ]; then
			echo "fences: FAIL ($opt): $fn not emitted out of line"
			bad=1
			continue
		fi
		fence=$(printf '%s\n' "$body" | grep -nE '\b(mfence|lock|xchg)\b' | grep -v cmpxchg | head -1 | cut -d: -f1)
		cas=$(printf '%s\n' "$body" | grep -n 'cmpxchg' | head -1 | cut -d: -f1)
		if [ -z "$cas" ]; then
			echo "fences: FAIL ($opt): no CAS in $fn"
			bad=1
		elif [ -z "$fence" ] || [ "$fence" -gt "$cas" ]; then
			echo "fences: FAIL ($opt): $fn has no full barrier before its first CAS:"
			printf '%s\n' "$body" | head -40
			bad=1
		else
			echo "fences: ok ($opt): $fn: barrier at instruction $fence, first CAS at $cas"
		fi
	done
done
exit $bad
