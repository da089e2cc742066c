// Errors: every failure ember reports to a user is an ember::Error with a message
// that names what went wrong and where (file, field, byte offset, ...).
#pragma once
#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace ember
