// A request the server refuses, with the HTTP status and each API's own JSON
// error shape. Request parsing throws ApiError; the routes turn it into the
// reply the client's SDK expects (OpenAI or Anthropic).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "util/error.h"

namespace ember::server {

class ApiError : public Error {
 public:
  ApiError(int status, const std::string& message, std::string param = {})
      : Error(message), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }  // the request field at fault, when one is

 private:
  int status_;
  std::string param_;
};

// {"error": {"message", "type", "param", "code"}}
nlohmann::json openai_error_body(int status, const std::string& message, const std::string& param = {});
// {"type": "error", "error": {"type", "message"}}
nlohmann::json anthropic_error_body(int status, const std::string& message);

}  // namespace ember::server
