// Tool calls: the parsers of each model format over any chunking of the
// answer, tool_choice and response_format turned into constraints (or
// refused), and calls in both APIs' responses and stream events.
#include <gtest/gtest.h>

#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/openai_api.h"
#include "server_test_util.h"

using namespace ember;
using namespace ember::server;
using ember::server::test::qwen3_model;

namespace {

// The answer fed in two pieces cut at `cut`, as a stream would.
ToolCallPiece in_two(ToolCallFormat f, const std::string& text, size_t cut) {
  ToolCallParser p(f);
  ToolCallPiece a = p.take(std::string_view(text).substr(0, cut), false);
  ToolCallPiece b = p.take(std::string_view(text).substr(cut), true);
  a.text += b.text;
  for (ToolCall& c : b.calls) a.calls.push_back(std::move(c));
  return a;
}

const char* kWeatherTool = R"([{"type": "function", "function": {"name": "weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}}])";

int status_of(const std::function<void()>& f) {
  try {
    f();
    return 0;
  } catch (const ApiError& e) {
    return e.status();
  }
}

}  // namespace

TEST(ToolCallParser, TaggedCallsComeOutOfAnyChunking) {
  const std::string answer =
      "Let me check.<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
      "<tool_call>\n{\"name\": \"time\", \"arguments\": {}}\n</tool_call>";
  for (size_t cut = 0; cut <= answer.size(); ++cut) {
    const ToolCallPiece p = in_two(ToolCallFormat::Tagged, answer, cut);
    EXPECT_EQ(p.text, "Let me check.") << cut;
    ASSERT_EQ(p.calls.size(), 2u) << cut;
    EXPECT_EQ(p.calls[0].name, "weather");
    EXPECT_EQ(json::parse(p.calls[0].arguments), json::parse(R"({"city": "Oslo"})"));
    EXPECT_EQ(p.calls[1].name, "time");
    EXPECT_NE(p.calls[0].id, p.calls[1].id);
  }
}

TEST(ToolCallParser, TextThatIsNotACallStaysText) {
  for (const char* text : {"a < b and <tool_ is not a tag", "<tool_call>not json</tool_call> after",
                           "<tool_call>{\"arguments\": {}}</tool_call>", "ends with <tool_c"}) {
    const ToolCallPiece p = parse_tool_calls(ToolCallFormat::Tagged, text);
    EXPECT_EQ(p.text, text);
    EXPECT_TRUE(p.calls.empty()) << text;
  }
  ToolCallParser p(ToolCallFormat::Tagged);
  EXPECT_EQ(p.push("Hello <tool").text, "Hello ") << "a possible tag is held back";
  EXPECT_EQ(p.finish().text, "<tool");
  const ToolCallPiece cut_short = parse_tool_calls(ToolCallFormat::Tagged, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}");
  EXPECT_EQ(cut_short.calls.size(), 1u) << "a whole call without its closing tag still counts";
}

TEST(ToolCallParser, Llama3JsonAnswers) {
  const std::string call = "{\"name\": \"weather\", \"parameters\": {\"city\": \"Oslo\"}}";
  for (size_t cut = 0; cut <= call.size(); ++cut) {
    const ToolCallPiece p = in_two(ToolCallFormat::Llama3Json, call, cut);
    ASSERT_EQ(p.calls.size(), 1u) << cut;
    EXPECT_EQ(json::parse(p.calls[0].arguments)["city"], "Oslo");
    EXPECT_EQ(p.text, "");
  }
  const ToolCallPiece two = parse_tool_calls(ToolCallFormat::Llama3Json, call + "; {\"name\": \"time\", \"parameters\": {}}");
  EXPECT_EQ(two.calls.size(), 2u);
  ToolCallParser prose(ToolCallFormat::Llama3Json);
  EXPECT_EQ(prose.push("Hello").text, "Hello") << "prose streams at once";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::Llama3Json, "{\"x\": 1}").text, "{\"x\": 1}");
}

TEST(ToolCallParser, FormatComesFromTheTemplate) {
  EXPECT_EQ(tool_call_format(qwen3_model().tok->chat_template()), ToolCallFormat::Tagged);
  EXPECT_EQ(tool_call_format("{{ '<|python_tag|>' }}"), ToolCallFormat::Llama3Json);
  EXPECT_EQ(tool_call_format("{{ messages }}"), ToolCallFormat::None);
}

TEST(ToolChoice, RequiredOrNamedCallsAreConstrainedOthersNot) {
  auto chat = [](const std::string& extra) {
    return parse_chat_completion(parse_json_object(R"({"messages": [{"role": "user", "content": "Weather?"}], "tools": )" +
                                                   std::string(kWeatherTool) + extra + "}"),
                                 qwen3_model());
  };
  EXPECT_FALSE(chat("").gen.constraint);
  EXPECT_EQ(chat("").tool_format, ToolCallFormat::Tagged);
  EXPECT_TRUE(chat(R"(, "tool_choice": "required")").gen.constraint);
  EXPECT_TRUE(chat(R"(, "tool_choice": {"type": "function", "function": {"name": "weather"}})").gen.constraint);
  EXPECT_EQ(chat(R"(, "tool_choice": "none")").tool_format, ToolCallFormat::None);
  EXPECT_EQ(status_of([&] { chat(R"(, "tool_choice": {"type": "function", "function": {"name": "other"}})"); }), 400);
  EXPECT_EQ(status_of([&] { chat(R"(, "tool_choice": "sometimes")"); }), 400);
  EXPECT_EQ(status_of([&] { chat(R"(, "tool_choice": "required", "response_format": {"type": "json_object"})"); }), 400);
  EXPECT_EQ(status_of([&] {
              parse_chat_completion(parse_json_object(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})"),
                                    qwen3_model());
            }),
            400);
  // A tool without a named function is refused (the load test sends one), not skipped.
  for (const char* tools : {R"([{"type": "function"}])", R"([{"type": "function", "function": {}}])",
                            R"([{"type": "function", "function": {"name": 3}}])"})
    EXPECT_EQ(status_of([&] {
                parse_chat_completion(parse_json_object(std::string(R"({"messages": [{"role": "user", "content": "x"}], "tools": )") +
                                                        tools + "}"),
                                      qwen3_model());
              }),
              400)
        << tools;
  // A tool whose parameters refer to their own $defs: the refs still resolve inside the call's grammar.
  const OpenAiCall with_refs = parse_chat_completion(parse_json_object(R"({"messages": [{"role": "user", "content": "x"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "$defs": {"unit": {"enum": ["C", "F"]}}, "properties": {"u": {"$ref": "#/$defs/unit"}}, "required": ["u"]}}}],
    "tool_choice": "required"})"), qwen3_model());
  EXPECT_TRUE(with_refs.gen.constraint);
  const AnthropicCall a = parse_messages(parse_json_object(R"({"model": "tiny", "max_tokens": 8,
    "messages": [{"role": "user", "content": "Weather?"}],
    "tools": [{"name": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "tool_choice": {"type": "tool", "name": "weather"}})"), qwen3_model());
  EXPECT_TRUE(a.gen.constraint);
  EXPECT_EQ(a.tool_format, ToolCallFormat::Tagged);
}

TEST(ResponseFormat, SchemasBecomeConstraintsOrAreRefused) {
  auto with = [](const std::string& format) {
    return parse_chat_completion(
        parse_json_object(R"({"messages": [{"role": "user", "content": "x"}], "response_format": )" + format + "}"), qwen3_model());
  };
  EXPECT_FALSE(with(R"({"type": "text"})").gen.constraint);
  EXPECT_TRUE(with(R"({"type": "json_object"})").gen.constraint);
  EXPECT_TRUE(with(R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}})").gen.constraint);
  for (const char* bad : {R"({"type": "yaml"})", R"("json")", R"({"type": "json_schema"})",
                          R"({"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "a+"}}})"})
    EXPECT_EQ(status_of([&] { with(bad); }), 400) << bad;
  // oneOf: accepted when its branches cannot overlap, else a 400 that names oneOf.
  EXPECT_TRUE(with(R"({"type": "json_schema", "json_schema": {"schema": {"oneOf": [{"type": "string"}, {"type": "null"}]}}})")
                  .gen.constraint);
  try {
    with(R"({"type": "json_schema", "json_schema": {"schema": {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]}}})");
    FAIL() << "an overlapping oneOf was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("oneOf branches 0 and 1"), std::string::npos) << e.what();
  }
}

TEST(ToolCallResponses, OpenAiMessageAndAnthropicBlocks) {
  Completion c;
  c.text = "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  c.tokens = {1, 2};
  c.reason = FinishReason::Stop;
  OpenAiCall call;
  call.tool_format = ToolCallFormat::Tagged;
  const json o = openai_response(call, {c}, qwen3_model(), "id", 1);
  const json& msg = o["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null());
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>())["city"], "Oslo");
  EXPECT_EQ(o["choices"][0]["finish_reason"], "tool_calls");
  const json a = anthropic_response(c, "", qwen3_model(), "msg", ToolCallFormat::Tagged);
  ASSERT_EQ(a["content"].size(), 1u);
  EXPECT_EQ(a["content"][0]["type"], "tool_use");
  EXPECT_EQ(a["content"][0]["input"]["city"], "Oslo");
  EXPECT_TRUE(a["content"][0]["id"].get<std::string>().starts_with("toolu_"));
  EXPECT_EQ(a["stop_reason"], "tool_use");

  AnthropicStream s("msg", "tiny");
  std::vector<AnthropicStream::Event> events = s.text({"", "Checking."});
  for (auto& e : s.tool_use(ToolCall{"toolu_1", "weather", R"({"city":"Oslo"})"})) events.push_back(e);
  for (auto& e : s.finish(c, "", true)) events.push_back(e);
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.first);
  EXPECT_EQ(names, (std::vector<std::string>{"content_block_start", "content_block_delta", "content_block_stop",
                                             "content_block_start", "content_block_delta", "content_block_stop",
                                             "message_delta", "message_stop"}));
  EXPECT_EQ(events[3].second["content_block"]["type"], "tool_use");
  EXPECT_EQ(events[4].second["delta"]["type"], "input_json_delta");
  EXPECT_EQ(json::parse(events[4].second["delta"]["partial_json"].get<std::string>())["city"], "Oslo");
  EXPECT_EQ(events[6].second["delta"]["stop_reason"], "tool_use");
}
