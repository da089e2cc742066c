#include "model/convert.h"

#include <filesystem>

#include "gguf/gguf.h"
#include "model/architectures.h"
#include "model/gguf_export.h"
#include "model/loaders.h"
#include "model/quant_mix.h"
#include "model/sampling_defaults.h"
#include "quant/quant.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember {

namespace {

bool ends_with(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// GGUF files whose RoPE pairs adjacent dimensions (llama) store Q and K with the
// rows of each head reordered so that adjacent pairing equals Hugging Face's
// split-halves pairing: file row 2i+j of a head is original row j*(d/2)+i.
int64_t original_row(int64_t file_row, int head_dim) {
  const int64_t head = file_row / head_dim, local = file_row % head_dim;
  return head * head_dim + (local % 2) * (head_dim / 2) + local / 2;
}

}  // namespace

namespace {

// The tensors of `f` as export jobs in `mix`; `permute` reorders Q/K rows for
// adjacent-pair RoPE (Hugging Face input of a llama-layout architecture).
std::vector<ExportTensor> export_tensors(const LoadedFiles& f, const QuantMix& mix, bool permute,
                                         const std::string& what) {
  const ModelDesc& d = f.desc;
  // A GGUF file says its embeddings are tied by having no output.weight.
  const bool tied = d.tied_embeddings || !f.source->find("output.weight");
  std::vector<ExportTensor> out;
  for (const SourceTensor& s : f.source->tensors()) {
    ExportTensor t;
    t.name = s.name;
    t.ne = s.ne;
    t.type = tensor_type(mix, tensor_role(s.name, tied), s.ne[0]);
    const int64_t k = s.ne[0];
    const int64_t rows_per_part = s.ne.size() > 1 ? s.ne[1] : 1;
    const size_t rb = row_bytes(s.type, k);
    const bool permute_rows = permute && (ends_with(s.name, "attn_q.weight") || ends_with(s.name, "attn_k.weight"));
    if (permute && (ends_with(s.name, "attn_q.bias") || ends_with(s.name, "attn_k.bias")))
      throw Error(what + ": Q/K biases on a '" + d.arch + "' model cannot be written in its GGUF layout");
    const SourceTensor* src = &s;
    const int hd = d.head_dim;
    t.rows = [src, k, rows_per_part, rb, permute_rows, hd](int64_t r0, int64_t r1, float* dst) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t part = r / rows_per_part;
        int64_t row = r % rows_per_part;
        if (permute_rows) row = original_row(row, hd);
        quant::dequantize_row(src->type, src->parts[size_t(part)] + size_t(row) * rb, dst + (r - r0) * k, k);
      }
    };
    out.push_back(std::move(t));
  }
  if (!d.rope_freq_factors.empty() && !f.source->find("rope_freqs.weight")) {
    ExportTensor t;
    t.name = "rope_freqs.weight";
    t.ne = {int64_t(d.rope_freq_factors.size())};
    t.type = GgmlType::F32;
    t.rows = [factors = d.rope_freq_factors](int64_t, int64_t, float* dst) {
      std::copy(factors.begin(), factors.end(), dst);
    };
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

void convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const std::string& mix_name,
                        ThreadPool& pool, bool progress) {
  const QuantMix& mix = quant_mix(mix_name);
  LoadedFiles f = load_hf_folder(dir);
  const bool permute = arch_by_name(f.desc.arch).gguf_rope_pairing == RopePairing::Adjacent;
  const std::vector<ExportTensor> out = export_tensors(f, mix, permute, dir);

  ExportOptions opt;
  opt.name = std::filesystem::path(dir).filename().string();
  opt.progress = progress;
  const bool has_tokenizer = std::filesystem::exists(std::filesystem::path(dir) / "tokenizer.json");
  // The tokenizer and the default sampling of generation_config.json travel into the file.
  std::shared_ptr<Tokenizer> tok;
  if (has_tokenizer) tok = std::make_shared<Tokenizer>(Tokenizer::from_hf_path(dir));
  opt.extra_metadata = [tok, vocab = f.desc.vocab, sampling = sampling_defaults_in_folder(dir)](gguf::Writer& w) {
    if (tok) tok->write_gguf(w, vocab);
    write_sampling_defaults(w, sampling);
  };
  export_gguf(out_path, f.desc, out, opt, pool);
}

void convert_gguf_to_gguf(const std::string& in_path, const std::string& out_path, const std::string& mix_name,
                          ThreadPool& pool, bool progress) {
  const QuantMix& mix = quant_mix(mix_name);
  if (std::filesystem::exists(out_path) && std::filesystem::equivalent(in_path, out_path))
    throw Error(out_path + ": the output would overwrite the input it is read from");
  LoadedFiles f = load_gguf_files(in_path);  // already in GGUF layout: no Q/K permutation
  const std::vector<ExportTensor> out = export_tensors(f, mix, false, in_path);

  ExportOptions opt;
  opt.name = f.gguf->get_string("general.name", std::filesystem::path(in_path).stem().string());
  opt.progress = progress;
  std::shared_ptr<Tokenizer> tok;
  if (f.gguf->find("tokenizer.ggml.tokens")) tok = std::make_shared<Tokenizer>(Tokenizer::from_gguf(*f.gguf));
  opt.extra_metadata = [tok, vocab = f.desc.vocab, sampling = sampling_defaults_from_gguf(*f.gguf)](gguf::Writer& w) {
    if (tok) tok->write_gguf(w, vocab);
    write_sampling_defaults(w, sampling);
  };
  export_gguf(out_path, f.desc, out, opt, pool);
}

void convert_to_gguf(const std::string& input, const std::string& out_path, const std::string& mix,
                     ThreadPool& pool, bool progress) {
  if (std::filesystem::is_directory(input))
    convert_hf_to_gguf(input, out_path, mix, pool, progress);
  else
    convert_gguf_to_gguf(input, out_path, mix, pool, progress);
}

}  // namespace ember
