#!/usr/bin/env bash
# Check every Promela model in this directory with SPIN, exhaustively.
#   tests/formal/check.sh            all variants, one line each
#   tests/formal/check.sh bitmap     only the variants of bitmap.pml
#   FORMAL_LONG=1 tests/formal/check.sh   adds the longer runs
# Each variant is expected either to pass (no assertion violated, search
# complete) or to fail (SPIN finds an assertion violation: the models of
# defective designs, which also show the harness can fail). Exit status: 0
# if every variant met its expectation, 1 if not, 77 if spin or a C
# compiler is missing (the test is then skipped).
set -u
here=$(cd "$(dirname "$0")" && pwd)
filter=${1:-}

if ! command -v spin >/dev/null 2>&1; then
	echo "formal: SKIPPED: spin is not installed (Debian package 'spin')"
	exit 77
fi
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "formal: SKIPPED: no C compiler ($cc) to build SPIN's verifiers"
	exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/*.pml "$work"/

# model | spin -D flags | expectation (pass / fail) | what it shows
variants=(
	"old_push.pml||fail|today's list push: a flush after A returned misses A (preempted push)"
	"old_push.pml|-DONE_UPDATER|pass|same flusher and check with A alone"
	"bitmap.pml||pass|dirty bitmap, full fences, locked RMWs (x86)"
	"bitmap.pml|-DMEMBARRIER|pass|dirty bitmap, compiler barrier + membarrier()"
	"bitmap.pml|-DNOBARRIER|fail|dirty bitmap without BARRIER_U/F: store buffering"
	"bitmap.pml|-DRELAXED_RMW|fail|relaxed bit RMWs: leaf/summary store buffering"
	"bitmap.pml|-DRELAXED_RMW -DBIT_FENCES|pass|relaxed bit RMWs plus leaf/summary fences"
	"bitmap.pml|-DLEAF_WORD|pass|dirty bitmap, shared leaf word as in the code"
	"bitmap.pml|-DLEAF_WORD -DNOBARRIER|fail|shared leaf word without BARRIER_U/F"
	"bitmap.pml|-DLEAF_WORD -DMEMBARRIER|pass|shared leaf word, membarrier() pairing"
	"bitmap.pml|-DBYTES|pass|rseq mark half: plain 32-bit stores after the add, no barrier, no section"
	"bitmap.pml|-DBYTES -DMEMBARRIER|pass|mark half, membarrier() only for shared-half clears"
	"bitmap.pml|-DBYTES -DBYTES_SKIP|fail|mark half skipping set marks: store buffering"
	"bitmap.pml|-DBYTES -DBYTES_FIRST|fail|mark half stored before the add: the drain reads the word too early"
	"bitmap.pml|-DSC|pass|dirty bitmap, sequentially consistent"
	"bitmap.pml|-DSC -DNOBARRIER|pass|sequentially consistent needs no barrier"
	"destroy.pml||pass|destroy: hand-over after the grace period, under the lock"
	"destroy.pml|-DNFLUSH=0|pass|same, no concurrent flush"
	"destroy.pml|-DOLD|fail|old destroy: use-after-free / lost delta"
	"destroy.pml|-DOLD -DNFLUSH=0|fail|old destroy: lost delta"
	"destroy.pml|-DCB_NOLOCK|fail|hand-over without the flush lock: double count"
	"dying.pml||pass|updates on dying groups (a chain) reach the nearest live ancestor, once, in time"
	"dying.pml|-DNFLUSH=0|pass|same, no concurrent flush"
	"dying.pml|-DREFUSE|fail|old mod: -EINVAL once the destroy is visible: the update lost"
	"dying.pml|-DNO_LATE|fail|deferred free without the late hand-over: an update after the last drain lost"
	"dying.pml|-DTO_PARENT|fail|hand-over to a dead parent, not the nearest live ancestor: lost"
	"dying.pml|-DNO_REFS|fail|parent freed before its dying child: use-after-free in the ancestor walk"
	"dying.pml|-DNO_RETIRE|fail|destroy without its flush of the group: a flush after the update misses it"
	"dying.pml|-DLATE_NOLOCK|fail|late hand-over without the flush lock: counted twice"
	"ref_free.pml||pass|a destroyed group freed after its grace period and its last put, whichever is last"
	"ref_free.pml|-DFREE_AT_GP|fail|freed at the grace period whatever the references: use-after-free"
	"ref_free.pml|-DFREE_AT_PUT|fail|freed at the last put before the grace period: use-after-free"
	"ref_free.pml|-DNO_LATE|fail|freed without the late hand-over: a holder's update lost"
	"threshold.pml|-DOLD|fail|settle subtracts only what it took: a crossing update after the last drain is left below T"
	"threshold.pml|-DOLD -DNUPD=3 -DNFL=2 -DT=3|fail|same, three updates, two concurrent flushes"
	"threshold.pml||pass|settle re-arms past T: the crossing update's flush reflects it"
	"threshold.pml|-DNUPD=3 -DNFL=2 -DT=3|pass|re-arming settle, three updates, two concurrent flushes"
	"hist.pml||pass|histogram cut: done, sums, halves; accepted when they add up"
	"hist.pml|-DBAD_ORDER|fail|histogram cut reading halves before done: inexact"
	"hist.pml|-DNO_CHECK|fail|histogram cut without the add-up check: inexact"
	"hist.pml|-DBAD_RECORD|fail|histogram record adding done before sum: inexact"
	"hist.pml|-DSPLIT_SLOTS|fail|histogram record with sum and done on two slots: inexact"
	"hist_weight.pml||fail|histogram read, records of several observations, add-up check alone: an unfinished record and a wrapped half cancel"
	"hist_weight.pml|-DBIG -DL=2|pass|histogram read waiting for big records (started == finished, started unchanged): exact"
	"hist_weight.pml|-DBIG -DL=3|fail|histogram read, small records' weights in flight reaching the half's modulus: inexact"
	"hist_weight.pml|-DBIG -DL=2 -DNO_RECHECK|fail|histogram read not re-reading started after its passes: inexact"
	"hist_weight.pml|-DBIG -DL=2 -DNO_IDLE|fail|histogram read not waiting for big records in flight before its passes: inexact"
	"hist.pml|-DRSEQ|pass|histogram record as one rseq section, aborts anywhere, the xadd's and stosq's sentinels"
	"hist.pml|-DRSEQ -DBAD_HANDLER|fail|rseq record restarting after the half's add: counted twice"
	"hist.pml|-DRSEQ -DLATE_SENTINEL|fail|rseq record moving its sentinels after the stores: counted twice"
	"hist.pml|-DRSEQ -DNO_ABORT|fail|rseq record, sections on one CPU not exclusive: a sum lost"
	"hist.pml|-DRSEQ -DSHARED_LAST|fail|cut reading the shared slot's done after the CPU slots' sums: inexact"
	"fold.pml||fail|counter fold_all vs rseq add: slot left past batch"
	"fold.pml|-DMIGRATED|fail|migrated adder's fold vs rseq add: past batch"
	"fold.pml|-DBIG -DNA=3 -DNF=2 -DBOUND=3|fail|two races: the error grows"
	"fold.pml|-DEXACT_ONLY|pass|no count lost or doubled, sum exact (TSO)"
	"fold.pml|-DSC|pass|sequentially consistent: bound kept"
	"fold.pml|-DBIG -DNA=3 -DNF=2 -DSC|pass|sequentially consistent, two folds: bound kept"
	"fold.pml|-DLOCKED_ADD|pass|locked add (atomic path on x86): bound kept"
	"fold.pml|-DFIX_MEMB|pass|membarrier() after a remote fold's CAS: bound kept"
	"fold.pml|-DMIGRATED -DFIX_MEMB|pass|same, migrated adder"
	"fold.pml|-DBIG -DNA=3 -DNF=2 -DBOUND=3 -DFIX_MEMB|pass|same, two folds"
	"fold.pml|-DCARRY -DBATCH=4 -DBOUND=8 -DBIG -DNA=3 -DNF=2|pass|carry-checked add: within 2 * batch"
	"fold.pml|-DCARRY -DBATCH=4 -DBOUND=8 -DMIGRATED -DBIG -DNA=3|pass|carry-checked add, migrated adder"
	"fold.pml|-DCARRY -DCARRY_NOFENCE -DBATCH=2 -DBOUND=4 -DBIG -DNA=4 -DNF=3|fail|carry-checked add without its fence"
	"fold.pml|-DCARRY -DBATCH=4 -DBOUND=4 -DBIG -DNA=3 -DNF=2 -DSC|fail|carry check: batch alone is not a bound"
	"fold.pml|-DVEC -DTHR=1 -DBIG -DNA=3|fail|vector rule, no fence: tally_vec_fold leaves a slot past t"
	"fold.pml|-DVEC -DTHR=1 -DBIG -DNA=3 -DMIGRATED|fail|vector rule, no fence: migrated fold, past t"
	"fold.pml|-DVEC -DTHR=1 -DBIG -DNA=3 -DNF=2 -DBOUND=3|fail|vector rule, no fence: two races pass 2t"
	"fold.pml|-DVEC -DVEC_CARRY -DTHR=2 -DBATCH=2 -DBOUND=4 -DBIG -DNA=3 -DNF=2|pass|vector rule, carry fence: within t + P - 1"
	"fold.pml|-DVEC -DVEC_CARRY -DTHR=3 -DBATCH=2 -DBOUND=5 -DBIG -DNA=3 -DMIGRATED|pass|vector rule, carry fence, migrated fold"
	"fold.pml|-DVEC -DVEC_CARRY -DTHR=1 -DBATCH=1 -DBOUND=2 -DBIG -DNA=3 -DNF=2 -DSC|pass|vector rule, sequentially consistent: t"
	"fold.pml|-DVEC -DVEC_CARRY -DVEC_NOFENCE -DTHR=2 -DBATCH=2 -DBOUND=4 -DBIG -DNA=3 -DNF=2|fail|vector rule, carry check without its fence"
	"fold.pml|-DTREE -DBIG -DNA=2|pass|counter tree: nodes and top exact, 0 <= sum - read < E"
	"fold.pml|-DTREE -DBIG -DNA=2 -DTREE_RELAXED|pass|counter tree, relaxed node adds: no fence needed"
	"fold.pml|-DTREE -DBIG -DNA=2 -DTREE_RELOAD|fail|counter tree, carry from a reload: lost or doubled carry"
	"fold.pml|-DTREE -DBIG -DNA=2 -DTREE_BOUND=4|fail|counter tree: the bound E is reached minus one"
)
# Longer runs on demand (FORMAL_LONG=1; about 3 million states each).
if [ "${FORMAL_LONG:-0}" = 1 ]; then
	variants+=(
		"fold.pml|-DCARRY -DBATCH=2 -DBOUND=4 -DBIG -DNA=4 -DNF=3|pass|carry-checked add, 4 adds, 3 folds"
		"fold.pml|-DCARRY -DBATCH=2 -DBOUND=4 -DBIG -DNA=4 -DNF=3 -DSC|pass|same, sequentially consistent"
		"fold.pml|-DTREE -DBIG|pass|counter tree, 3 adds each (14 million states)"
		"fold.pml|-DTREE -DBIG -DTREE_RELAXED|pass|counter tree, relaxed node adds, 3 adds each"
	)
fi

bad=0
n=0
t0=$(date +%s.%N)
for v in "${variants[@]}"; do
	IFS='|' read -r model flags expect what <<<"$v"
	case $model in *"$filter"*) ;; *) continue ;; esac
	n=$((n + 1))
	dir=$work/run$n
	mkdir -p "$dir"
	cp "$work"/*.pml "$dir"/
	s=$(date +%s.%N)
	# shellcheck disable=SC2086
	if ! (cd "$dir" && spin $flags -a "$model" >spin.out 2>&1 &&
		"$cc" -w -O0 -DSAFETY -o pan pan.c >cc.out 2>&1); then
		echo "FAIL  $model $flags: spin or cc failed"
		cat "$dir"/spin.out "$dir"/cc.out 2>/dev/null | head -20
		bad=1
		continue
	fi
	(cd "$dir" && ./pan -m100000 -w22 >pan.out 2>&1)
	e=$(date +%s.%N)
	states=$(awk '/states, stored/ { print $1; exit }' "$dir"/pan.out)
	secs=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f", b - a }')
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir"/pan.out | head -1)
	violated=0
	grep -q "assertion violated" "$dir"/pan.out && violated=1
	incomplete=0
	grep -q "max search depth too small" "$dir"/pan.out && incomplete=1
	result=
	if [ "$expect" = pass ]; then
		if [ "$errors" = 0 ] && [ $incomplete = 0 ] && [ -n "$states" ]; then
			result="PASS  $model ${flags:-(default)}: verified"
		fi
	else
		if [ $violated = 1 ]; then
			result="PASS  $model ${flags:-(default)}: violation found, as expected"
		fi
	fi
	if [ -n "$result" ]; then
		printf '%s (%s states, %s s) -- %s\n' "$result" "${states:-?}" "$secs" "$what"
	else
		printf 'FAIL  %s %s: expected %s, got errors=%s incomplete=%s -- %s\n' \
			"$model" "${flags:-(default)}" "$expect" "${errors:-?}" "$incomplete" "$what"
		cat "$dir"/pan.out
		if [ -f "$dir/$model.trail" ]; then
			# shellcheck disable=SC2086
			(cd "$dir" && spin $flags -t -p "$model" | tail -40)
		fi
		bad=1
	fi
done
t1=$(date +%s.%N)
if [ $n = 0 ]; then
	echo "formal: no variant matches '$filter'"
	exit 1
fi
total=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
if [ $bad = 0 ]; then
	echo "formal: all $n variants as expected ($total s)"
else
	echo "formal: some variants did not meet their expectation ($total s)"
fi
exit $bad
