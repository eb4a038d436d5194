#!/usr/bin/env bash
# bench/codesize.sh - text size and time per update of 100 call sites
# (bench/codesize/sites.c) of each update call (tally_counter_add,
# tally_vec_mod, tally_vec_inc, tally_group_mod: the last only where
# pkg-config finds liburcu-memb) in the three build modes of config.h:
# forced inline (default), TALLY_INLINE=0 (one static copy per translation
# unit), TALLY_EXTERN=1 (one copy per program, in the translation unit that
# defines TALLY_IMPLEMENTATION). Markdown on stdout.
#   CC=clang bench/codesize.sh      another compiler (default cc)
#   ROUNDS=500000 bench/codesize.sh rounds of 100 updates per timing
#   PRIMS="0 1" bench/codesize.sh   only these (0 counter, 1 vec_mod,
#                                   2 vec_inc, 3 group_mod)
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${CC:-cc}
rounds=${ROUNDS:-2000000}
prims=${PRIMS:-0 1 2 3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-std=c11 -O2 -Wall -Wextra -Wpedantic -Iinclude -pthread)
# Warnings are errors only where asked (TALLY_WERROR=1, as ./run-tests sets).
[ "${TALLY_WERROR:-0}" = 1 ] && flags+=(-Werror)
names=(tally_counter_add tally_vec_mod tally_vec_inc tally_group_mod)
echo "| call | mode | .text of sites.o | rseq descriptors (__tally_rseq_cs) | other TU (impl.c .text) | ns per update (thread CPU time, best of 5, call overhead subtracted) |"
echo "|---|---|---|---|---|---|"
for prim in $prims; do
  libs=()
  if [ "$prim" = 3 ]; then
    pkg-config --exists liburcu-memb || { echo "| ${names[3]} | (no liburcu-memb) | | | | |"; continue; }
    read -r -a libs <<<"$(pkg-config --libs liburcu-memb)"
  fi
  for mode in inline noinline extern; do
    case $mode in
    inline) defs=() ;;
    noinline) defs=(-DTALLY_INLINE=0) ;;
    extern) defs=(-DTALLY_EXTERN=1) ;;
    esac
    defs+=(-DCODESIZE_PRIM="$prim")
    "$cc" "${flags[@]}" "${defs[@]}" -c bench/codesize/sites.c -o "$tmp/sites.o"
    "$cc" "${flags[@]}" "${defs[@]}" -DCODESIZE_MODE="\"$mode\"" -c bench/codesize/main.c -o "$tmp/main.o"
    objs=("$tmp/sites.o" "$tmp/main.o")
    impl="-"
    if [ "$mode" = extern ]; then
      "$cc" "${flags[@]}" "${defs[@]}" -c bench/codesize/impl.c -o "$tmp/impl.o"
      objs+=("$tmp/impl.o")
      impl=$(size -A "$tmp/impl.o" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }')
    fi
    "$cc" "${flags[@]}" "${objs[@]}" -o "$tmp/codesize" "${libs[@]}"
    text=$(size -A "$tmp/sites.o" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }')
    rseq=$(size -A "$tmp/sites.o" | awk '$1 == "__tally_rseq_cs" { s += $2 } END { print s + 0 }')
    ns=$("$tmp/codesize" "$rounds" | awk '{ print $2 }')
    echo "| ${names[$prim]} | $mode | $text | $rseq | $impl | $ns |"
  done
done
