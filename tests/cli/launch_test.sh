#!/usr/bin/env bash
# `ember launch` with stand-ins for claude, codex and opencode on PATH: each
# reads the endpoint, key and model the way the real tool does and makes one
# request to the server ember started. Checks the tool's arguments pass
# through, its exit status comes back, and the server is gone afterwards.
set -euo pipefail
ember=${1:?usage: launch_test.sh path/to/ember}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$ember" gen-model --preset tiny -o "$work/tiny.gguf" >/dev/null
mkdir "$work/bin"

# Each stand-in: node, a request in its tool's API, the URL it used written down, exit 7.
cat > "$work/bin/claude" <<'JS'
#!/usr/bin/env node
const e = process.env;
if (process.argv[2] !== '-p' || process.argv[3] !== 'hello') process.exit(2);
const r = await fetch(`${e.ANTHROPIC_BASE_URL}/v1/messages`, { method: 'POST',
  headers: { authorization: `Bearer ${e.ANTHROPIC_AUTH_TOKEN}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: e.ANTHROPIC_DEFAULT_HAIKU_MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }) });
if (r.status !== 200 || e.ANTHROPIC_MODEL !== 'tiny') process.exit(3);
(await import('node:fs')).writeFileSync(process.env.URL_FILE, e.ANTHROPIC_BASE_URL);
process.exit(7);
JS
cat > "$work/bin/codex" <<'JS'
#!/usr/bin/env node
const args = process.argv.slice(2);
const base = args.find(a => a.startsWith('model_providers.ember.base_url=')).split('=')[1].replaceAll('"', '');
const model = args[args.indexOf('-m') + 1];
if (!args.includes('model_provider="ember"') || !args.includes('model_providers.ember.env_key="EMBER_API_KEY"')) process.exit(2);
const r = await fetch(`${base}/chat/completions`, { method: 'POST',
  headers: { authorization: `Bearer ${process.env.EMBER_API_KEY}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }) });
if (r.status !== 200) process.exit(3);
(await import('node:fs')).writeFileSync(process.env.URL_FILE, base);
process.exit(7);
JS
cat > "$work/bin/opencode" <<'JS'
#!/usr/bin/env node
const config = JSON.parse(process.env.OPENCODE_CONFIG_CONTENT);
const provider = config.provider.ember.options;
const model = config.model.replace(/^ember\//, '');
if (!(model in config.provider.ember.models)) process.exit(2);
const r = await fetch(`${provider.baseURL}/chat/completions`, { method: 'POST',
  headers: { authorization: `Bearer ${provider.apiKey}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }) });
if (r.status !== 200) process.exit(3);
(await import('node:fs')).writeFileSync(process.env.URL_FILE, provider.baseURL);
process.exit(7);
JS
chmod +x "$work/bin/"*
# The stand-ins use top-level await: a package.json makes them ES modules.
printf '{"type": "module"}\n' > "$work/bin/package.json"

for tool in claude codex opencode; do
  export URL_FILE="$work/$tool.url"
  status=0
  PATH="$work/bin:$PATH" "$ember" launch "$tool" --model "$work/tiny.gguf" --ctx 256 --parallel 2 -- -p hello \
    2>"$work/$tool.log" || status=$?
  if [ $status -ne 7 ]; then
    echo "FAIL: ember launch $tool exited $status, expected the tool's 7"; cat "$work/$tool.log"; exit 1
  fi
  url=$(cat "$URL_FILE")
  if node -e 'fetch(process.argv[1] + "/health").then(() => process.exit(0), () => process.exit(1))' "${url%/v1}"; then
    echo "FAIL: the server at $url still answers after $tool exited"; exit 1
  fi
  echo "launch $tool: request served, status passed through, server stopped"
done

status=0
"$ember" launch vim --model "$work/tiny.gguf" 2>"$work/bad.log" || status=$?
[ $status -eq 1 ] && grep -q "unknown tool" "$work/bad.log" || { echo "FAIL: an unknown tool"; cat "$work/bad.log"; exit 1; }
PATH="$work/empty" "$ember" launch claude --model "$work/tiny.gguf" 2>"$work/missing.log" && { echo "FAIL: a missing tool succeeded"; exit 1; }
grep -q "not found on PATH" "$work/missing.log" || { echo "FAIL: a missing tool's message"; cat "$work/missing.log"; exit 1; }
echo "launch: all passed"
