// Stop strings over streamed text: text is released only once it can no
// longer turn out to be the start of a stop string.
#pragma once
#include <string>
#include <vector>

namespace ember {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds text; returns what is safe to show. Sets `stopped` when a stop string
  // appeared (the returned text then ends just before it).
  std::string push(const std::string& text, bool& stopped);
  std::string flush();  // the held-back tail at the end of generation

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace ember
