#include "server/server_context.h"

#include <algorithm>

namespace ember::server {

bool ServerContext::admit() {
  const int limit = parallel + opt.max_waiting;
  int n = live_.load();
  while (n < limit)
    if (live_.compare_exchange_weak(n, n + 1)) return true;
  return false;
}

void ServerContext::leave() { live_.fetch_sub(1); }

void ServerContext::track(const std::shared_ptr<RequestStream>& s) {
  std::lock_guard lk(mu_);
  std::erase_if(streams_, [](const std::weak_ptr<RequestStream>& w) { return w.expired(); });
  streams_.push_back(s);
}

void ServerContext::cancel_all() {
  std::lock_guard lk(mu_);
  for (auto& w : streams_)
    if (auto s = w.lock()) s->cancel();
}

}  // namespace ember::server
