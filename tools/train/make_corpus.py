#!/usr/bin/env python3
"""Builds the training corpus of ember's small models from Debian documentation packages.

English prose, plain Python (no third-party modules), deterministic:
  * linux-doc-6.1     the kernel's reStructuredText sources (translations left out)   GPL-2
  * python3.11-doc    the reStructuredText sources of Python's documentation          PSF-2.0
  * debian-reference-en  the Debian Reference, plain-text edition                     GPL-2+

Each source file is one document. The reST markup that carries no prose (labels, index
directives, SPDX lines) goes; inline roles keep their text (:ref:`x <y>` -> x,
:keyword:`!if` -> if). Documents that are mostly non-ASCII or near-empty are dropped,
documents with equal text are kept once, and long paragraphs seen before are dropped
(boilerplate repeated across files). A hash of each document's source path puts about 2%
of the documents in the validation split.

Output (in --out): train.txt and val.txt, documents separated by the line DOC_SEP;
val-sample.txt, the first validation documents (about 40 KB, joined by blank lines: the
text the tests and `ember perplexity` read); MANIFEST.txt (package versions, counts,
SHA-256 of the outputs); corpus.tar.xz packing the text files for the GPU machine.

  apt-get install linux-doc-6.1 python3.11-doc debian-reference-en
  python3 tools/train/make_corpus.py --out .train/corpus
"""
import argparse
import gzip
import hashlib
import io
import os
import re
import subprocess
import tarfile

DOC_SEP = "\n<|endoftext|>\n"
VAL_PERCENT = 2
SAMPLE_CHARS = 40_000

PACKAGES = {
    "linux-doc-6.1": "/usr/share/doc/linux-doc-6.1/Documentation",
    "python3.11-doc": "/usr/share/doc/python3.11/html/_sources",
    "debian-reference-en": "/usr/share/debian-reference/debian-reference.en.txt.gz",
}


def read_text(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


ROLE = re.compile(r":[a-zA-Z:_-]+:`!?~?([^`<]*?)\s*(?:<[^`>]*>)?`")
LABEL = re.compile(r"^\.\. _[^:]*:\s*$")
SKIP_DIRECTIVE = re.compile(r"^\.\. (index|SPDX-License-Identifier|highlight|sectionauthor|moduleauthor|toctree|kernel-doc|only|raw|include|literalinclude)::?")


def clean_rst(text):
    out, skipping = [], False
    for line in text.splitlines():
        line = line.rstrip()
        if skipping:
            if line == "" or line[0] in " \t":
                continue
            skipping = False
        if SKIP_DIRECTIVE.match(line):
            skipping = True
            continue
        if LABEL.match(line) or line.startswith(".. SPDX"):
            continue
        out.append(ROLE.sub(lambda m: m.group(1), line))
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    return text


def documents():
    """(package, source path, text) for every document, in a fixed order."""
    root = PACKAGES["linux-doc-6.1"]
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "translations")
        for name in sorted(filenames):
            if not re.search(r"\.(rst|txt)(\.gz)?$", name):
                continue
            p = os.path.join(dirpath, name)
            t = read_text(p)
            if t is not None:
                yield "linux-doc-6.1", os.path.relpath(p, root), clean_rst(t)
    root = PACKAGES["python3.11-doc"]
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".txt"):
                continue
            p = os.path.join(dirpath, name)
            t = read_text(p)
            if t is not None:
                yield "python3.11-doc", os.path.relpath(p, root), clean_rst(t)
    # The Debian Reference is one file: its chapters become documents.
    t = read_text(PACKAGES["debian-reference-en"])
    parts = re.split(r"\n(?=Chapter \d+\. )", t)
    for i, part in enumerate(parts):
        part = re.sub(r"\n{3,}", "\n\n", "\n".join(l.rstrip() for l in part.splitlines())).strip("\n")
        yield "debian-reference-en", f"chapter-{i:02d}", part


def package_version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    seen_docs, seen_paras = set(), set()
    train, val = [], []
    stats = {p: [0, 0] for p in PACKAGES}  # documents, characters kept
    dropped = {"non-ascii/short": 0, "duplicate": 0, "paragraphs": 0}
    for pkg, path, text in documents():
        if len(text) < 200 or sum(c < "\x80" for c in text) < 0.97 * len(text):
            dropped["non-ascii/short"] += 1
            continue
        h = hashlib.sha256(text.encode()).digest()
        if h in seen_docs:
            dropped["duplicate"] += 1
            continue
        seen_docs.add(h)
        paras = []
        for para in text.split("\n\n"):
            if len(para) >= 200:
                ph = hashlib.sha256(" ".join(para.split()).encode()).digest()
                if ph in seen_paras:
                    dropped["paragraphs"] += 1
                    continue
                seen_paras.add(ph)
            paras.append(para)
        text = "\n\n".join(paras)
        split_hash = int.from_bytes(hashlib.sha256(f"{pkg}/{path}".encode()).digest()[:4], "little")
        (val if split_hash % 100 < VAL_PERCENT else train).append(text)
        stats[pkg][0] += 1
        stats[pkg][1] += len(text)

    files = {"train.txt": DOC_SEP.join(train) + "\n", "val.txt": DOC_SEP.join(val) + "\n"}
    sample = []
    for doc in val:  # whole documents of at most a quarter of the sample each
        if sum(len(d) for d in sample) >= SAMPLE_CHARS:
            break
        if len(doc) <= SAMPLE_CHARS // 4:
            sample.append(doc)
    files["val-sample.txt"] = "\n\n".join(sample) + "\n"
    for name, content in files.items():
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(content)

    lines = ["ember training corpus (tools/train/make_corpus.py)", ""]
    for pkg in PACKAGES:
        lines.append(f"{pkg} {package_version(pkg)}: {stats[pkg][0]} documents, {stats[pkg][1]} characters")
    lines.append(f"dropped: {dropped}")
    lines.append(f"train: {len(train)} documents, {len(files['train.txt'])} characters")
    lines.append(f"val: {len(val)} documents, {len(files['val.txt'])} characters")
    lines.append(f"val-sample: {len(sample)} documents, {len(files['val-sample.txt'])} characters")
    for name, content in files.items():
        lines.append(f"sha256 {name} {hashlib.sha256(content.encode()).hexdigest()}")
    manifest = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "MANIFEST.txt"), "w") as f:
        f.write(manifest)

    with tarfile.open(os.path.join(args.out, "corpus.tar.xz"), "w:xz", preset=6) as tar:
        for name in ["MANIFEST.txt", *files]:
            data = (manifest if name == "MANIFEST.txt" else files[name]).encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    print(manifest, end="")


if __name__ == "__main__":
    main()
