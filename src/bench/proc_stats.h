// What the client cannot see of a server, read from Linux's /proc (for a
// server on this machine) or from its Prometheus /metrics text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace ember::bench {

// utime + stime of the whole process (all threads, dead ones included), seconds; nullopt when unreadable.
std::optional<double> process_cpu_seconds(pid_t pid);
// VmRSS / VmHWM (peak RSS since start or the last reset) in bytes; nullopt when unreadable.
std::optional<uint64_t> process_rss(pid_t pid);
std::optional<uint64_t> process_peak_rss(pid_t pid);
// Resets VmHWM to the current RSS (writes 5 to /proc/PID/clear_refs); false when not allowed.
bool reset_peak_rss(pid_t pid);

// The process that listens on this TCP port of the loopback (or any) address:
// /proc/net/tcp{,6} give the socket's inode, /proc/*/fd the owner. -1 when
// not found (another user's process, another network namespace).
pid_t pid_listening_on(int port);

// The value of an unlabelled sample `name` in Prometheus text; nullopt when absent.
std::optional<double> prometheus_value(const std::string& text, const std::string& name);

// The port of "http://host:port/...", or -1 (the default 80 when none is written).
int url_port(const std::string& url);
// True for localhost, 127.x.x.x and [::1].
bool url_is_loopback(const std::string& url);

// This machine in words: CPU model, logical cores, memory.
std::string cpu_model();
int cpu_count();
uint64_t memory_bytes();

}  // namespace ember::bench
