#include "bench/progress.h"

#include <unistd.h>

#include <cstdio>

#include "bench/sse_client.h"

namespace ember::bench {

Progress::Progress(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO)) {}

Progress::~Progress() {
  if (open_) std::fputs("\n", stderr);
}

void Progress::status(const std::string& text) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K[%6.1f s] %s", now_s(), text.c_str());
    open_ = true;
  } else {
    std::fprintf(stderr, "[%6.1f s] %s\n", now_s(), text.c_str());
  }
  std::fflush(stderr);
}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (open_) std::fputs("\r\033[K", stderr);
  open_ = false;
  std::fprintf(stderr, "[%6.1f s] %s\n", now_s(), text.c_str());
  std::fflush(stderr);
}

}  // namespace ember::bench
