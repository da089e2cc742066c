#!/usr/bin/env bash
# The main job on a fresh machine: install, build, make a small model, and let it answer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build build --target ember
mkdir -p models
[ -f models/tiny-Q8_0.gguf ] || ./build/ember gen-model --preset tiny --quant Q8_0 -o models/tiny-Q8_0.gguf
./build/ember run --model models/tiny-Q8_0.gguf --chat --no-think -n 32 --temp 0.8 --seed 1 "${1:-Write a haiku about embers.}"
