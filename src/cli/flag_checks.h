// CLI11 validators built on engine/sampling_validation.h: a flag outside its
// range (NaN included, which CLI::Range lets through) is refused while the
// command line is parsed, with the allowed range in the message.
//
//   cmd->add_option("--temp", o.sp.temperature)->check(real_in("temperature", 0, INFINITY));
//   cmd->add_option("--top-p", o.sp.top_p)->check(real_in("top-p", 0, 1, /*lo_open=*/true));
//   cmd->add_option("--top-k", o.sp.top_k)->check(integer_in("top-k", 0, INT32_MAX));
//   cmd->add_option("--threads", o.threads)->check(integer_in("threads", 0, max_threads()));
#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace ember::cli {

CLI::Validator real_in(std::string name, double lo, double hi, bool lo_open = false, bool hi_open = false);
CLI::Validator integer_in(std::string name, int64_t lo, int64_t hi);

}  // namespace ember::cli
