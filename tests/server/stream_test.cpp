// The streaming pieces: reasoning split over any chunking, SSE framing, the
// Anthropic event order, API keys and the metrics text.
#include <gtest/gtest.h>

#include "server/anthropic_api.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/reasoning_split.h"
#include "server/sse.h"

using namespace ember;
using namespace ember::server;

TEST(ReasoningSplit, AnyChunkingGivesTheWholeAnswersSplit) {
  const std::string text = "  <think>\nweigh it</think>\n\nThe answer </think> stays";
  const SplitText whole = split_reasoning(text);
  EXPECT_EQ(whole.reasoning, "\nweigh it");
  EXPECT_EQ(whole.content, "The answer </think> stays");
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); b += 3) {
      ReasoningSplitter s;
      SplitText got;
      for (const std::string& piece : {text.substr(0, a), text.substr(a, b - a), text.substr(b)}) {
        const SplitText p = s.push(piece);
        got.reasoning += p.reasoning;
        got.content += p.content;
      }
      const SplitText rest = s.finish();
      EXPECT_EQ(got.reasoning + rest.reasoning, whole.reasoning) << a << " " << b;
      EXPECT_EQ(got.content + rest.content, whole.content) << a << " " << b;
    }
  }
}

TEST(ReasoningSplit, TextWithoutALeadingThinkTagIsAllAnswer) {
  EXPECT_EQ(split_reasoning("Hi <think>x</think>").content, "Hi <think>x</think>");
  EXPECT_EQ(split_reasoning("<thi").content, "<thi");
  EXPECT_EQ(split_reasoning("<think>unfinished").reasoning, "unfinished");
}

TEST(Sse, FramesAreOneDataLineAndABlankLine) {
  EXPECT_EQ(sse_data(json{{"a", "x\ny"}}), "data: {\"a\":\"x\\ny\"}\n\n");
  EXPECT_EQ(sse_event("ping", json{{"type", "ping"}}), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
  EXPECT_EQ(to_text(json("\xff")), "\"\xef\xbf\xbd\"");  // invalid UTF-8 replaced, never thrown
}

TEST(AnthropicStreamEvents, FollowTheDocumentedOrder) {
  AnthropicStream s("msg_1", "tiny");
  std::vector<std::string> names;
  auto take = [&](const std::vector<AnthropicStream::Event>& ev) {
    for (const auto& e : ev) {
      names.push_back(e.first);
      EXPECT_EQ(e.second["type"], e.first);
    }
  };
  take(s.start(12));
  take(s.text({"plan", ""}));
  take(s.text({"more", "Hel"}));
  take(s.text({"", "lo"}));
  Completion c;
  c.reason = FinishReason::Stop;
  c.tokens = {1, 2};
  c.prompt_tokens = 12;
  const auto end = s.finish(c, "");
  take(end);
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                             "content_block_delta", "content_block_stop", "content_block_start",
                                             "content_block_delta", "content_block_delta", "content_block_stop",
                                             "message_delta", "message_stop"}));
  EXPECT_EQ(end[1].second["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(end[1].second["usage"]["output_tokens"], 2);
}

TEST(AnthropicStreamEvents, AnEmptyAnswerStillHasATextBlock) {
  AnthropicStream s("msg_2", "tiny");
  Completion c;
  c.reason = FinishReason::Length;
  const auto end = s.finish(c, "");
  ASSERT_EQ(end.size(), 4u);
  EXPECT_EQ(end[0].second["content_block"]["type"], "text");
  EXPECT_EQ(end[2].second["delta"]["stop_reason"], "max_tokens");
}

TEST(Auth, KeysComparedWholeFromEitherHeader) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret2"));
  EXPECT_FALSE(constant_time_equal("", "x"));
  EXPECT_TRUE(key_accepted("", "", ""));  // no key configured
  EXPECT_TRUE(key_accepted("k1", "Bearer k1", ""));
  EXPECT_TRUE(key_accepted("k1", "", "k1"));
  EXPECT_FALSE(key_accepted("k1", "k1", ""));  // the Bearer scheme is required
  EXPECT_FALSE(key_accepted("k1", "Bearer k2", "k3"));
  EXPECT_FALSE(key_accepted("k1", "", ""));
}

TEST(MetricsText, HasCountersHistogramsAndEngineGauges) {
  Metrics m;
  m.count_request("/v1/messages", 200);
  m.count_request("/v1/messages", 200);
  m.count_request("/v1/messages", 400);
  m.count_tokens(10, 4, 7);
  m.observe_first_token(0.02);
  m.observe_first_token(3);
  EngineStats e;
  e.blocks_total = 100;
  e.blocks_free = 90;
  const std::string text = m.render(e);
  EXPECT_NE(text.find("ember_requests_total{route=\"/v1/messages\",status=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("ember_requests_total{route=\"/v1/messages\",status=\"400\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ember_cached_prompt_tokens_total 4\n"), std::string::npos);
  EXPECT_NE(text.find("ember_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ember_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("ember_kv_blocks_used 10\n"), std::string::npos);
  EXPECT_EQ(text.find("ember_kv_blocks_cached"), std::string::npos);  // requests live: not counted
  e.blocks_cached = 10;
  EXPECT_NE(m.render(e).find("ember_kv_blocks_cached 10\n"), std::string::npos);
  // The process's own figures: some CPU time spent, and resident memory of at least a megabyte.
  auto value = [&](const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
  };
  EXPECT_GT(value("process_cpu_seconds_total"), 0.0);
  EXPECT_GT(value("process_resident_memory_bytes"), 1e6);
  // The engine's step thread: absent where the engine could not say, else its seconds.
  EXPECT_EQ(text.find("ember_engine_thread_cpu_seconds_total"), std::string::npos);
  e.step_thread_cpu_seconds = 0.25;
  EXPECT_NE(m.render(e).find("ember_engine_thread_cpu_seconds_total 0.25"), std::string::npos);
}
