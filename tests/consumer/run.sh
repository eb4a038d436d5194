#!/usr/bin/env bash
# Outside consumers of tally, each built with -Werror in C and C++ and run:
#   (a) install tally with cmake --install into <work-dir>/prefix (configured
#       for another prefix: the installed package must be relocatable);
#   (b) find_package(tally CONFIG REQUIRED) + tally::tally against it (and
#       from a C++-only project);
#   (c) add_subdirectory() of the source tree (tally must stay quiet: no
#       tests and no install rules of its own in the outer project);
#   (d) pkg-config: cc $(pkg-config --cflags --libs tally), tally-rstat
#       for the hierarchy, and tally-serve for /metrics (where
#       libmicrohttpd is installed);
#   (e) a counter-only program where liburcu cannot be found: hidden from
#       pkg-config, its headers #error first on the include path. tally
#       (pkg-config) and find_package(tally) must work without it, and
#       tally-rstat / COMPONENTS rstat must be refused.
#   tests/consumer/run.sh <src-dir> <work-dir>
set -euo pipefail

src=$(cd "${1:?usage: run.sh <src-dir> <work-dir>}" && pwd)
work=${2:?usage: run.sh <src-dir> <work-dir>}
here=$(cd "$(dirname "$0")" && pwd)
jobs=${JOBS:-2}
cc=${CC:-cc}
cxx=${CXX:-c++}

mkdir -p "$work"
work=$(cd "$work" && pwd)
# Start clean, removing only what this script creates.
(cd "$work" && rm -rf tally-build configured-prefix prefix find_package find_package-newer \
	cxx_only add_subdirectory add_subdirectory-prefix consumer_pc_c consumer_pc_cxx \
	consumer_pc_rstat no-urcu counter_only counter_only-rstat consumer_nourcu_c \
	consumer_nourcu_cxx consumer_pc_serve)
prefix=$work/prefix
stage="setup"
trap 'echo "consumers: FAILED at: $stage" >&2' ERR

fail() {
	echo "consumers: $*" >&2
	echo "consumers: FAILED at: $stage" >&2
	exit 1
}

version=$(sed -n 's/^#define TALLY_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
	"$src/include/tally/tally.h" | paste -sd.)
[ -n "$version" ] || fail "no version in tally.h"

# ---- (a) install ----------------------------------------------------------
stage="(a) cmake --install"
echo "==== $stage (tally $version)"
cmake -S "$src" -B "$work/tally-build" -DCMAKE_INSTALL_PREFIX="$work/configured-prefix" \
	-DTALLY_BUILD_TESTS=OFF -DTALLY_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/tally-build" -j "$jobs" >/dev/null
cmake --install "$work/tally-build" --prefix "$prefix" >/dev/null
[ ! -e "$work/configured-prefix" ] || fail "install wrote to the configured prefix"
while IFS= read -r h; do
	cmp -s "$src/include/$h" "$prefix/include/$h" || fail "header $h not installed"
done < <(cd "$src/include" && find tally -name '*.h')
for f in share/cmake/tally/tallyConfig.cmake share/cmake/tally/tallyConfigVersion.cmake \
	share/cmake/tally/tallyTargets.cmake share/cmake/tally/tallyRstatTargets.cmake \
	share/cmake/tally/tallyRstatBpTargets.cmake share/cmake/tally/tallyServeTargets.cmake \
	share/pkgconfig/tally.pc share/pkgconfig/tally-rstat.pc share/pkgconfig/tally-rstat-bp.pc share/pkgconfig/tally-serve.pc; do
	[ -f "$prefix/$f" ] || fail "$f not installed"
done
# Nothing but the package: no tests, examples or build files.
extra=$(cd "$prefix" && find . -type f ! -path './include/tally/*.h' \
	! -path './share/cmake/tally/*.cmake' ! -path './share/pkgconfig/tally.pc' \
	! -path './share/pkgconfig/tally-rstat.pc' ! -path './share/pkgconfig/tally-rstat-bp.pc' ! -path './share/pkgconfig/tally-serve.pc')
[ -z "$extra" ] || fail "unexpected installed files: $extra"

# ---- (b) find_package -------------------------------------------------------
stage="(b) find_package"
echo "==== $stage"
cmake -S "$here/find_package" -B "$work/find_package" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/find_package" -j "$jobs" >/dev/null
(cd "$work/find_package" && ctest --output-on-failure -V | grep '^[0-9]*: consumer')
(cd "$work/find_package" && ctest --output-on-failure >/dev/null)
# A newer minor version than installed must be refused.
stage="(b) find_package version check"
if cmake -S "$here/find_package" -B "$work/find_package-newer" -DCMAKE_PREFIX_PATH="$prefix" \
	-DTALLY_WANT_VERSION=99.0 >/dev/null 2>&1; then
	fail "find_package(tally 99.0) accepted tally $version"
fi

stage="(b) find_package, C++ only"
cmake -S "$here/cxx_only" -B "$work/cxx_only" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cxx_only" -j "$jobs" >/dev/null
(cd "$work/cxx_only" && ctest --output-on-failure -V | grep '^[0-9]*: consumer')

# ---- (c) add_subdirectory ---------------------------------------------------
stage="(c) add_subdirectory"
echo "==== $stage"
cmake -S "$here/add_subdirectory" -B "$work/add_subdirectory" -DTALLY_SOURCE_DIR="$src" \
	-DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/add_subdirectory" -j "$jobs" >/dev/null
(cd "$work/add_subdirectory" && ctest --output-on-failure -V | grep '^[0-9]*: consumer')
n=$(cd "$work/add_subdirectory" && ctest -N | sed -n 's/^Total Tests: //p')
[ "$n" = 3 ] || fail "the outer project has $n tests, expected its own 3 (tally added some)"
cmake --install "$work/add_subdirectory" --prefix "$work/add_subdirectory-prefix" >/dev/null
[ -z "$(find "$work/add_subdirectory-prefix" -type f 2>/dev/null)" ] ||
	fail "a bundled tally installed files"

# ---- (d) pkg-config ---------------------------------------------------------
stage="(d) pkg-config"
echo "==== $stage"
export PKG_CONFIG_PATH=$prefix/share/pkgconfig
[ "$(pkg-config --modversion tally)" = "$version" ] ||
	fail "pkg-config says tally $(pkg-config --modversion tally), expected $version"
cflags=$(pkg-config --cflags tally)
libs=$(pkg-config --libs tally)
incdir=$(pkg-config --variable=includedir tally)
[ "$(cd "$incdir" 2>/dev/null && pwd -P)" = "$(cd "$prefix/include" && pwd -P)" ] ||
	fail "pkg-config includedir $incdir is not $prefix/include"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/src/consumer.c" $cflags $libs \
	-o "$work/consumer_pc_c"
# shellcheck disable=SC2086
"$cxx" -std=c++11 -Wall -Wextra -Wpedantic -Werror "$here/src/consumer.cc" $cflags $libs \
	-o "$work/consumer_pc_cxx"
"$work/consumer_pc_c"
"$work/consumer_pc_cxx"
# The hierarchy with urcu-bp through tally-rstat-bp: no thread registers.
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/src/consumer_rstat_bp.c" \
	$(pkg-config --cflags --libs tally-rstat-bp) -o "$work/consumer_pc_rstat_bp"
"$work/consumer_pc_rstat_bp"

# The hierarchy through tally-rstat (tally plus liburcu-memb).
[ "$(pkg-config --modversion tally-rstat)" = "$version" ] || fail "tally-rstat version"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/src/consumer_rstat.c" \
	$(pkg-config --cflags --libs tally-rstat) -o "$work/consumer_pc_rstat"
"$work/consumer_pc_rstat"

# /metrics through tally-serve (tally plus libmicrohttpd), where it is.
if pkg-config --exists libmicrohttpd; then
	[ "$(pkg-config --modversion tally-serve)" = "$version" ] || fail "tally-serve version"
	# shellcheck disable=SC2086
	"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/src/consumer_serve.c" \
		$(pkg-config --cflags --libs tally-serve) -o "$work/consumer_pc_serve"
	"$work/consumer_pc_serve"
else
	echo "consumers: libmicrohttpd not installed: tally-serve not checked"
fi

# ---- (e) counter-only, liburcu not visible ----------------------------------
stage="(e) counter-only without liburcu"
echo "==== $stage"
# pkg-config sees only the installed tally; the compiler finds urcu headers
# that stop the build if anything includes one.
mkdir -p "$work/no-urcu/pc" "$work/no-urcu/include"
export PKG_CONFIG_LIBDIR=$work/no-urcu/pc PKG_CONFIG_PATH=$prefix/share/pkgconfig
! pkg-config --exists liburcu-memb || fail "liburcu-memb still visible to pkg-config"
! pkg-config --exists tally-rstat 2>/dev/null || fail "tally-rstat resolved without liburcu"
poison=$work/no-urcu/include
for h in urcu.h urcu-bp.h urcu-qsbr.h urcu/urcu-memb.h urcu/urcu-mb.h urcu/urcu-bp.h \
	urcu/urcu-qsbr.h urcu/urcu-signal.h urcu/rculist.h urcu/compiler.h urcu/arch.h \
	urcu/uatomic.h urcu/ref.h \
	$(grep -rhoE '^#[[:space:]]*include[[:space:]]*<urcu[^>]*>' "$src/include" | sed 's/.*<//; s/>//'); do
	mkdir -p "$(dirname "$poison/$h")"
	echo '#error "liburcu is not available to this consumer"' >"$poison/$h"
done
cflags=$(pkg-config --cflags tally)
libs=$(pkg-config --libs tally)
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$poison" "$here/src/consumer.c" $cflags \
	$libs -o "$work/consumer_nourcu_c"
# shellcheck disable=SC2086
"$cxx" -std=c++11 -Wall -Wextra -Wpedantic -Werror -I"$poison" "$here/src/consumer.cc" \
	$cflags $libs -o "$work/consumer_nourcu_cxx"
"$work/consumer_nourcu_c"
"$work/consumer_nourcu_cxx"
# The poison works: the hierarchy's header stops there.
# shellcheck disable=SC2086
if "$cc" -std=c11 -fsyntax-only -I"$poison" $cflags "$here/src/consumer_rstat.c" \
	>/dev/null 2>&1; then
	fail "rstat.h compiled with the urcu headers hidden: the check proves nothing"
fi
cmake -S "$here/counter_only" -B "$work/counter_only" -DCMAKE_PREFIX_PATH="$prefix" \
	-DTALLY_POISON_DIR="$poison" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/counter_only" -j "$jobs" >/dev/null
(cd "$work/counter_only" && ctest --output-on-failure -V | grep '^[0-9]*: consumer')
(cd "$work/counter_only" && ctest --output-on-failure >/dev/null)
stage="(e) find_package(tally COMPONENTS rstat) without liburcu"
if cmake -S "$here/counter_only" -B "$work/counter_only-rstat" -DCMAKE_PREFIX_PATH="$prefix" \
	-DTALLY_POISON_DIR="$poison" -DTALLY_ASK_RSTAT=ON >/dev/null 2>&1; then
	fail "find_package(tally COMPONENTS rstat) succeeded without liburcu"
fi
unset PKG_CONFIG_LIBDIR

echo "consumers: all passed (install, find_package, add_subdirectory, pkg-config, counter-only without liburcu)"
