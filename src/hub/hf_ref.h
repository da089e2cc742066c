// Which file of a Hugging Face repository `--hf OWNER/REPO[:QUANT]` means:
// the reference parsed, the repository's file listing (the hub's tree API)
// read, and one GGUF file chosen from it. Plain functions, no network.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::hub {

struct HfRef {
  std::string repo;   // "owner/name"
  std::string quant;  // e.g. "Q4_K_M"; empty: the default choice
  std::string revision = "main";
};

// Throws ember::Error for anything but OWNER/REPO[:QUANT] with plain names.
HfRef parse_hf_ref(std::string_view text);

struct HubFile {
  std::string path;    // inside the repository
  int64_t size = -1;   // bytes; -1 when unknown
  std::string sha256;  // hex, from the LFS pointer; empty for files kept in git itself
};

// The JSON array GET /api/models/{repo}/tree/{revision} answers. Throws ember::Error.
std::vector<HubFile> parse_hub_listing(const std::string& json_text);

// The GGUF file for `quant` (case-insensitive part of the name), or without a
// quant the first of Q4_K_M, Q8_0 present, else the only one. Multimodal
// projector files are never chosen; split files are refused. Throws
// ember::Error naming the GGUF files there are.
HubFile choose_gguf(const std::vector<HubFile>& files, const std::string& quant);

}  // namespace ember::hub
