#include "bench/sse_client.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace ember::bench {

using json = nlohmann::json;

double now_s() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string base_url(const std::string& url) {
  std::string u = url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.size() >= 3 && u.compare(u.size() - 3, 3, "/v1") == 0) u.resize(u.size() - 3);
  return u;
}

double StreamResult::decode_tps() const {
  const double s = decode_seconds();
  const int64_t n = generated();
  return s > 0 && n >= 2 ? double(n - 1) / s : 0;
}

std::vector<double> StreamResult::inter_token() const {
  std::vector<double> gaps;
  for (size_t i = 1; i < text_times.size(); ++i) gaps.push_back(text_times[i] - text_times[i - 1]);
  return gaps;
}

bool parse_sse_event(const std::string& event, double at, StreamResult& r) {
  size_t pos = 0;
  std::string data;
  while (pos < event.size()) {
    size_t eol = event.find('\n', pos);
    if (eol == std::string::npos) eol = event.size();
    std::string line = event.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data:", 0) != 0) continue;  // comments (keep-alives), event names
    std::string payload = line.substr(5);
    if (!payload.empty() && payload[0] == ' ') payload.erase(0, 1);
    data += payload;
  }
  if (data.empty()) return true;
  if (data == "[DONE]") return false;
  const json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return true;
  if (j.contains("error")) {
    const json& e = j["error"];
    r.error = e.is_object() && e.contains("message") ? e["message"].dump() : e.dump();
    return false;
  }
  if (auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    const json& ch = (*c)[0];
    std::string text;
    if (auto t = ch.find("text"); t != ch.end() && t->is_string()) text = t->get<std::string>();
    if (auto d = ch.find("delta"); d != ch.end() && d->is_object()) {
      for (const char* k : {"content", "reasoning_content"})
        if (auto t = d->find(k); t != d->end() && t->is_string()) text += t->get<std::string>();
    }
    if (!text.empty()) r.text_times.push_back(at - r.start);
    r.text += text;
    if (auto f = ch.find("finish_reason"); f != ch.end() && f->is_string()) r.finish_reason = f->get<std::string>();
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    r.prompt_tokens = u->value("prompt_tokens", int64_t(-1));
    r.completion_tokens = u->value("completion_tokens", int64_t(-1));
    r.cached_tokens = 0;
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      if (auto c = d->find("cached_tokens"); c != d->end() && c->is_number_integer()) r.cached_tokens = c->get<int64_t>();
  }
  return true;
}

namespace {

httplib::Client client(const Endpoint& ep, int timeout_s) {
  httplib::Client c(base_url(ep.url));
  c.set_connection_timeout(10);
  c.set_read_timeout(timeout_s);
  c.set_write_timeout(60);
  if (!ep.api_key.empty()) c.set_bearer_token_auth(ep.api_key);
  return c;
}

}  // namespace

StreamResult stream_completion(const Endpoint& ep, const CompletionRequest& req, const std::function<void()>& on_first_text,
                               int timeout_s) {
  json body = {{"prompt", req.prompt},
               {"max_tokens", req.max_tokens},
               {"temperature", 0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"ignore_eos", true}};
  if (!ep.model.empty()) body["model"] = ep.model;
  httplib::Client c = client(ep, timeout_s);
  StreamResult r;
  std::string buffer, raw;  // raw: the start of a body that was not a stream (an error)
  bool done = false, first = true;
  httplib::Request hr;
  hr.method = "POST";
  hr.path = "/v1/completions";
  hr.headers = {{"Accept", "text/event-stream"}};
  hr.body = body.dump();
  hr.set_header("Content-Type", "application/json");
  hr.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const double at = now_s();
    if (raw.size() < 4096) raw.append(data, std::min(n, 4096 - raw.size()));
    buffer.append(data, n);
    // An event is a few hundred bytes; a server that never ends one is not streaming.
    if (buffer.size() > (1u << 20)) {
      r.error = "an SSE event of over 1 MB without its end: not an event stream";
      buffer.clear();
      return false;
    }
    for (;;) {
      size_t cut = buffer.find("\n\n");
      size_t sep = 2;
      if (const size_t crlf = buffer.find("\r\n\r\n"); crlf != std::string::npos && (cut == std::string::npos || crlf < cut)) {
        cut = crlf;
        sep = 4;
      }
      if (cut == std::string::npos) break;
      const std::string event = buffer.substr(0, cut);
      buffer.erase(0, cut + sep);
      const size_t before = r.text_times.size();
      if (!done && !parse_sse_event(event, at, r)) done = true;
      if (first && r.text_times.size() > before) {
        first = false;
        if (on_first_text) on_first_text();
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  r.start = now_s();
  const bool sent = c.send(hr, res, err);
  r.end = now_s() - r.start;
  if (!buffer.empty() && !done) parse_sse_event(buffer, r.start + r.end, r);
  r.status = sent ? res.status : 0;
  if (!sent) {
    if (r.error.empty()) r.error = "no answer from " + ep.url + ": " + httplib::to_string(err);
  } else if (res.status != 200) {
    const json j = json::parse(raw, nullptr, false);
    std::string msg = raw;
    if (j.is_object() && j.contains("error")) {
      const json& e = j["error"];
      msg = e.is_object() && e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : e.dump();
    }
    r.error = "HTTP " + std::to_string(res.status) + ": " + msg;
  } else if (r.error.empty() && r.text_times.empty() && r.generated() != 0) {
    r.error = "the stream carried no text";
  }
  return r;
}

std::optional<std::string> http_get(const Endpoint& ep, const std::string& path, int timeout_s) {
  httplib::Client c = client(ep, timeout_s);
  auto res = c.Get(path.c_str());
  if (!res || res->status != 200) return std::nullopt;
  return res->body;
}

}  // namespace ember::bench
