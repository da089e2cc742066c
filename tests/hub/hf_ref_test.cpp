// OWNER/REPO[:QUANT] references, the hub's tree listing, and which GGUF file is chosen.
#include <gtest/gtest.h>

#include "hub/hf_ref.h"
#include "util/error.h"

using namespace ember;
using namespace ember::hub;

TEST(HfRef, ParsesRepoAndQuant) {
  const HfRef a = parse_hf_ref("Qwen/Qwen3-0.6B-GGUF:Q8_0");
  EXPECT_EQ(a.repo, "Qwen/Qwen3-0.6B-GGUF");
  EXPECT_EQ(a.quant, "Q8_0");
  EXPECT_EQ(parse_hf_ref("o/r").quant, "");
  for (const char* bad : {"", "norepo", "o/", "/r", "o/r/x", "o/r:", "o/../r", "../x/r", "o/r:Q4 K", "o r/x"})
    EXPECT_THROW(parse_hf_ref(bad), Error) << bad;
}

TEST(HfRef, ReadsTheTreeListing) {
  const auto files = parse_hub_listing(R"([
    {"type": "directory", "path": "sub"},
    {"type": "file", "path": "README.md", "size": 120, "oid": "abc"},
    {"type": "file", "path": "m-Q4_K_M.gguf", "size": 133, "lfs": {"oid": "ff00", "size": 4096, "pointerSize": 130}}])");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].sha256, "");
  EXPECT_EQ(files[1].size, 4096);
  EXPECT_EQ(files[1].sha256, "ff00");
  EXPECT_THROW(parse_hub_listing("{\"error\": \"x\"}"), Error);
}

namespace {
std::vector<HubFile> named(std::initializer_list<const char*> paths) {
  std::vector<HubFile> files;
  for (const char* p : paths) files.push_back(HubFile{p, -1, ""});
  return files;
}
}  // namespace

TEST(HfRef, ChoosesTheGgufFile) {
  const std::vector<HubFile> files = named({"m-Q8_0.gguf", "m-Q4_K_M.gguf", "m-Q4_K.gguf", "mmproj-m-F16.gguf", "README.md"});
  EXPECT_EQ(choose_gguf(files, "").path, "m-Q4_K_M.gguf");
  EXPECT_EQ(choose_gguf(files, "q8_0").path, "m-Q8_0.gguf");
  EXPECT_EQ(choose_gguf(files, "Q4_K").path, "m-Q4_K.gguf") << "the shortest name that matches";
  EXPECT_THROW(choose_gguf(files, "Q2_K"), Error);
  EXPECT_THROW(choose_gguf(named({"a-F16.gguf", "a-BF16.gguf"}), ""), Error) << "several and no default";
  EXPECT_EQ(choose_gguf(named({"only.gguf"}), "").path, "only.gguf");
  EXPECT_THROW(choose_gguf(named({"big-Q4_K_M-00001-of-00003.gguf"}), ""), Error);
  EXPECT_THROW(choose_gguf(named({"mmproj-F16.gguf"}), ""), Error);
}
