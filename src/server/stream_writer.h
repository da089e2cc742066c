// Writing one Server-Sent Events reply to a client: remembers when it last
// wrote, and while the engine is quiet writes a keep-alive so a client that
// has gone is noticed (a write to a closed connection fails) and its
// generation cancelled within a second or two, even before its first token.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <string_view>

namespace ember::server {

class StreamWriter {
 public:
  using Sink = std::function<bool(std::string_view)>;  // false: the client is gone
  StreamWriter(Sink sink, std::string_view keep_alive, const std::atomic<bool>& stopping)
      : sink_(std::move(sink)), keep_alive_(keep_alive), stopping_(stopping) {}
  bool write(std::string_view bytes);
  // For Generation::next while nothing arrives: false once the client is gone or the server stops.
  bool still_wanted();
  bool client_gone() const { return gone_; }

 private:
  Sink sink_;
  std::string_view keep_alive_;
  const std::atomic<bool>& stopping_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
  bool gone_ = false;
};

}  // namespace ember::server
