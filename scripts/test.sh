#!/usr/bin/env bash
# The whole test suite on a fresh machine: unit, fixture and oracle tests (CTest +
# GoogleTest), the bad-input and engine tests again under AddressSanitizer, the
# serving engine under ThreadSanitizer, the quantised
# matmuls cross-built for AArch64 and run under qemu, then each fuzzer for a
# bounded time on its seed corpus (one per core, side by side).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
fuzz_seconds=${EMBER_FUZZ_SECONDS:-30}

echo "== build and run the tests (at ${SECONDS}s)"
# Where nvcc is found the build includes the CUDA backend, so CI compiles it;
# its GPU tests skip without a device (scripts/test-cuda.sh runs them on one).
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA_PTX=OFF >/dev/null
grep -q '^EMBER_CUDA:BOOL=ON' build/CMakeCache.txt && echo "(with the CUDA backend)" || echo "(no nvcc: CPU only)"
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== parsers, tokenizer, templates, grammars, engine, serving engine, thread pool, vector math, peer-file, hostile-input, CLI bad-input, engine-bench and C API tests under AddressSanitizer + UBSan (at ${SECONDS}s)"
# -O1 without debug information: a third of the compile time of -O2 -g. Reports
# name the functions of each frame (frame pointers are kept); for file and line,
# rebuild with EMBER_ASAN_FLAGS="-O1 -g".
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${EMBER_ASAN_FLAGS:--O1 -DNDEBUG}" -DEMBER_CUDA=OFF -DEMBER_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs" --target ember gguf_test safetensors_test tokenizer_tests chat_tests engine_test engine_serving_test decode_alloc_test model_peer_gguf_test thread_pool_test cpu_math_test hostile_test server_tests grammar_tests grammar_engine_test hub_tests ember_bench_engine bench_step_costs_test capi_test
# Tests of targets not built here (the slow fixture suites) show up as *_NOT_BUILT: skip those.
ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '_NOT_BUILT'

echo "== the serving engine and the thread pool under ThreadSanitizer (at ${SECONDS}s)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=OFF -DEMBER_TSAN=ON >/dev/null
cmake --build build-tsan -j "$jobs" --target engine_test engine_serving_test thread_pool_test
ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R 'Serving|PrefixCache|BlockAllocator|ThreadPool'

echo "== quantised matmuls for AArch64 (NEON, with and without SDOT) under qemu (at ${SECONDS}s)"
scripts/test-arm.sh build-arm

echo "== fuzzers (${fuzz_seconds}s each, ${jobs} at a time) (at ${SECONDS}s)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_CUDA=OFF -DEMBER_FUZZ=ON -DEMBER_NATIVE=OFF >/dev/null
fuzzers=$(ninja -C build-fuzz -t targets all | sed -n 's/^\(fuzz_[a-z_]*\): phony$/\1/p' | sort -u)
cmake --build build-fuzz -j "$jobs" --target $fuzzers
# One fuzzer on a copy of its seed corpus; its output is printed when it ends
# (the last lines, or the last 60 on a failure), so that fuzzers can run side
# by side, one per core, each for its whole time.
run_fuzzer() {
  local f=$1 secs=$2 rss=$3 status=0
  local corpus=tests/fuzz/corpus/${f#fuzz_} work
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  # -timeout makes a hang a failure, as -rss_limit_mb does a memory blow-up.
  "$(find build-fuzz -name "$f" -type f -executable | head -n1)" -max_total_time="$secs" -timeout=10 -rss_limit_mb="$rss" \
    -print_final_stats=1 "$work" >"$work.log" 2>&1 || status=$?
  echo "-- $f"
  tail -n "$([ "$status" = 0 ] && echo 3 || echo 60)" "$work.log"
  rm -rf "$work" "$work.log"
  return "$status"
}
export -f run_fuzzer
for f in $fuzzers; do
  # The targets after the file readers (hostile-input suite) run shorter, within 1 GB.
  case $f in
    fuzz_gguf_desc|fuzz_hf_config|fuzz_tokenizer_json|fuzz_sampling|fuzz_server_requests|fuzz_json_schema) echo "$f ${EMBER_FUZZ_SECONDS_NEW:-15} 1024" ;;
    *) echo "$f $fuzz_seconds 2048" ;;
  esac
done | xargs -P "$jobs" -L 1 bash -c 'run_fuzzer "$@"' _
echo "all tests passed in ${SECONDS}s"
