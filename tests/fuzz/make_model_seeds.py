#!/usr/bin/env python3
"""Writes the seeds of the fuzzers that run after the file readers:
fuzz_gguf_desc (a tiny valid qwen3 GGUF: 1 layer, hidden 8, 2 heads of 4, one
KV head, FFN 8, vocabulary 16, F32 zeros), fuzz_hf_config (config.json files
of several families) and fuzz_tokenizer_json (a small byte-level BPE).
Run from anywhere: python3 tests/fuzz/make_model_seeds.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
U32, F32, STRING = 4, 6, 8


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def tiny_qwen3():
    hidden, heads, kv_heads, head, ffn, vocab = 8, 2, 1, 4, 8, 16
    meta = [kv("general.architecture", STRING, s("qwen3"))]
    for key, val in [("block_count", 1), ("context_length", 64), ("embedding_length", hidden),
                     ("feed_forward_length", ffn), ("attention.head_count", heads),
                     ("attention.head_count_kv", kv_heads), ("attention.key_length", head)]:
        meta.append(kv("qwen3." + key, U32, struct.pack("<I", val)))
    meta.append(kv("qwen3.attention.layer_norm_rms_epsilon", F32, struct.pack("<f", 1e-6)))
    meta.append(kv("qwen3.rope.freq_base", F32, struct.pack("<f", 1e6)))
    shapes = [("token_embd.weight", [hidden, vocab]), ("output_norm.weight", [hidden])]
    p = "blk.0."
    shapes += [(p + "attn_norm.weight", [hidden]), (p + "attn_q.weight", [hidden, heads * head]),
               (p + "attn_k.weight", [hidden, kv_heads * head]), (p + "attn_v.weight", [hidden, kv_heads * head]),
               (p + "attn_output.weight", [heads * head, hidden]), (p + "attn_q_norm.weight", [head]),
               (p + "attn_k_norm.weight", [head]), (p + "ffn_norm.weight", [hidden]),
               (p + "ffn_gate.weight", [hidden, ffn]), (p + "ffn_up.weight", [hidden, ffn]),
               (p + "ffn_down.weight", [ffn, hidden])]
    infos, data = b"", b""
    for name, ne in shapes:
        n = 1
        for d in ne:
            n *= d
        infos += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", 0, len(data))
        data += struct.pack("<%df" % n, *([0.01] * n))
        data += b"\0" * (-len(data) % 32)
    head_bytes = b"GGUF" + struct.pack("<IQQ", 3, len(shapes), len(meta)) + b"".join(meta) + infos
    return head_bytes + b"\0" * (-len(head_bytes) % 32) + data


def configs():
    base = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512,
            "rms_norm_eps": 1e-6, "rope_theta": 1e6}
    out = {"qwen3": dict(base, architectures=["Qwen3ForCausalLM"]),
           "llama3": dict(base, architectures=["LlamaForCausalLM"],
                          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 128}),
           "gemma3": dict(base, architectures=["Gemma3ForCausalLM"], sliding_window=16, sliding_window_pattern=6,
                          query_pre_attn_scalar=16, rope_local_base_freq=10000.0),
           "qwen3moe": dict(base, architectures=["Qwen3MoeForCausalLM"], num_experts=4, num_experts_per_tok=2,
                            moe_intermediate_size=32, norm_topk_prob=True, mlp_only_layers=[0])}
    return {k: json.dumps(v).encode() for k, v in out.items()}


def tokenizer_json():
    t = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4}, "merges": ["a b", "Ġ a"]},
         "added_tokens": [{"id": 5, "content": "<s>", "special": True}],
         "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
         "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
         "decoder": {"type": "ByteLevel"}}
    return json.dumps(t).encode()


def main():
    seeds = {"gguf_desc/tiny_qwen3": tiny_qwen3(), "tokenizer_json/tiny_bpe.json": tokenizer_json()}
    for name, blob in configs().items():
        seeds["hf_config/" + name + ".json"] = blob
    seeds["sampling/basic"] = struct.pack("<fifffffhQBB", 0.8, 5, 0.9, 0.05, 1.1, 0.0, 0.0, 64, 7, 15, 12) + \
        struct.pack("<16f", *[float(i) / 4 for i in range(16)])
    for name, blob in seeds.items():
        path = os.path.join(HERE, "corpus", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(blob)
        print(f"{name}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
