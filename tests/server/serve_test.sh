#!/usr/bin/env bash
# `ember serve` end to end: a real server on a free loopback port with the
# `tiny` preset, driven by the official OpenAI and Anthropic SDKs
# (sdk/api_test.mjs; structured output and tool calls: sdk/structured_test.mjs), then a bounded load test (sdk/load_test.mjs), then
# SIGTERM: the server must exit 0 after finding every KV block free or cached.
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
"$ember" gen-model --preset tiny -o "$work/tiny.gguf" >/dev/null

key=test-key-$RANDOM
"$ember" serve --model "$work/tiny.gguf" --port 0 --parallel 4 --threads 2 --ctx 512 --api-key "$key" \
  2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/server.log" | head -n1)
  [ -n "$port" ] && node -e 'fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
    "http://127.0.0.1:$port/health" && break
  kill -0 "$server_pid" || { cat "$work/server.log"; exit 1; }
  sleep 0.1
done
url="http://127.0.0.1:$port"
echo "server at $url"

status=0
node "$here/sdk/api_test.mjs" "$url" "$key" || status=$?
[ $status -eq 0 ] && { node "$here/sdk/structured_test.mjs" "$url" "$key" || status=$?; }
[ $status -eq 0 ] && { node "$here/sdk/load_test.mjs" "$url" "$key" || status=$?; }

kill -TERM "$server_pid"
server_exit=0
wait "$server_pid" || server_exit=$?
server_pid=
if [ $status -ne 0 ] || [ $server_exit -ne 0 ] || ! grep -q "KV blocks all free or cached" "$work/server.log"; then
  echo "FAIL: tests $status, server exit $server_exit; the server's log ends:"
  tail -n 30 "$work/server.log"
  exit 1
fi
grep -c '"path":' "$work/server.log" | sed 's/^/request log lines: /'
echo "serve: SDK tests, load test and clean shutdown passed"
