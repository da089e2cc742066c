#!/usr/bin/env bash
# scripts/test-cuda.sh OUTDIR — the CUDA backend on a machine with an NVIDIA
# Hopper GPU, in one call: build (or take prebuilt binaries), the GPU tests,
# compute-sanitizer over the kernel tests, then the decode benchmarks. Logs,
# a summary and the benchmark output land in OUTDIR.
#
#   EMBER_CUDA_BIN=DIR   take the binaries from DIR (a tarball cuda-bin.tar.xz
#                        there is unpacked first) instead of building: for GPU
#                        machines without utf8proc or GoogleTest
#   EMBER_CUDA_BENCH="dense-1b:Q4_K dense-1b:Q8_0"   presets to benchmark (generated, run, deleted)
#   EMBER_CUDA_SKIP="tests sanitizer bench"          stages to leave out
#   EMBER_CUDA_AB=1                                  also benchmark each preset with float products only
#   EMBER_PEER_GGUF_DIR=DIR, EMBER_PEER_GGUF_FILTER=F  where another engine's files are (../shared/testdata/
#                                                    peer-gguf-qwen3 by default), and which of their tests run
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/test-cuda.sh OUTDIR}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
skip=" ${EMBER_CUDA_SKIP:-} "

. scripts/use-cuda-bin.sh
bin=${EMBER_CUDA_BIN:-}
if [ -n "$bin" ]; then
  use_cuda_bin "$bin"
  # Binaries built elsewhere read test data from their build's source folder.
  for d in /work/main; do [ -e "$d" ] || { mkdir -p "$(dirname "$d")"; ln -s "$PWD" "$d"; }; done
  bin="$PWD/$bin"
else
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON >"$out/configure.log" 2>&1 &&
    cmake --build build-cuda -j "$(nproc)" >"$out/build.log" 2>&1 || { echo "build failed" | tee -a "$summary"; tail -30 "$out/build.log"; exit 1; }
  bin=$PWD/build-cuda/stage
  mkdir -p "$bin"
  for f in $cuda_programs; do
    cp "$(find build-cuda -name "$f" -type f -executable | head -n1)" "$bin/"
  done
  # The kernel timeline library, where the toolkit has CUPTI (bench/cuda/kernel_trace.cpp).
  trace_lib=$(find build-cuda -name libember_kernel_trace.so | head -n1)
  [ -n "$trace_lib" ] && cp "$trace_lib" "$bin/"
fi
nvidia-smi >"$out/gpu.txt" 2>&1

step() {  # step NAME COMMAND...: runs it, logs it, records pass/fail
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-28s %s (%ds)\n' "$name" "$([ $rc = 0 ] && echo pass || echo "FAIL rc=$rc")" $((SECONDS - t0)) | tee -a "$summary"
  return 0
}

if [[ $skip != *" tests "* ]]; then
  echo "== GPU tests"
  step kernels "$bin/cuda_kernels_test"
  step attention "$bin/cuda_attention_test"
  step models "$bin/cuda_model_test"
  step serving_on_cuda env EMBER_TEST_BACKEND=cuda "$bin/engine_serving_test"
  step overlap_on_cuda env EMBER_TEST_BACKEND=cuda "$bin/engine_overlap_test"
  # Drafted answers equal plain ones bit for bit only where steps of every size sum alike.
  step speculation_on_cuda env EMBER_TEST_BACKEND=cuda EMBER_CUDA_BATCH_INVARIANT=1 "$bin/engine_speculation_test"
  step hf_fixtures_on_cuda env EMBER_TEST_BACKEND=cuda "$bin/model_hf_fixtures_test"
  # Another engine's files and logits (../shared/testdata/peer-gguf-qwen3, or EMBER_PEER_GGUF_DIR).
  peer=${EMBER_PEER_GGUF_DIR:-$PWD/../shared/testdata/peer-gguf-qwen3}
  if [ -f "$peer/meta.json" ]; then
    step peer_gguf_on_cuda env EMBER_TEST_BACKEND=cuda EMBER_PEER_GGUF_DIR="$peer" "$bin/model_peer_gguf_test" ${EMBER_PEER_GGUF_FILTER:+--gtest_filter=$EMBER_PEER_GGUF_FILTER}
  else
    echo "peer_gguf_on_cuda            skipped: no $peer" | tee -a "$summary"
  fi
  grep -h "max relative\|greedy tokens" "$out/models.log" >"$out/models-errors.txt" || true
fi

if [[ $skip != *" sanitizer "* ]]; then
  echo "== compute-sanitizer"
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$bin/cuda_kernels_test"
  step racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$bin/cuda_kernels_test" --gtest_filter='*Gemv*:*Int8Products*:*Grouped*'
  step racecheck_sampling compute-sanitizer --tool racecheck --error-exitcode 1 "$bin/cuda_kernels_test" --gtest_filter='*SamplingUnderRacecheck*'
  step memcheck_attention compute-sanitizer --tool memcheck --error-exitcode 1 "$bin/cuda_attention_test"
  step racecheck_attention compute-sanitizer --tool racecheck --error-exitcode 1 "$bin/cuda_attention_test" --gtest_filter='*Flash*:*ResultOfATokenDoesNotDependOnTheBatch*'
  step memcheck_model compute-sanitizer --tool memcheck --error-exitcode 1 "$bin/cuda_model_test" --gtest_filter='*Tiny*'
fi

if [[ $skip != *" bench "* ]]; then
  echo "== roofline: device copy bandwidth"
  step roofline python3 - <<'PY'
import torch
n = 1 << 30  # 1 GiB each way
a = torch.empty(n, dtype=torch.uint8, device="cuda"); a.random_(0, 255)
b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
times = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); b.copy_(a); e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) / 1e3)
times.sort()
print(f"copy bandwidth (read + write, median of 20): {2 * n / times[10] / 1e9:.0f} GB/s")
# The tensor cores' bfloat16 rate: the prefill roofline.
m = 8192
x = torch.randn(m, m, dtype=torch.bfloat16, device="cuda"); y = torch.randn_like(x)
for _ in range(3): x @ y
times = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); x @ y; e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) / 1e3)
times.sort()
print(f"bf16 matrix rate ({m}^3, median of 20): {2 * m**3 / times[10] / 1e12:.0f} TFLOP/s")
PY
  cat "$out/roofline.log" | tee -a "$summary"
  # Each format's product alone, float and integer paths, against the copy bandwidth.
  step kernel-bench "$bin/ember_bench_cuda_kernels" --tokens 1,2,4,8,16,32,64
  # The one-token Q4_K product over the file layout and the device's (device_layout.h).
  [ -x "$bin/ember_bench_q4k_layouts" ] && step q4k-layouts "$bin/ember_bench_q4k_layouts"
  # The greedy and sampled picks of logit rows alone (what a sampled step pays over a greedy one).
  [ -x "$bin/ember_bench_cuda_picks" ] && step picks "$bin/ember_bench_cuda_picks" --rows 1,16
  # Decode attention alone over long contexts (dense-8b's heads, then moe-30b-a3b's), against the copy bandwidth.
  [ -x "$bin/ember_bench_cuda_attention" ] && step attention-bench "$bin/ember_bench_cuda_attention" --heads 32 --kv-heads 8
  [ -x "$bin/ember_bench_cuda_attention" ] && step attention-bench-gqa8 "$bin/ember_bench_cuda_attention" --heads 32 --kv-heads 4
  tokdir=$(mktemp -d)
  for t in "$bin"/*-tok.tar.xz; do [ -f "$t" ] && tar -C "$tokdir" -xJf "$t"; done
  for spec in ${EMBER_CUDA_BENCH:-dense-1b:Q4_K dense-1b:Q8_0}; do
    preset=${spec%%:*}; quant=${spec##*:}
    model=/tmp/$preset-$quant.gguf
    tok=$tokdir/$( [ "${preset#dense}" != "$preset" ] && echo llama3 || echo qwen3 )
    step "gen-$preset-$quant" "$bin/ember" gen-model --preset "$preset" --quant "$quant" -o "$model" --tokenizer "$tok"
    "$bin/ember" inspect "$model" 2>&1 | grep -i "bytes" | head -3 >"$out/inspect-$preset-$quant.txt"
    # Decode at each batch size after a 512-token prompt, prefill at 512/2,048/8,192, all as ratios
    # to the roofline measured in the same run; the figures also in JSON.
    step "bench-$preset-$quant" "$bin/ember_bench_engine" --model "$model" --backend cuda --batch "${EMBER_CUDA_BATCH:-1,2,4,8,16,32,64}" \
      --prompt "${EMBER_CUDA_PROMPTS:-512,2048,8192}" --decode 128 --rounds 2 --step 2048 --json "$out/bench-$preset-$quant.json"
    # The same decode with the float products only: what the integer products gain, in one run.
    [ -n "${EMBER_CUDA_AB:-}" ] && step "bench-$preset-$quant-float" env EMBER_CUDA_FLOAT_PRODUCTS=1 "$bin/ember_bench_engine" --model "$model" --backend cuda --batch 1,16 --prompt 128 --decode 64 --rounds 2
    # Prefill: one cold document in steps of 2,048 tokens (dense matrices on the tensor cores).
    step "prefill-$preset-$quant" "$bin/ember_bench_engine" --model "$model" --backend cuda --batch 1 --prompt 16 --decode 8 --rounds 1 --doc "${EMBER_CUDA_DOC:-8192}" --step 2048
    # The same prefill with the split attention kernel instead of flash attention.
    [ -n "${EMBER_CUDA_AB:-}" ] && step "prefill-$preset-$quant-split" env EMBER_CUDA_FLASH=0 "$bin/ember_bench_engine" --model "$model" --backend cuda --batch 1 --prompt 16 --decode 8 --rounds 1 --doc "${EMBER_CUDA_DOC:-8192}" --step 2048
    # Decode at a long context: attention over 8,192 cached positions per token.
    step "decode-8k-$preset-$quant" "$bin/ember_bench_engine" --model "$model" --backend cuda --batch 1 --prompt 8192 --decode 64 --rounds 1 --step 2048
    # Where one step's time goes, operation by operation (no graphs in this mode).
    step "profile-$preset-$quant" env EMBER_CUDA_PROFILE=1 "$bin/ember_bench_engine" --model "$model" --backend cuda --batch 1 --prompt 128 --decode 32 --rounds 1
    # One captured decode step kernel by kernel, each timed alone by Nsight Compute (where it is installed).
    if command -v ncu >/dev/null; then
      step "kernels-$preset-$quant" bash -c 'ncu --graph-profiling node --clock-control none --cache-control none \
          --metrics gpu__time_duration.sum --csv --launch-count 4000 "$1" --model "$2" --backend cuda --batch 1 --prompt 16 \
          --decode 16 --rounds 1 >"$3" && python3 bench/cuda/step_kernels.py "$3"' _ "$bin/ember_bench_engine" "$model" \
        "$out/ncu-$preset-$quant.csv"
    fi
    # The same decode as a timeline of the real run (CUPTI): what each kernel costs in place.
    if [ -f "$bin/libember_kernel_trace.so" ]; then
      step "timeline-$preset-$quant" bash -c 'EMBER_KERNEL_TRACE="$3" LD_PRELOAD="$1/libember_kernel_trace.so" "$1/ember_bench_engine" \
          --model "$2" --backend cuda --batch 1 --prompt 128 --decode 64 --rounds 1 && python3 bench/cuda/step_timeline.py "$3" 1' \
        _ "$bin" "$model" "$out/trace-$preset-$quant.csv"
    fi
    rm -f "$model"
  done
fi
echo "== summary"
cat "$summary"
# Everything in one archive beside the summary (the device tool brings back few files).
tar -C "$out" -czf "$out/../$(basename "$out")-logs.tar.gz" . 2>/dev/null
! grep -q FAIL "$summary"
