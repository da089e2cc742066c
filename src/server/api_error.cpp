#include "server/api_error.h"

namespace ember::server {

namespace {

// The error types each API documents for a status code.
const char* openai_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

const char* anthropic_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

nlohmann::json openai_error_body(int status, const std::string& message, const std::string& param) {
  nlohmann::json code = status == 401 ? nlohmann::json("invalid_api_key") : nlohmann::json();
  return {{"error",
           {{"message", message},
            {"type", openai_type(status)},
            {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
            {"code", code}}}};
}

nlohmann::json anthropic_error_body(int status, const std::string& message) {
  return {{"type", "error"}, {"error", {{"type", anthropic_type(status)}, {"message", message}}}};
}

}  // namespace ember::server
