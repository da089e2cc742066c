#include "util/process_cpu.h"

#include <sys/resource.h>

namespace ember {

double own_process_cpu_seconds() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;  // cannot fail for RUSAGE_SELF; a reading, never a crash
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace ember
