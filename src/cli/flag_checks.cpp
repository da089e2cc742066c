#include "cli/flag_checks.h"

#include <cerrno>
#include <cstdlib>

#include "engine/sampling_validation.h"
#include "util/error.h"

namespace ember::cli {

CLI::Validator real_in(std::string name, double lo, double hi, bool lo_open, bool hi_open) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return name + ": '" + text + "' is not a number";
        try {
          check_real(name, v, lo, hi, lo_open, hi_open);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      "", name);
}

CLI::Validator integer_in(std::string name, int64_t lo, int64_t hi) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || end != text.c_str() + text.size()) return name + ": '" + text + "' is not an integer";
        if (errno == ERANGE) return name + ": '" + text + "' does not fit a 64-bit integer";
        try {
          check_integer(name, v, lo, hi);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      "", name);
}

}  // namespace ember::cli
