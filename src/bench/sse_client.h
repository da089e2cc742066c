// The bench's HTTP side: one streamed OpenAI completion, timed the way a
// client sees it, and plain GETs (/v1/models, /metrics, /health).
//
// A completion is sent to /v1/completions with the prompt as token ids (so its
// length is exact whatever the server's tokenizer would make of text), greedy,
// `stream: true` with `stream_options.include_usage` (prompt, cached and
// generated token counts) and `ignore_eos` (honoured by servers that know it).
// Every SSE event that carries text is stamped on arrival: the first one is
// the time to first token, the gaps between them the inter-token times. A
// server may send two tokens in one event (a character split over tokens is
// held back until complete), so rates use the token count from `usage`:
// decode tok/s = (generated - 1) / (last text event - first text event).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::bench {

// Seconds on a steady clock since the process started measuring.
double now_s();

struct Endpoint {
  std::string url;      // http://host:port (a trailing /v1 is dropped)
  std::string api_key;  // sent as a bearer token when set
  std::string model;    // the "model" field of requests
};

// Normalises a base URL: no trailing '/', no trailing "/v1".
std::string base_url(const std::string& url);

struct CompletionRequest {
  std::vector<int32_t> prompt;
  int max_tokens = 16;
};

struct StreamResult {
  int status = 0;     // HTTP status (0: no response)
  std::string error;  // empty on success
  double start = 0;   // now_s() when the request was sent
  std::vector<double> text_times;  // seconds after start, one per event with text
  double end = 0;     // seconds after start: [DONE] or the end of the body
  int64_t prompt_tokens = -1, cached_tokens = -1, completion_tokens = -1;  // from usage; -1: not sent
  std::string finish_reason;
  std::string text;  // the answer, concatenated (S9 compares answers)

  bool ok() const { return error.empty(); }
  double ttft() const { return text_times.empty() ? -1 : text_times.front(); }
  // Tokens generated: usage, else the number of text events.
  int64_t generated() const { return completion_tokens >= 0 ? completion_tokens : int64_t(text_times.size()); }
  double decode_seconds() const { return text_times.size() < 2 ? 0 : text_times.back() - text_times.front(); }
  double decode_tps() const;             // (generated - 1) / decode_seconds; 0 when unknown
  std::vector<double> inter_token() const;  // gaps between text events
};

// Streams one completion. `on_first_text` runs on the calling thread when the
// first text arrives (the CPU sampler of S6 reads /proc there).
StreamResult stream_completion(const Endpoint& ep, const CompletionRequest& req,
                               const std::function<void()>& on_first_text = {}, int timeout_s = 3600);

// One event's bytes ("data: {...}" lines) into the result; false at [DONE].
// Exposed for the tests.
bool parse_sse_event(const std::string& event, double at, StreamResult& r);

// GET url+path; nullopt when there is no answer or the status is not 200.
std::optional<std::string> http_get(const Endpoint& ep, const std::string& path, int timeout_s = 10);

}  // namespace ember::bench
