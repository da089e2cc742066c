// Opening a Hugging Face model folder: one model.safetensors, or shards listed
// by model.safetensors.index.json ("weight_map": tensor name -> shard file).
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "safetensors/safetensors.h"
#include "util/error.h"
#include "util/json_bounded.h"
#include "util/quote.h"
#include "util/text_file.h"

namespace ember::safetensors {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Shard names come from the index file: accept plain file names only, so an
// index can never point outside its folder.
bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\\') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

}  // namespace

Folder Folder::open(const std::string& dir_or_file) {
  std::error_code ec;
  std::string index_path, single_path;
  if (fs::is_directory(dir_or_file, ec)) {
    const fs::path dir(dir_or_file);
    if (fs::exists(dir / "model.safetensors.index.json", ec))
      index_path = (dir / "model.safetensors.index.json").string();
    else if (fs::exists(dir / "model.safetensors", ec))
      single_path = (dir / "model.safetensors").string();
    else
      throw Error(dir_or_file + ": neither model.safetensors.index.json nor model.safetensors is in this folder");
  } else if (ends_with(dir_or_file, ".json")) {
    index_path = dir_or_file;
  } else {
    single_path = dir_or_file;
  }

  Folder f;
  if (!single_path.empty()) {
    auto file = std::make_shared<MappedFile>(single_path);
    f.add_file(file->data(), file->size(), single_path);
    f.files_.push_back(std::move(file));
    return f;
  }

  // --- sharded: read the index, then each shard it names once ---
  const nlohmann::json index = parse_json(read_text_file(index_path, limits::kMaxJsonFileBytes), index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(index_path + ": no \"weight_map\" object");
  const nlohmann::json& weight_map = index.at("weight_map");

  std::set<std::string> shards;
  for (const auto& [tensor, shard] : weight_map.items()) {
    if (!shard.is_string() || !is_plain_file_name(shard.get<std::string>()))
      throw Error(index_path + ": weight_map entry '" + excerpt(tensor) + "' names " + excerpt(shard.dump()) +
                  ", which is not a file name in this folder");
    shards.insert(shard.get<std::string>());
  }
  const fs::path dir = fs::path(index_path).parent_path();
  for (const std::string& shard : shards) {
    const std::string path = (dir / shard).string();
    auto file = std::make_shared<MappedFile>(path);
    f.add_file(file->data(), file->size(), path);
    f.files_.push_back(std::move(file));
  }
  // The index and the shards must agree on where each tensor lives.
  for (const auto& [tensor, shard] : weight_map.items()) {
    const Tensor* t = f.find(tensor);
    if (!t) throw Error(index_path + ": weight_map lists '" + tensor + "' in " + shard.get<std::string>() + ", which does not hold it");
    if (fs::path(t->file).filename() != shard.get<std::string>())
      throw Error(index_path + ": weight_map lists '" + tensor + "' in " + shard.get<std::string>() + ", but it is in " + t->file);
  }
  return f;
}

}  // namespace ember::safetensors
