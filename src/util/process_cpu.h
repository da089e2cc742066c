// CPU time of this process, read from the kernel: what the server's /metrics,
// the engine benchmark and the idle-CPU tests report as the process's cost.
// (Another process's figures come from /proc: bench/proc_stats.h.)
#pragma once

namespace ember {

// User plus system CPU time of every thread of this process so far (ended
// threads included), in seconds.
double own_process_cpu_seconds();

}  // namespace ember
