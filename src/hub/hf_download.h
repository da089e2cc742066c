// `--hf OWNER/REPO[:QUANT]`: the GGUF file of a Hugging Face repository,
// downloaded once into a local cache and checked against the SHA-256 the hub
// lists for it. An interrupted download resumes where it stopped.
//
// Cache: $EMBER_CACHE, else $XDG_CACHE_HOME/ember, else ~/.cache/ember; each
// file at hf/OWNER/REPO/REVISION/FILE, a half-done one as FILE.part, and
// FILE.sha256 once verified (so a cached file is not hashed again).
#pragma once
#include <string>

#include "hub/hf_ref.h"

namespace ember::hub {

struct HubOptions {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT
  std::string token;                                 // HF_TOKEN: gated and private repositories
  std::string cache_dir;
  bool offline = false;   // the cache only, no network
  bool progress = true;   // a progress bar on standard error
};

// Endpoint, token and cache from the environment.
HubOptions hub_options_from_env(bool offline);

// The local path of the chosen file. Throws ember::Error (network, checksum,
// nothing cached when offline) with a message that says what to do.
std::string fetch_gguf(const HfRef& ref, const HubOptions& o);

}  // namespace ember::hub
