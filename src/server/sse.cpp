#include "server/sse.h"

namespace ember::server {

std::string to_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_data(const json& payload) { return "data: " + to_text(payload) + "\n\n"; }

std::string sse_event(std::string_view name, const json& payload) {
  return "event: " + std::string(name) + "\ndata: " + to_text(payload) + "\n\n";
}

}  // namespace ember::server
