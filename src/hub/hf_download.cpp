#include "hub/hf_download.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hub/http_client.h"
#include "hub/sha256.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace ember::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

// "\r  model.gguf   42%  1.10 / 2.61 GiB  35.2 MiB/s" on a terminal, redrawn at most ten times a second.
class ProgressBar {
 public:
  ProgressBar(std::string name, bool on) : name_(std::move(name)), on_(on && isatty(fileno(stderr))) {}
  void update(int64_t done, int64_t total) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100) && done != total) return;
    if (first_done_ < 0) {
      first_done_ = done;
      start_ = now;
    }
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? double(done - first_done_) / secs : 0;
    const double gib = 1024.0 * 1024 * 1024;
    if (total > 0)
      std::fprintf(stderr, "\r  %s  %3d%%  %.2f / %.2f GiB  %.1f MiB/s ", name_.c_str(), int(100 * done / total), done / gib,
                   total / gib, rate / (1024 * 1024));
    else
      std::fprintf(stderr, "\r  %s  %.2f GiB  %.1f MiB/s ", name_.c_str(), done / gib, rate / (1024 * 1024));
    drawn_ = true;
  }
  ~ProgressBar() {
    if (drawn_) std::fprintf(stderr, "\n");
  }

 private:
  std::string name_;
  bool on_, drawn_ = false;
  int64_t first_done_ = -1;
  std::chrono::steady_clock::time_point start_, last_{};
};

// Offline: the files a previous download left for this repository and revision.
std::vector<HubFile> cached_files(const fs::path& dir) {
  std::vector<HubFile> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".gguf" && fs::exists(e.path().string() + ".sha256"))
      files.push_back({e.path().filename().string(), int64_t(e.file_size()), read_text(e.path().string() + ".sha256")});
  return files;
}

}  // namespace

HubOptions hub_options_from_env(bool offline) {
  HubOptions o;
  if (const std::string e = env("HF_ENDPOINT"); !e.empty()) o.endpoint = e;
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  o.token = env("HF_TOKEN");
  if (const std::string c = env("EMBER_CACHE"); !c.empty()) o.cache_dir = c;
  else if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) o.cache_dir = x + "/ember";
  else o.cache_dir = env("HOME") + "/.cache/ember";
  o.offline = offline || env("HF_HUB_OFFLINE") == "1";
  return o;
}

std::string fetch_gguf(const HfRef& ref, const HubOptions& o) {
  const fs::path dir = fs::path(o.cache_dir) / "hf" / ref.repo / ref.revision;
  if (o.offline) {
    const std::vector<HubFile> cached = cached_files(dir);
    if (cached.empty())
      throw Error(ref.repo + " is not in the cache (" + dir.string() + "); run once without --offline to download it");
    return (dir / choose_gguf(cached, ref.quant).path).string();
  }
  const std::string base = o.endpoint + "/" + ref.repo;
  const HubFile file = choose_gguf(parse_hub_listing(http_get(o.endpoint + "/api/models/" + ref.repo + "/tree/" + ref.revision, o.token)),
                                   ref.quant);
  if (file.path.find('/') != std::string::npos || file.path.find("..") != std::string::npos)
    throw Error("--hf downloads files at the top of a repository only, not " + file.path);
  const fs::path target = dir / file.path, part = target.string() + ".part", verified = target.string() + ".sha256";
  // Verified before and still the file the hub lists: nothing to do.
  if (fs::exists(target) && fs::exists(verified) && read_text(verified) == file.sha256 &&
      (file.size < 0 || int64_t(fs::file_size(target)) == file.size))
    return target.string();
  fs::create_directories(dir);
  if (!fs::exists(part)) std::ofstream(part, std::ios::binary).flush();
  if (file.size < 0 || int64_t(fs::file_size(part)) < file.size) {
    std::fprintf(stderr, "ember: downloading %s from %s\n", file.path.c_str(), ref.repo.c_str());
    ProgressBar bar(file.path, o.progress);
    http_download(base + "/resolve/" + ref.revision + "/" + file.path, o.token, part.string(),
                  [&](int64_t done, int64_t total) { bar.update(done, total); });
  }
  if (file.size >= 0 && int64_t(fs::file_size(part)) != file.size) {
    const int64_t got = int64_t(fs::file_size(part));
    if (got > file.size) fs::remove(part);  // more than the file: not resumable
    throw Error(file.path + ": got " + std::to_string(got) + " bytes, the hub lists " + std::to_string(file.size) +
                "; run again to resume");
  }
  if (!file.sha256.empty()) {
    const std::string sum = sha256_file(part.string());
    if (sum != file.sha256) {
      fs::remove(part);  // a corrupt file must not be resumed
      throw Error(file.path + ": SHA-256 " + sum + " differs from the hub's " + file.sha256 + "; the download was removed");
    }
  }
  fs::rename(part, target);
  std::ofstream(verified) << file.sha256 << "\n";
  return target.string();
}

}  // namespace ember::hub
