#!/usr/bin/env bash
# The quantisation library and its tests, cross-built for AArch64 and run
# under qemu user-mode emulation: once for Armv8.2 with the dot-product
# instructions (SDOT) and once for plain Armv8.0 (the widening-multiply path),
# so both NEON code paths are checked against the portable reference on an
# x86-64 machine. Needs g++-aarch64-linux-gnu, qemu-user and googletest's
# sources (libgtest-dev), all Debian packages.
#
#   scripts/test-arm.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-arm}

source scripts/apt-packages.sh
apt_install g++-aarch64-linux-gnu qemu-user libgtest-dev

cxx=${CXX_AARCH64:-aarch64-linux-gnu-g++}
gtest=/usr/src/googletest/googletest
mkdir -p "$out"

flags=(-std=c++20 -O2 -pthread -Isrc -I"$gtest/include" -I"$gtest")
sources=(src/quant/*.cpp src/gguf/*.cpp src/util/mapped_file.cpp src/util/text_file.cpp src/util/thread_pool.cpp)
tests=(tests/quant/*.cpp)

if [[ ! -f "$out/gtest.o" ]]; then
  "$cxx" "${flags[@]}" -march=armv8-a -c "$gtest/src/gtest-all.cc" -o "$out/gtest.o"
  "$cxx" "${flags[@]}" -march=armv8-a -c "$gtest/src/gtest_main.cc" -o "$out/gtest_main.o"
fi

# Both builds at once (each is one long compiler run), then both runs.
archs=(armv8.2-a+dotprod armv8-a)
pids=()
for arch in "${archs[@]}"; do
  "$cxx" "${flags[@]}" -march="$arch" -DEMBER_SOURCE_DIR="\"$PWD\"" -DEMBER_SHARED_DIR="\"$PWD/../shared\"" -static \
    "${sources[@]}" "${tests[@]}" "$out/gtest.o" "$out/gtest_main.o" -o "$out/quant_tests_${arch//[^a-z0-9]/_}" \
    2> >(grep -v -e getaddrinfo -e 'in function' >&2) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for arch in "${archs[@]}"; do
  echo "-- quant tests for $arch"
  qemu-aarch64 -cpu max "$out/quant_tests_${arch//[^a-z0-9]/_}" --gtest_brief=1
done
