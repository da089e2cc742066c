#!/usr/bin/env python3
"""Predicted outputs (the OpenAI API's `prediction`) against plain decoding, through `ember serve`.

  bench/speculation/prediction.py [--ember build/ember] [--model models/ember-doc-base-Q8_0.gguf]
                                  [--backend cpu] [--rounds 5] [--tokens 250] [--serve-args "..."]

One greedy chat answer of --tokens tokens to a passage, first without a prediction; then, rounds
interleaved, the same request plain and with three predictions: the answer itself (exact), the
answer with a sentence inserted a third of the way in (edited), and the passage (unrelated to the
answer). Every answer must be the plain one's text (the script fails otherwise). Prints, per
setting, the median request time, tokens a second, the ratio to plain, and the server's
accepted / rejected prediction tokens (usage.completion_tokens_details).

On CUDA give EMBER_CUDA_BATCH_INVARIANT=1 EMBER_CUDA_GEMM_MIN_TOKENS=65536 in the environment: otherwise
the first, cold request's prompt and the later ones (from the prefix cache) are computed by products
that sum in other orders, and a random-weight model's greedy answers differ in their tokens.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ap = argparse.ArgumentParser()
ap.add_argument("--ember", default=os.path.join(here, "build", "ember"))
ap.add_argument("--model", default=os.path.join(here, "models", "ember-doc-base-Q8_0.gguf"))
ap.add_argument("--backend", default="cpu")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--tokens", type=int, default=250)
ap.add_argument("--serve-args", default="")
a = ap.parse_args()

log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
server = subprocess.Popen([a.ember, "serve", "--model", a.model, "--backend", a.backend, "--port", "0"] +
                          shlex.split(a.serve_args), stderr=log, stdout=subprocess.DEVNULL)
try:
    url = None
    for _ in range(600):
        text = open(log.name).read()
        m = re.search(r"ready on (http://\S+):", text)
        if m:
            url = m.group(1)
            break
        if server.poll() is not None:
            sys.exit("ember serve exited:\n" + text)
        time.sleep(0.1)
    if not url:
        sys.exit("ember serve did not become ready")

    passage = open(os.path.join(here, "tests", "data", "trained", "val-sample.txt")).read()[:500]

    def chat(prediction=None):
        body = {"messages": [{"role": "user", "content": passage}], "max_tokens": a.tokens, "temperature": 0}
        if prediction is not None:
            body["prediction"] = {"type": "content", "content": prediction}
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        t = time.perf_counter()
        r = json.load(urllib.request.urlopen(req))
        return r, time.perf_counter() - t

    first, _ = chat()
    answer = first["choices"][0]["message"]["content"]
    cut = len(answer) // 3
    settings = {"plain": None, "exact": answer,
                "edited": answer[:cut] + " A sentence the answer does not have. " + answer[cut:], "unrelated": passage}
    times = {k: [] for k in settings}
    counts = {}
    generated = first["usage"]["completion_tokens"]
    for _ in range(a.rounds):
        for name, pred in settings.items():
            r, t = chat(pred)
            if r["choices"][0]["message"]["content"] != answer:
                sys.exit(f"FAIL: the answer with the {name} prediction differs from the plain one")
            times[name].append(t)
            d = r["usage"].get("completion_tokens_details")
            counts[name] = (d["accepted_prediction_tokens"], d["rejected_prediction_tokens"]) if d else None
finally:
    server.terminate()
    server.wait()

plain = statistics.median(times["plain"])
print(f"model {os.path.basename(a.model)}, backend {a.backend}, {a.rounds} rounds, greedy, {generated} new tokens "
      f"(prompt cached after the first request); answers identical in every setting")
print()
print("| prediction | request s (median) | tok/s | vs plain | accepted / rejected prediction tokens |")
print("|---|---|---|---|---|")
for name in settings:
    t = statistics.median(times[name])
    c = counts[name]
    print(f"| {name} | {t:.3f} | {generated / t:.0f} | {plain / t:.2f}x | {f'{c[0]} / {c[1]}' if c else '-'} |")
