#!/usr/bin/env python3
"""Trains ember's small models: a byte-level BPE tokenizer, a Llama base model and a draft model.

Runs where PyTorch, tokenizers, safetensors and transformers are (the GPU machine):

  python3 tools/train/train.py --corpus corpus.tar.xz --out OUT [--smoke]

1. Tokenizer: byte-level BPE of VOCAB tokens trained with Hugging Face `tokenizers` on the
   training split, in the form ember writes to GGUF as pre-tokenizer "qwen2" (NFC, the
   Qwen2 split regex, byte-level, no prefix space). Special tokens: <|endoftext|> (between
   documents, and the end-of-sequence token), <|im_start|> and <|im_end|> (for the chat
   template; the base model never saw them).
2. Models (CONFIGS below): Llama layout (RMSNorm, RoPE split halves, SwiGLU, grouped KV
   heads, tied embeddings, no biases), trained on random 512-token windows of the token
   stream with AdamW, bf16 autocast, linear warm-up then cosine decay, a fixed seed. The
   validation loss (the whole validation split in 512-token windows) is measured every
   EVAL_EVERY steps and the weights of the best one are kept: training past it overfits.
3. The kept weights are rounded to float16 (the shipped full-precision files are F16, so
   the reference model is exactly the one in those files) and written as a Hugging Face
   folder: config.json, model.safetensors (F16), tokenizer.json, tokenizer_config.json.
4. Reference numbers, computed in float32 on the CPU by transformers' LlamaForCausalLM
   loaded from that folder (and checked against this script's own model):
   the perplexity of val-sample.txt as `ember perplexity --ctx 512` computes it
   (non-overlapping 512-token windows, every token after a window's first scored), the
   perplexity of the whole validation split, and for the base model a fixture: the logits
   of the first FIXTURE_TOKENS tokens of val-sample.txt and a greedy continuation.

Output: OUT/<name>/ (the Hugging Face folders), OUT/fixture/, OUT/results.json,
OUT/<name>-loss.csv. GPU kernels are not bit-reproducible, so a rerun gives a model of the
same quality, not the same bits.
"""
import argparse
import copy
import csv
import json
import math
import os
import tarfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
VOCAB = 8192
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
DOC_SEP = "\n<|endoftext|>\n"
CTX = 512
EVAL_EVERY = 200
FIXTURE_TOKENS = 128
GREEDY_TOKENS = 32
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                 "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

CONFIGS = {
    # ~7.6M parameters: its F16 and Q8_0 files and the draft's Q8_0 fit in 28 MB together.
    "ember-doc-base": dict(hidden=256, layers=7, heads=8, kv_heads=4, ffn=768,
                           batch=48, steps=4000, lr=2e-3, warmup=200, max_seconds=300),
    # ~2.8M parameters, same tokenizer: the draft model for speculative decoding.
    "ember-doc-draft": dict(hidden=192, layers=3, heads=6, kv_heads=3, ffn=512,
                            batch=48, steps=2500, lr=3e-3, warmup=200, max_seconds=110),
}
WEIGHT_DECAY, BETAS, GRAD_CLIP, MIN_LR_FRACTION = 0.1, (0.9, 0.95), 1.0, 0.1
ROPE_THETA, NORM_EPS = 10000.0, 1e-5


# ---- the model: the same math as transformers' LlamaForCausalLM -------------------------

class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)).to(x.dtype) * self.weight.to(x.dtype)


def rope_tables(head_dim, n, device):
    inv = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    ang = torch.outer(torch.arange(n, device=device, dtype=torch.float32), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):  # x [B, H, T, D]; split halves, as Hugging Face's rotate_half
    d = x.shape[-1] // 2
    rot = torch.cat([-x[..., d:], x[..., :d]], dim=-1)
    return (x.float() * cos + rot.float() * sin).to(x.dtype)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.nh, self.nkv = c["hidden"], c["heads"], c["kv_heads"]
        self.hd = h // self.nh
        self.input_layernorm = RMSNorm(h)
        self.q_proj = nn.Linear(h, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, h, bias=False)
        self.post_attention_layernorm = RMSNorm(h)
        self.gate_proj = nn.Linear(h, c["ffn"], bias=False)
        self.up_proj = nn.Linear(h, c["ffn"], bias=False)
        self.down_proj = nn.Linear(c["ffn"], h, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        a = self.input_layernorm(x)
        q = self.q_proj(a).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(a).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(a).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(o.transpose(1, 2).reshape(B, T, -1))
        m = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(VOCAB, c["hidden"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * c["layers"]) if name.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = rope_tables(self.c["hidden"] // self.c["heads"], ids.shape[1], ids.device)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return F.linear(self.norm(x), self.embed_tokens.weight)  # tied output head

    def hf_state_dict(self):
        sd = {"model.embed_tokens.weight": self.embed_tokens.weight, "model.norm.weight": self.norm.weight}
        for i, l in enumerate(self.layers):
            p = f"model.layers.{i}."
            sd[p + "input_layernorm.weight"] = l.input_layernorm.weight
            sd[p + "post_attention_layernorm.weight"] = l.post_attention_layernorm.weight
            for n in ["q_proj", "k_proj", "v_proj", "o_proj"]:
                sd[p + f"self_attn.{n}.weight"] = getattr(l, n).weight
            for n in ["gate_proj", "up_proj", "down_proj"]:
                sd[p + f"mlp.{n}.weight"] = getattr(l, n).weight
        return {k: v.detach() for k, v in sd.items()}


def hf_config(c):
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": c["hidden"], "intermediate_size": c["ffn"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"],
        "head_dim": c["hidden"] // c["heads"], "vocab_size": VOCAB, "max_position_embeddings": CTX,
        "rms_norm_eps": NORM_EPS, "rope_theta": ROPE_THETA,
        "rope_parameters": {"rope_type": "default", "rope_theta": ROPE_THETA},
        "hidden_act": "silu", "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
        "bos_token_id": 0, "eos_token_id": 0, "dtype": "float16", "use_cache": True,
    }


# ---- tokenizer ---------------------------------------------------------------------------

def train_tokenizer(docs):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(docs, trainer)
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    return tok


def encode_stream(tok, docs):
    eot = tok.token_to_id("<|endoftext|>")
    out = []
    for enc in tok.encode_batch(docs, add_special_tokens=False):
        out.extend(enc.ids)
        out.append(eot)
    return torch.tensor(out, dtype=torch.int64)


# ---- training ----------------------------------------------------------------------------

@torch.no_grad()
def val_loss(model, windows, batch=64):
    model.eval()
    total, n = 0.0, 0
    for i in range(0, windows.shape[0], batch):
        w = windows[i:i + batch]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(w[:, :-1])
        total += F.cross_entropy(logits.float().reshape(-1, VOCAB), w[:, 1:].reshape(-1), reduction="sum").item()
        n += w[:, 1:].numel()
    model.train()
    return total / n


def train_model(name, c, train_ids, val_ids, out, smoke):
    torch.manual_seed(SEED)
    dev = "cuda"
    model = Llama(c).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    steps = 30 if smoke else c["steps"]
    eval_every = 10 if smoke else EVAL_EVERY
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=c["lr"], betas=BETAS, fused=True)

    def lr_at(step):
        if step < c["warmup"]:
            return c["lr"] * (step + 1) / c["warmup"]
        t = (step - c["warmup"]) / max(1, steps - c["warmup"])
        return c["lr"] * (MIN_LR_FRACTION + (1 - MIN_LR_FRACTION) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))

    train_gpu = train_ids.to(dev)
    nv = (val_ids.numel() - 1) // CTX
    val_windows = val_ids[:nv * CTX + 1].unfold(0, CTX + 1, CTX).contiguous().to(dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(SEED)
    offsets = torch.arange(CTX + 1, device=dev)

    best = (float("inf"), -1, None)
    rows, recent = [], []
    t0 = time.time()
    tokens_per_step = c["batch"] * CTX
    print(f"[{name}] {n_params:,} parameters, {steps} steps of {tokens_per_step} tokens, "
          f"{train_ids.numel():,} training tokens", flush=True)
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        starts = torch.randint(0, train_gpu.numel() - CTX - 1, (c["batch"], 1), device=dev, generator=gen)
        w = train_gpu[starts + offsets]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(w[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), w[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        opt.step()
        recent.append(loss.detach())
        last = step == steps - 1 or time.time() - t0 > c["max_seconds"]
        if (step + 1) % eval_every == 0 or last:
            tl = torch.stack(recent).mean().item()
            recent = []
            vl = val_loss(model, val_windows)
            if vl < best[0]:
                best = (vl, step + 1, {k: v.detach().clone() for k, v in model.state_dict().items()})
            el = time.time() - t0
            rows.append({"step": step + 1, "tokens": (step + 1) * tokens_per_step, "train_loss": round(tl, 5),
                         "val_loss": round(vl, 5), "val_ppl": round(math.exp(vl), 3), "lr": lr_at(step),
                         "seconds": round(el, 1)})
            print(f"[{name}] step {step + 1} train {tl:.4f} val {vl:.4f} (ppl {math.exp(vl):.2f}) "
                  f"{(step + 1) * tokens_per_step / el / 1e6:.2f}M tok/s", flush=True)
        if last:
            break
    with open(os.path.join(out, f"{name}-loss.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    model.load_state_dict(best[2])
    return model, {"parameters": n_params, "steps_run": rows[-1]["step"], "best_step": best[1],
                   "best_val_loss_bf16": best[0], "train_seconds": round(time.time() - t0, 1),
                   "tokens_seen": rows[-1]["tokens"]}


# ---- export and reference numbers --------------------------------------------------------

def save_hf(model, c, tok, folder):
    from safetensors.torch import save_file
    os.makedirs(folder, exist_ok=True)
    # Round to float16 first: the weights the reference numbers come from are the F16 file's.
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    sd = {k: v.half().cpu().contiguous() for k, v in model.hf_state_dict().items()}
    save_file(sd, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hf_config(c), f, indent=2)
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>", "add_bos_token": False, "add_eos_token": False,
                   "clean_up_tokenization_spaces": False,
                   "model_max_length": CTX, "chat_template": CHAT_TEMPLATE}, f, indent=2)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": 0, "pad_token_id": 0}, f, indent=2)


@torch.no_grad()
def window_ppl(forward, ids):
    """Perplexity as `ember perplexity --ctx CTX` computes it."""
    nll, n = 0.0, 0
    for s in range(0, len(ids), CTX):
        w = ids[s:s + CTX]
        if len(w) < 2:
            continue
        logits = forward(torch.tensor([w]))[0].double()
        nll += F.cross_entropy(logits[:-1], torch.tensor(w[1:]), reduction="sum").item()
        n += len(w) - 1
    return math.exp(nll / n), n


@torch.no_grad()
def reference(model, folder, tok, val_sample, val_text, out, name, fixture):
    import transformers
    torch.set_num_threads(16)
    own = Llama(model.c)
    own.load_state_dict({k: v.float().cpu() for k, v in model.state_dict().items()})
    own.eval()
    kw = {"attn_implementation": "eager"}
    try:
        hf = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, **kw)
    except TypeError:
        hf = transformers.LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, **kw)
    hf.eval()
    hf_fwd = lambda x: hf(input_ids=x).logits.float()
    ids = tok.encode(val_sample, add_special_tokens=False).ids
    a, b = hf_fwd(torch.tensor([ids[:CTX]]))[0], own(torch.tensor([ids[:CTX]]))[0]
    agree = ((a - b).abs().max() / a.abs().max()).item()
    res = {"hf_vs_own_max_rel": agree}
    res["val_sample_ppl"], res["val_sample_tokens"] = window_ppl(hf_fwd, ids)
    res["val_sample_chars"] = len(val_sample)
    vids = tok.encode(val_text, add_special_tokens=False).ids
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 on the GPU for the long text
    hf_gpu = copy.deepcopy(hf).cuda()
    res["val_ppl"], res["val_tokens"] = window_ppl(lambda x: hf_gpu(input_ids=x.cuda()).logits.float().cpu(), vids)
    del hf_gpu
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"[{name}] transformers vs own model: {agree:.2e}; val-sample ppl {res['val_sample_ppl']:.3f} "
          f"({res['val_sample_tokens']} tokens); validation ppl {res['val_ppl']:.3f}", flush=True)
    if fixture:
        fx = os.path.join(out, "fixture")
        os.makedirs(fx, exist_ok=True)
        prompt = ids[:FIXTURE_TOKENS]
        logits = hf_fwd(torch.tensor([prompt]))[0]
        np.save(os.path.join(fx, "logits.npy"), logits.numpy().astype(np.float32))
        seq, gaps = list(prompt), []
        for _ in range(GREEDY_TOKENS):
            l = hf_fwd(torch.tensor([seq]))[0, -1]
            top = torch.topk(l, 2).values
            gaps.append(((top[0] - top[1]) / l.abs().max()).item())
            seq.append(int(l.argmax()))
        greedy = seq[len(prompt):]
        with open(os.path.join(fx, "expected.json"), "w") as f:
            json.dump({"ids": prompt, "greedy": greedy, "greedy_min_gap_ratio": min(gaps),
                       "greedy_text": tok.decode(greedy), "val_sample_ppl": res["val_sample_ppl"],
                       "val_sample_tokens": res["val_sample_tokens"], "ctx": CTX,
                       "val_sample_ids_head": ids[:16]}, f, indent=1)
        # Exact-match data for the tokenizer test: the ids of the whole val-sample.txt.
        with open(os.path.join(fx, "val-sample-ids.json"), "w") as f:
            json.dump(ids, f)
        # A few demo continuations, for the model card.
        samples = {}
        for p in ["The kernel", "Python is", "To configure the network"]:
            seq = tok.encode(p, add_special_tokens=False).ids
            g = torch.Generator().manual_seed(SEED)
            for _ in range(60):
                l = hf_fwd(torch.tensor([seq[-CTX:]]))[0, -1] / 0.7
                seq.append(int(torch.multinomial(torch.softmax(l, -1), 1, generator=g)))
            samples[p] = tok.decode(seq)
        res["samples_t0.7"] = samples
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True, help="corpus.tar.xz from make_corpus.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="a tiny run through every step")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(SEED)
    torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.time()

    with tarfile.open(args.corpus) as tar:
        files = {m.name: tar.extractfile(m).read().decode("utf-8") for m in tar.getmembers()}
    train_docs = files["train.txt"].split(DOC_SEP)
    val_docs = files["val.txt"].split(DOC_SEP)
    if args.smoke:
        train_docs = train_docs[:1500]
    tok = train_tokenizer(train_docs)
    print(f"tokenizer: {time.time() - t0:.0f}s", flush=True)
    train_ids = encode_stream(tok, train_docs)
    val_ids = encode_stream(tok, val_docs)
    print(f"tokens: train {train_ids.numel():,}, val {val_ids.numel():,} ({time.time() - t0:.0f}s); "
          f"{len(files['train.txt']) / train_ids.numel():.2f} characters per token", flush=True)

    results = {"seed": SEED, "vocab": VOCAB, "ctx": CTX, "torch": torch.__version__, "manifest": files["MANIFEST.txt"],
               "train_tokens": train_ids.numel(), "val_tokens_stream": val_ids.numel(),
               "optimizer": {"weight_decay": WEIGHT_DECAY, "betas": BETAS, "grad_clip": GRAD_CLIP,
                             "min_lr_fraction": MIN_LR_FRACTION, "eval_every": EVAL_EVERY},
               "models": {}}
    val_text = "\n\n".join(val_docs)
    for i, (name, c) in enumerate(CONFIGS.items()):
        model, info = train_model(name, c, train_ids, val_ids, args.out, args.smoke)
        folder = os.path.join(args.out, name)
        save_hf(model, c, tok, folder)
        info.update(config=c, hf_config=hf_config(c))
        info.update(reference(model, folder, tok, files["val-sample.txt"], val_text if not args.smoke else val_docs[0],
                              args.out, name, fixture=(i == 0)))
        results["models"][name] = info
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    print(f"total {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
