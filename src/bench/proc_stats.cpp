#include "bench/proc_stats.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace ember::bench {

namespace {

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<uint64_t> status_kb(pid_t pid, const std::string& key) {
  const auto text = slurp("/proc/" + std::to_string(pid) + "/status");
  if (!text) return std::nullopt;
  const size_t at = text->find("\n" + key + ":");
  if (at == std::string::npos) return std::nullopt;
  return uint64_t(std::strtoull(text->c_str() + at + key.size() + 2, nullptr, 10)) * 1024;
}

}  // namespace

std::optional<double> process_cpu_seconds(pid_t pid) {
  const auto text = slurp("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
  const size_t close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream ss(text->substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && ss >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

std::optional<uint64_t> process_rss(pid_t pid) { return status_kb(pid, "VmRSS"); }
std::optional<uint64_t> process_peak_rss(pid_t pid) { return status_kb(pid, "VmHWM"); }

bool reset_peak_rss(pid_t pid) {
  std::ofstream f("/proc/" + std::to_string(pid) + "/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return bool(f);
}

pid_t pid_listening_on(int port) {
  if (port <= 0) return -1;
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream f(table);
    std::string line;
    std::getline(f, line);  // header
    while (std::getline(f, line)) {
      std::istringstream ss(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      if (!(ss >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode)) continue;
      if (state != "0A") continue;  // LISTEN
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos || std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
      inodes.insert("socket:[" + inode + "]");
    }
  }
  if (inodes.empty()) return -1;
  DIR* proc = opendir("/proc");
  if (!proc) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string fd_dir = "/proc/" + std::string(e->d_name) + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (!fds) continue;
    while (dirent* fe = readdir(fds)) {
      char target[128];
      const ssize_t n = readlink((fd_dir + "/" + fe->d_name).c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = 0;
      if (inodes.count(target)) {
        found = pid;
        break;
      }
    }
    closedir(fds);
    if (found > 0) break;
  }
  closedir(proc);
  return found;
}

std::optional<double> prometheus_value(const std::string& text, const std::string& name) {
  std::istringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, name.size(), name) != 0) continue;
    if (line.size() <= name.size() || line[name.size()] != ' ') continue;  // a longer name, or labels
    try {
      return std::stod(line.substr(name.size() + 1));
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

namespace {

// "http://host:port/path" -> host and port (-1 when none written).
void split_url(const std::string& url, std::string& host, int& port) {
  std::string rest = url;
  if (const size_t s = rest.find("://"); s != std::string::npos) rest = rest.substr(s + 3);
  rest = rest.substr(0, rest.find('/'));
  port = -1;
  if (!rest.empty() && rest[0] == '[') {  // [v6]:port
    const size_t close = rest.find(']');
    host = rest.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < rest.size() && rest[close + 1] == ':') port = std::atoi(rest.c_str() + close + 2);
    return;
  }
  const size_t colon = rest.rfind(':');
  host = rest.substr(0, colon);
  if (colon != std::string::npos) port = std::atoi(rest.c_str() + colon + 1);
}

}  // namespace

int url_port(const std::string& url) {
  std::string host;
  int port;
  split_url(url, host, port);
  if (port < 0) port = url.rfind("https://", 0) == 0 ? 443 : 80;
  return port;
}

bool url_is_loopback(const std::string& url) {
  std::string host;
  int port;
  split_url(url, host, port);
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string cpu_model() {
  const auto text = slurp("/proc/cpuinfo");
  if (text) {
    const size_t at = text->find("model name");
    if (at != std::string::npos) {
      const size_t colon = text->find(':', at);
      const size_t eol = text->find('\n', at);
      if (colon != std::string::npos && colon < eol) return text->substr(colon + 2, eol - colon - 2);
    }
  }
  return "unknown CPU";
}

int cpu_count() { return int(std::thread::hardware_concurrency()); }

uint64_t memory_bytes() { return uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE)); }

}  // namespace ember::bench
