#!/usr/bin/env bash
# The ports flavour: tally on other Linux architectures and C libraries.
#   .ci/ports.sh <build-root> [target...]      (./run-tests ports calls it)
# Targets (default: aarch64 armhf s390x musl x32; "all" adds riscv64 and
# ppc64el; TALLY_PORTS="a b ..." or TALLY_PORTS=all chooses too):
#   aarch64 armhf riscv64 ppc64el s390x
#            clang --target=<triple> with Debian's cross C library
#            (libc6-dev-<arch>-cross), run under qemu-user
#            (CMAKE_CROSSCOMPILING_EMULATOR): the plain and stress programs
#            (once: with no rseq path here the default build is the
#            atomic one), and on all but aarch64 the examples' tests and
#            the fuzzers' replays (single-threaded C: aarch64's
#            little-endian LP64 is the host's, armhf and s390x are not;
#            ports-all's riscv64 and ppc64el run them). liburcu for rstat.h
#            comes from Debian's .debs for that architecture, unpacked into a
#            sysroot under the build root; Debian 12 has none for riscv64,
#            so rstat.h and the examples that need it are left out there.
#   musl     x86_64 with musl-gcc (no liburcu, no kernel headers): the
#            counter/vec/cost/inflight programs, run natively.
#   x32      gcc -mx32: compiled and linked only (the kernel here does not
#            run x32 programs).
# qemu-user implements neither rseq (the atomic path runs) nor seccomp, and
# runs on the host's memory model: these runs prove atomicity, endianness
# (s390x is big-endian), ABI and type sizes (armhf is 32-bit), not barriers
# on weak-memory hardware.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
root=${1:?usage: ports.sh <build-root> [target...]}
shift
mkdir -p "$root"
root=$(cd "$root" && pwd)
jobs=${JOBS:-2}
export TALLY_STRESS_SECONDS=${TALLY_PORTS_STRESS_SECONDS:-1}
# gcc's debug information as line tables only (-g1), as in ./run-tests:
# what a failing program's backtrace needs, without variable tracking.
g1=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
# The plain programs at -O0, as in ./run-tests' sanitizer builds (a third
# of the compile); the stress programs and fuzzers keep -O2.
t0=(-DTALLY_TEST_FLAGS=-O0)

default=(aarch64 armhf s390x musl x32)
all=(aarch64 armhf riscv64 ppc64el s390x musl x32)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	# shellcheck disable=SC2206
	targets=(${TALLY_PORTS:-${default[*]}})
fi
[ "${targets[*]}" = all ] && targets=("${all[@]}")

# target -> clang triple, Debian architecture, qemu binary, liburcu or not
triple() {
	case $1 in
	aarch64) echo aarch64-linux-gnu ;;
	armhf) echo arm-linux-gnueabihf ;;
	riscv64) echo riscv64-linux-gnu ;;
	ppc64el) echo powerpc64le-linux-gnu ;;
	s390x) echo s390x-linux-gnu ;;
	esac
}
debarch() {
	case $1 in
	aarch64) echo arm64 ;;
	*) echo "$1" ;;
	esac
}
qemu() {
	case $1 in
	aarch64) echo qemu-aarch64-static ;;
	armhf) echo qemu-arm-static ;;
	riscv64) echo qemu-riscv64-static ;;
	ppc64el) echo qemu-ppc64le-static ;;
	s390x) echo qemu-s390x-static ;;
	esac
}

# Unpack Debian's liburcu for architecture $1 into sysroot $2 (once).
urcu_sysroot() {
	local arch=$1 sys=$2 lists=$2.lists
	[ -f "$sys/.done" ] && return 0
	rm -rf "$sys" "$lists"
	mkdir -p "$sys" "$lists/partial" "$sys.debs"
	local o=(-q -oAPT::Architecture="$arch" -oAPT::Architectures="$arch"
		-oDir::State::Lists="$lists" -oDir::State::Status=/dev/null
		-oDir::Cache="$lists/cache" -oDebug::NoLocking=1)
	mkdir -p "$lists/cache/archives/partial"
	# A security-index error can be printed here; the main index is enough.
	apt-get "${o[@]}" update >"$sys.update.log" 2>&1 || true
	(cd "$sys.debs" && apt-get "${o[@]}" download liburcu8 liburcu-dev) >"$sys.download.log" 2>&1 || {
		cat "$sys.update.log" "$sys.download.log" >&2
		echo "ports: cannot download liburcu for $arch" >&2
		return 1
	}
	for d in "$sys.debs"/*.deb; do
		dpkg-deb -x "$d" "$sys"
	done
	touch "$sys/.done"
}

run_ctest() { # build dir
	(cd "$1" && ctest --output-on-failure -j "$jobs" --timeout 300) | tail -n 25
}

for t in "${targets[@]}"; do
	b=$root/ports-$t
	start=$(date +%s)
	echo "==== ports: $t"
	case $t in
	aarch64 | armhf | riscv64 | ppc64el | s390x)
		tr=$(triple "$t")
		q=$(qemu "$t")
		command -v "$q" >/dev/null || { echo "ports: $q missing (qemu-user-static)" >&2; exit 1; }
		[ -d "/usr/$tr/lib" ] || { echo "ports: /usr/$tr missing (libc6-dev-$(debarch "$t")-cross)" >&2; exit 1; }
		rstat=ON
		pcdir=$b/no-pkgconfig
		only=(-DTALLY_BUILD_EXAMPLES=ON)
		[ "$t" = aarch64 ] && only=(-DTALLY_BUILD_EXAMPLES=OFF -DTALLY_FUZZ_TESTS=OFF)
		sys=
		if [ "$t" = riscv64 ]; then
			rstat=OFF # Debian 12 has no liburcu for riscv64
		else
			sys=$root/ports-sysroot-$t
			urcu_sysroot "$(debarch "$t")" "$sys"
			pcdir=$sys/usr/lib/$tr/pkgconfig
		fi
		mkdir -p "$b" "$b/no-pkgconfig"
		cat >"$b/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR $t)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET $tr)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_CXX_COMPILER_TARGET $tr)
set(CMAKE_CROSSCOMPILING_EMULATOR $q -L /usr/$tr)
set(CMAKE_FIND_ROOT_PATH /usr/$tr $sys)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
EOF
		# pkg-config sees only the target's liburcu (and never the
		# host's Criterion or liburcu).
		PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH= PKG_CONFIG_SYSROOT_DIR=$sys \
			cmake -S "$src" -B "$b" -DCMAKE_TOOLCHAIN_FILE="$b/toolchain.cmake" \
			-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTALLY_WERROR=ON -DTALLY_CRITERION=OFF "${t0[@]}" -DTALLY_RSTAT=$rstat \
			"${only[@]}" >/dev/null
		PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_SYSROOT_DIR=$sys cmake --build "$b" -j "$jobs" >/dev/null
		run_ctest "$b"
		;;
	musl)
		command -v musl-gcc >/dev/null || { echo "ports: musl-gcc missing (musl-tools)" >&2; exit 1; }
		mkdir -p "$b/no-pkgconfig"
		PKG_CONFIG_LIBDIR=$b/no-pkgconfig PKG_CONFIG_PATH= CC=musl-gcc \
			cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${g1[@]}" -DTALLY_WERROR=ON -DTALLY_CRITERION=OFF "${t0[@]}" \
			-DTALLY_RSTAT=OFF -DTALLY_BUILD_EXAMPLES=ON >/dev/null
		cmake --build "$b" -j "$jobs" >/dev/null
		run_ctest "$b"
		;;
	x32)
		mkdir -p "$b/no-pkgconfig"
		PKG_CONFIG_LIBDIR=$b/no-pkgconfig PKG_CONFIG_PATH= CC=gcc \
			cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${g1[@]}" -DTALLY_WERROR=ON -DTALLY_CRITERION=OFF "${t0[@]}" \
			-DTALLY_RSTAT=OFF -DTALLY_BUILD_EXAMPLES=ON -DCMAKE_C_FLAGS=-mx32 \
			-DCMAKE_EXE_LINKER_FLAGS=-mx32 >/dev/null
		cmake --build "$b" -j "$jobs" >/dev/null
		n=0
		while IFS= read -r f; do
			h=$(readelf -h "$f" 2>/dev/null) || continue
			grep -q 'Class:.*ELF32' <<<"$h" && grep -q 'Machine:.*X86-64' <<<"$h" &&
				n=$((n + 1))
		done < <(find "$b" -type f -perm -u+x ! -path '*/CMakeFiles/*')
		[ "$n" -gt 0 ] || { echo "ports: x32: no x32 executables built" >&2; exit 1; }
		echo "ports: x32: $n programs compiled and linked (not run: no x32 kernel support here)"
		;;
	*)
		echo "ports: unknown target $t (one of: ${all[*]}, or all)" >&2
		exit 2
		;;
	esac
	echo "ports: $t passed in $(($(date +%s) - start)) s"
done
echo "ports: all passed: ${targets[*]}"
