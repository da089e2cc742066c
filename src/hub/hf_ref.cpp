#include "hub/hf_ref.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace ember::hub {

namespace {

bool plain_name(std::string_view s) {
  if (s.empty() || s.size() > 96 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(uint8_t(c)) || c == '-' || c == '_' || c == '.'; });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](char c) { return char(std::tolower(uint8_t(c))); });
  return s;
}

}  // namespace

HfRef parse_hf_ref(std::string_view text) {
  HfRef r;
  const size_t colon = text.find(':');
  const std::string_view repo = text.substr(0, colon);
  if (colon != std::string_view::npos) r.quant = std::string(text.substr(colon + 1));
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos || !plain_name(repo.substr(0, slash)) || !plain_name(repo.substr(slash + 1)) ||
      (colon != std::string_view::npos && !plain_name(r.quant)))
    throw Error("--hf: expected OWNER/REPO or OWNER/REPO:QUANT (letters, digits, '-', '_', '.'), got '" +
                std::string(text.substr(0, 200)) + "'");
  r.repo = std::string(repo);
  return r;
}

std::vector<HubFile> parse_hub_listing(const std::string& json_text) {
  const auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) throw Error("the hub's file listing is not a JSON array");
  std::vector<HubFile> files;
  for (const auto& e : j) {
    if (!e.is_object() || e.value("type", "") != "file" || !e.contains("path") || !e["path"].is_string()) continue;
    HubFile f;
    f.path = e["path"].get<std::string>();
    if (e.contains("size") && e["size"].is_number_integer()) f.size = e["size"].get<int64_t>();
    if (e.contains("lfs") && e["lfs"].is_object()) {
      const auto& lfs = e["lfs"];
      if (lfs.contains("oid") && lfs["oid"].is_string()) f.sha256 = lfs["oid"].get<std::string>();
      if (lfs.contains("size") && lfs["size"].is_number_integer()) f.size = lfs["size"].get<int64_t>();
    }
    files.push_back(std::move(f));
  }
  return files;
}

HubFile choose_gguf(const std::vector<HubFile>& files, const std::string& quant) {
  std::vector<const HubFile*> ggufs;
  for (const HubFile& f : files) {
    const std::string name = lower(f.path);
    if (name.ends_with(".gguf") && name.find("mmproj") == std::string::npos) ggufs.push_back(&f);
  }
  std::sort(ggufs.begin(), ggufs.end(), [](auto* a, auto* b) { return a->path.size() != b->path.size() ? a->path.size() < b->path.size() : a->path < b->path; });
  std::string names;
  for (const HubFile* f : ggufs) names += (names.empty() ? "" : ", ") + f->path;
  if (ggufs.empty()) throw Error("the repository has no GGUF file");
  auto pick = [&](const std::string& q) -> const HubFile* {
    for (const HubFile* f : ggufs)  // shortest name first: "Q4_K" finds model-Q4_K.gguf before model-Q4_K_M.gguf
      if (lower(f->path).find(lower(q)) != std::string::npos) return f;
    return nullptr;
  };
  const HubFile* chosen = nullptr;
  if (!quant.empty()) {
    chosen = pick(quant);
    if (!chosen) throw Error("no GGUF file for '" + quant + "' in the repository; it has: " + names);
  } else {
    for (const char* q : {"Q4_K_M", "Q8_0"})
      if ((chosen = pick(q))) break;
    if (!chosen && ggufs.size() == 1) chosen = ggufs[0];
    if (!chosen) throw Error("the repository has several GGUF files; name one with OWNER/REPO:QUANT: " + names);
  }
  if (lower(chosen->path).find("-of-0") != std::string::npos)
    throw Error(chosen->path + " is one part of a split model, which --hf does not download yet");
  return *chosen;
}

}  // namespace ember::hub
