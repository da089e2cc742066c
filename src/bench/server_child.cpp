#include "bench/server_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "bench/sse_client.h"
#include "util/error.h"

namespace ember::bench {

std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote) throw Error("bench: unbalanced quote in --serve-args");
  if (in_word) out.push_back(cur);
  return out;
}

ServerChild::ServerChild(std::vector<std::string> args, const std::string& log_path, const std::string& program)
    : log_(log_path) {
  args.insert(args.begin(), {"ember", "serve"});
  args.insert(args.end(), {"--port", "0"});
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw Error("bench: cannot start the server");
  if (pid_ == 0) {
    // The server goes when the bench goes, however it goes (a timeout's SIGKILL included):
    // a server left behind would hold the port's GPU memory for the next run.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the bench died before the line above took effect
    const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
}

ServerChild::~ServerChild() { stop(); }

std::string ServerChild::log_tail() const {
  std::ifstream f(log_);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

void ServerChild::wait_ready(double timeout_s) {
  const std::regex listening("listening on (http://127\\.0\\.0\\.1:[0-9]+)");
  const double t0 = now_s();
  while (now_s() - t0 < timeout_s) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw Error("bench: the server exited while starting; its log (" + log_ + ") ends:\n" + log_tail());
    }
    if (url_.empty()) {
      std::ifstream f(log_);
      const std::string text((std::istreambuf_iterator<char>(f)), {});
      std::smatch m;
      if (std::regex_search(text, m, listening)) url_ = m[1];
    } else if (http_get({url_, "", ""}, "/health", 5)) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Error("bench: the server was not ready after " + std::to_string(int(timeout_s)) + " s; its log: " + log_);
}

int ServerChild::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 3000; ++i) {  // 30 s
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (r < 0) {  // already reaped elsewhere: its pid may belong to another process now
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

}  // namespace ember::bench
