#!/usr/bin/env bash
# The main job on a fresh machine: install, build, and let ember's trained model
# (models/ember-doc-base-Q8_0.gguf, 7.6M parameters, see its model card) write.
# It is a base model trained on Linux and Python documentation, not a chat model:
# it continues the prompt as plain text, which is what it was trained to do
# (wrapped in a chat template it would see tokens it never saw in training).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build build --target ember
prompt=${1:-A memory barrier}
printf '%s' "$prompt"
./build/ember run --model models/ember-doc-base-Q8_0.gguf -n 80 --temp 0.7 --top-p 0.9 --seed 1 "$prompt"
echo
