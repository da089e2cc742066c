// Small hostile files for the hostile-input suite, built by the tests
// themselves: a tiny valid qwen3 GGUF whose metadata or tensors a test then
// mutates, safetensors files, and deeply nested JSON.
#pragma once
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/architectures.h"
#include "model/descriptor.h"

namespace ember::hostile {

inline std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember-hostile-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// A 2-layer qwen3 with hidden 64, 4 heads of 16 (2 KV heads), FFN 128, vocabulary 256.
inline ModelDesc tiny_desc() {
  ModelDesc d;
  d.arch = "qwen3";
  d.n_layers = 2; d.hidden = 64; d.n_heads = 4; d.n_kv_heads = 2; d.head_dim = 16; d.ffn = 128; d.vocab = 256;
  d.max_context = 512; d.norm_eps = 1e-6f; d.qk_norm = true;
  d.layers.assign(2, LayerDesc{false, 0, 1e6f});
  return d;
}

struct TensorDecl { std::string name; std::vector<int64_t> ne; };

inline std::vector<TensorDecl> tiny_tensors(const ModelDesc& d) {
  std::vector<TensorDecl> t = {{"token_embd.weight", {d.hidden, d.vocab}}, {"output_norm.weight", {d.hidden}}};
  for (int i = 0; i < d.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back({p + "attn_norm.weight", {d.hidden}});
    t.push_back({p + "attn_q.weight", {d.hidden, d.n_heads * d.head_dim}});
    t.push_back({p + "attn_k.weight", {d.hidden, d.n_kv_heads * d.head_dim}});
    t.push_back({p + "attn_v.weight", {d.hidden, d.n_kv_heads * d.head_dim}});
    t.push_back({p + "attn_output.weight", {d.n_heads * d.head_dim, d.hidden}});
    t.push_back({p + "attn_q_norm.weight", {d.head_dim}});
    t.push_back({p + "attn_k_norm.weight", {d.head_dim}});
    t.push_back({p + "ffn_norm.weight", {d.hidden}});
    t.push_back({p + "ffn_gate.weight", {d.hidden, d.ffn}});
    t.push_back({p + "ffn_up.weight", {d.hidden, d.ffn}});
    t.push_back({p + "ffn_down.weight", {d.ffn, d.hidden}});
  }
  return t;
}

// Writes the tiny model (all weights 0.01) after `mutate` has changed the
// metadata or the tensor list.
inline void write_tiny_gguf(const std::string& path,
                            const std::function<void(gguf::Writer&, std::vector<TensorDecl>&)>& mutate = {}) {
  const ModelDesc d = tiny_desc();
  gguf::Writer w;
  desc_to_gguf(d, w);
  std::vector<TensorDecl> tensors = tiny_tensors(d);
  if (mutate) mutate(w, tensors);
  for (const auto& t : tensors) w.add_tensor(t.name, t.ne, GgmlType::F32);
  w.begin(path);
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (int64_t x : t.ne) n *= x;
    std::vector<float> data(size_t(n), 0.01f);
    w.write_tensor_data(data.data(), data.size() * sizeof(float));
  }
  w.finish();
}

// `depth` nested arrays around a value: [[[...1...]]].
inline std::string nested_json(size_t depth, const std::string& open = "[", const std::string& close = "]") {
  std::string s;
  s.reserve(depth * (open.size() + close.size()) + 1);
  for (size_t i = 0; i < depth; ++i) s += open;
  s += "1";
  for (size_t i = 0; i < depth; ++i) s += close;
  return s;
}

// Peak resident memory of this process so far, in MB.
inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

// Seconds `fn` takes.
template <class F>
double seconds(F&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ember::hostile
