#include "server/stream_writer.h"

namespace ember::server {

bool StreamWriter::write(std::string_view bytes) {
  if (gone_) return false;
  if (!sink_(bytes)) {
    gone_ = true;
    return false;
  }
  last_write_ = std::chrono::steady_clock::now();
  return true;
}

bool StreamWriter::still_wanted() {
  if (gone_ || stopping_.load()) return false;
  if (std::chrono::steady_clock::now() - last_write_ > std::chrono::seconds(1)) return write(keep_alive_);
  return true;
}

}  // namespace ember::server
