// The progress display on standard error: one line rewritten in place on a
// terminal, plain lines elsewhere (logs, CI).
#pragma once
#include <mutex>
#include <string>

namespace ember::bench {

class Progress {
 public:
  explicit Progress(bool enabled = true);
  ~Progress();
  // The current step ("S3 round 2/3, ember: 8022 tokens"); replaces the last one.
  void status(const std::string& text);
  // A line that stays (a result, a warning).
  void line(const std::string& text);

 private:
  std::mutex mu_;
  bool enabled_, tty_;
  bool open_ = false;  // a status line is on the screen
};

}  // namespace ember::bench
