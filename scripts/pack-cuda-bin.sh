#!/usr/bin/env bash
# scripts/pack-cuda-bin.sh BUILD_DIR OUT.tar.xz [EXTRA_BINARY...] — the CUDA
# binaries of a build on this machine, packed for a bare GPU machine
# (EMBER_CUDA_BIN of scripts/test-cuda.sh, bench-cuda.sh and ab-cuda.sh unpack
# it; scripts/use-cuda-bin.sh finds the libraries there).
#
# Build them so that they run on the GPU machine's CPU:
#   cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_CUDA_PTX=OFF \
#         -DEMBER_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3
# Binaries are stripped; EXTRA_BINARY files (other builds of ember_bench_engine
# for an A/B, named ember_bench_engine_NAME) go in as they are. Shared libraries
# that a bare machine may lack (everything but the C/C++ runtime and the CUDA
# toolkit's cuBLAS and runtime) go in libs/, and CUPTI for the kernel timeline.
set -euo pipefail
build=${1:?usage: scripts/pack-cuda-bin.sh BUILD_DIR OUT.tar.xz [EXTRA_BINARY...]}
out=${2:?usage: scripts/pack-cuda-bin.sh BUILD_DIR OUT.tar.xz [EXTRA_BINARY...]}
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/libs"
. "$(dirname "$0")/use-cuda-bin.sh"
for f in $cuda_programs; do
  p=$(find "$build" -name "$f" -type f -executable | head -n1)
  [ -n "$p" ] || { echo "pack-cuda-bin: $f is not built in $build" >&2; exit 1; }
  strip -o "$stage/$f" "$p"
done
trace_lib=$(find "$build" -name libember_kernel_trace.so | head -n1)
[ -n "$trace_lib" ] && strip -o "$stage/libember_kernel_trace.so" "$trace_lib"
for f in "$@"; do cp "$f" "$stage/"; done
for f in "$stage"/*; do [ -f "$f" ] && ldd "$f" 2>/dev/null; done | awk '/=> \// {print $3}' | sort -u |
  grep -v -E "libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt|libcublas|libcudart" |
  while read -r l; do cp -L "$l" "$stage/libs/"; done
XZ_OPT=${XZ_OPT:--9e -T2} tar -C "$stage" -cJf "$out" .
ls -la "$out"
