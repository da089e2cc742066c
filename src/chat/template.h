// A Jinja template as chat templates use it: parse once, render many times.
//
// The dialect is the one of @huggingface/jinja, the reference this code is tested against
// (tools/oracle/chat_expected.mjs): trim_blocks and lstrip_blocks on, JavaScript-flavoured
// printing of values. Contexts are nlohmann::ordered_json so that key order, which `tojson`
// output depends on, survives.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::chat {

struct Stmt;

// Bounds that keep a hostile or broken template from running forever or exhausting memory.
struct RenderLimits {
  size_t max_output_bytes = size_t(64) << 20;  // also the largest string a template may build
  size_t max_list_items = 1'000'000;           // largest list (range(), list concatenation)
  int64_t max_iterations = 10'000'000;         // loop iterations plus macro calls
  int max_call_depth = 100;                    // nested macro calls
  size_t max_built_bytes = size_t(256) << 20;  // all strings built by concatenation, filters and methods
};

class Template {
 public:
  // Throws ember::Error naming the line for a syntax error, unknown filter or test, or a
  // statement ember does not support ({% include %}, {% extends %}, ...).
  static Template parse(const std::string& source);

  // `context` must be an object; its keys become template variables. Throws ember::Error for
  // runtime errors (raise_exception, bad operand types, limits), naming the template line.
  std::string render(const nlohmann::ordered_json& context, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> program_;
};

}  // namespace ember::chat
