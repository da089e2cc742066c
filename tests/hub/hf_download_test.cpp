// fetch_gguf against a local server with the hub's URL layout: the tree
// listing, /resolve/ redirecting to a blob, byte ranges. Download, checksum,
// cache, resume, a corrupt file, the token, offline.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <unistd.h>

#include "hub/hf_download.h"
#include "hub/sha256.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::hub;

namespace {

class FakeHub : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(7);
    blob_.resize(300000);
    for (char& c : blob_) c = char(rng());
    cache_ = fs::temp_directory_path() / ("ember-hub-test-" + std::to_string(getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache_);
    const std::string blob_file = (cache_ / "blob").string();
    fs::create_directories(cache_);
    std::ofstream(blob_file, std::ios::binary) << blob_;
    sha_ = sha256_file(blob_file);
    fs::remove(blob_file);

    http_.Get("/api/models/owner/repo/tree/main", [this](const httplib::Request& req, httplib::Response& res) {
      auth_ = req.get_header_value("Authorization");
      const std::string listing = R"([{"type": "file", "path": "README.md", "size": 5},
        {"type": "file", "path": "model-Q4_K_M.gguf", "size": 133, "lfs": {"oid": ")" + listed_sha() + R"(", "size": )" +
                                  std::to_string(blob_.size()) + "}}]";
      res.set_content(listing, "application/json");
    });
    http_.Get("/owner/repo/resolve/main/model-Q4_K_M.gguf", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/cdn/blob-1234");  // the hub sends large files elsewhere
    });
    http_.Get("/cdn/blob-1234", [this](const httplib::Request& req, httplib::Response& res) {
      ++blob_requests_;
      range_ = req.get_header_value("Range");
      res.set_content(blob_, "application/octet-stream");  // the library answers byte ranges itself
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    opt_.endpoint = "http://127.0.0.1:" + std::to_string(port_);
    opt_.cache_dir = cache_.string();
    opt_.progress = false;
  }
  void TearDown() override {
    http_.stop();
    thread_.join();
    fs::remove_all(cache_);
  }
  std::string listed_sha() const { return corrupt_ ? std::string(64, '0') : sha_; }
  std::string read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  fs::path cached_path() const { return cache_ / "hf/owner/repo/main/model-Q4_K_M.gguf"; }

  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::string blob_, sha_, auth_, range_;
  std::atomic<int> blob_requests_{0};
  bool corrupt_ = false;
  fs::path cache_;
  HubOptions opt_;
};

}  // namespace

TEST_F(FakeHub, DownloadsVerifiesAndThenUsesTheCache) {
  opt_.token = "hf_secret";
  const std::string path = fetch_gguf(parse_hf_ref("owner/repo"), opt_);
  EXPECT_EQ(path, cached_path().string());
  EXPECT_EQ(read(path), blob_);
  EXPECT_EQ(auth_, "Bearer hf_secret");
  EXPECT_FALSE(fs::exists(path + ".part"));
  EXPECT_EQ(fetch_gguf(parse_hf_ref("owner/repo:Q4_K_M"), opt_), path);
  EXPECT_EQ(blob_requests_, 1) << "a verified file is not downloaded again";
}

TEST_F(FakeHub, ResumesAnInterruptedDownload) {
  fs::create_directories(cached_path().parent_path());
  std::ofstream(cached_path().string() + ".part", std::ios::binary) << blob_.substr(0, 100000);
  const std::string path = fetch_gguf(parse_hf_ref("owner/repo"), opt_);
  EXPECT_EQ(range_, "bytes=100000-");
  EXPECT_EQ(read(path), blob_);
}

TEST_F(FakeHub, ACorruptDownloadIsRemovedNotKept) {
  corrupt_ = true;
  EXPECT_THROW(fetch_gguf(parse_hf_ref("owner/repo"), opt_), Error);
  EXPECT_FALSE(fs::exists(cached_path()));
  EXPECT_FALSE(fs::exists(cached_path().string() + ".part"));
}

TEST_F(FakeHub, OfflineUsesOnlyTheCache) {
  opt_.offline = true;
  EXPECT_THROW(fetch_gguf(parse_hf_ref("owner/repo"), opt_), Error);
  opt_.offline = false;
  const std::string path = fetch_gguf(parse_hf_ref("owner/repo"), opt_);
  http_.stop();  // no network from here on
  opt_.offline = true;
  EXPECT_EQ(fetch_gguf(parse_hf_ref("owner/repo"), opt_), path);
}

TEST_F(FakeHub, MissingRepositoryOrQuantSaysSo) {
  try {
    fetch_gguf(parse_hf_ref("owner/other"), opt_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("404"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fetch_gguf(parse_hf_ref("owner/repo:Q2_K"), opt_), Error);
}
