// An `ember serve` child on a free loopback port: started with the same
// binary (/proc/self/exe), its log in a file, ready when /health answers 200;
// stopped with SIGTERM (SIGKILL after 30 s) when this object goes.
#pragma once
#include <string>
#include <sys/types.h>
#include <vector>

namespace ember::bench {

class ServerChild {
 public:
  // args: what follows `ember serve` (the port is added: --port 0). program:
  // the ember binary (default: this process's own).
  ServerChild(std::vector<std::string> args, const std::string& log_path, const std::string& program = "/proc/self/exe");
  ~ServerChild();
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;

  // Waits until the server answers /health with 200; throws ember::Error
  // (quoting the end of its log) if it exits first.
  void wait_ready(double timeout_s = 3600);
  const std::string& url() const { return url_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_; }
  // SIGTERM and wait; returns the exit status (-1: killed or not ours).
  int stop();

 private:
  std::string log_tail() const;
  pid_t pid_ = -1;
  std::string log_, url_;
};

// "--a 1  --b 'x y'" -> {"--a", "1", "--b", "x y"}: whitespace-separated words, '…' or "…" quoting.
std::vector<std::string> split_args(const std::string& s);

}  // namespace ember::bench
