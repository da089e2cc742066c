// The charts of --plot DIR, from a finished (or partly finished) suite:
//   s2_aggregate_tps.svg  aggregate tok/s vs clients
//   s2_slowest.svg        slowest request's completion time vs clients
//   s3_prefill.svg        cold prefill seconds vs prompt length
//   s5_sessions.svg       prefill seconds of each request over A -> A -> B -> A, round by round
//   s8_decode.svg         decode tok/s vs context, with the roofline
// One line per server; a chart whose scenario did not run is not written.
#pragma once
#include <string>
#include <vector>

#include "bench/scenarios.h"

namespace ember::bench {

// Returns the files written.
std::vector<std::string> write_plots(const Suite& suite, const std::string& dir);

}  // namespace ember::bench
