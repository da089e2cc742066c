# Sourced by scripts/test-cuda.sh and scripts/bench-cuda.sh: make the prebuilt
# binaries in folder $1 (EMBER_CUDA_BIN) runnable on a bare GPU machine.
# - cuda-bin.tar.xz there is unpacked first;
# - shared libraries the machine lacks (cpp-httplib, libcurl and theirs) are
#   taken from $1/libs, only those, so the system's own copies stay in use;
# - cuBLAS comes from the machine's CUDA toolkit (too large to carry).
# The programs of a CUDA build that scripts/test-cuda.sh runs and scripts/pack-cuda-bin.sh packs.
cuda_programs="ember ember_bench_engine cuda_kernels_test cuda_attention_test cuda_model_test engine_serving_test
  engine_overlap_test engine_speculation_test model_hf_fixtures_test model_peer_gguf_test ember_bench_cuda_kernels ember_bench_q4k_layouts ember_bench_cuda_picks
  ember_bench_cuda_attention"

use_cuda_bin() {
  local bin=$1
  [ -f "$bin/cuda-bin.tar.xz" ] && tar -C "$bin" -xJf "$bin/cuda-bin.tar.xz"
  if [ -d "$bin/libs" ]; then
    for _ in 1 2 3 4; do
      local missing
      missing=$(for f in "$bin"/*; do [ -f "$f" ] && [ -x "$f" ] && ldd "$f" 2>/dev/null; done | awk '/not found/ {print $1}' | sort -u)
      [ -z "$missing" ] && break
      for l in $missing; do [ -f "$bin/libs/$l" ] && cp "$bin/libs/$l" "$bin/"; done
    done
  fi
  export LD_LIBRARY_PATH="$(cd "$bin" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64"
}
