// Request translation without sockets: OpenAI and Anthropic bodies to engine
// requests (prompt ids equal to the chat template's, sampling fields, limits),
// every kind of bad input refused with the right status, and results to each
// API's JSON.
#include <gtest/gtest.h>

#include "chat/chat_tokens.h"
#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/openai_api.h"
#include "server_test_util.h"

using namespace ember;
using namespace ember::server;
using ember::server::test::qwen3_model;

namespace {

std::vector<int32_t> template_ids(const json& messages, const json& kwargs = json::object()) {
  chat::ChatRequest r;
  r.messages = messages;
  r.kwargs = kwargs;
  const ServedModel& m = qwen3_model();
  return chat::encode_chat(*m.tok, *m.chat_template, r).ids;
}

// The status an OpenAI chat body is refused with, or 0 when accepted.
int openai_status(const std::string& body) {
  try {
    parse_chat_completion(parse_json_object(body), qwen3_model());
    return 0;
  } catch (const ApiError& e) {
    return e.status();
  }
}

int anthropic_status(const std::string& body) {
  try {
    parse_messages(parse_json_object(body), qwen3_model());
    return 0;
  } catch (const ApiError& e) {
    return e.status();
  }
}

std::string decoded_prompt(const GenerationRequest& r) { return qwen3_model().tok->decode(r.prompt); }

}  // namespace

TEST(OpenAiRequest, ChatPromptIsTheTemplatesWithContentPartsJoined) {
  const OpenAiCall call = parse_chat_completion(parse_json_object(R"({
    "model": "tiny",
    "messages": [{"role": "developer", "content": "Be brief."},
                 {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 42,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "stop": ["END", "###"], "n": 3,
    "stream": true, "stream_options": {"include_usage": true}})"), qwen3_model());
  EXPECT_EQ(call.gen.prompt, template_ids(json::parse(R"([{"role": "system", "content": "Be brief."},
                                                        {"role": "user", "content": "Hello there"}])")));
  EXPECT_EQ(call.gen.max_tokens, 7);
  EXPECT_FLOAT_EQ(call.gen.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(call.gen.sampling.top_p, 0.9f);
  EXPECT_EQ(call.gen.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(call.gen.sampling.min_p, 0.05f);
  EXPECT_EQ(call.gen.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(call.gen.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(call.gen.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(call.gen.stop, (std::vector<std::string>{"END", "###"}));
  EXPECT_EQ(call.n, 3);
  EXPECT_TRUE(call.stream);
  EXPECT_TRUE(call.include_usage);
  EXPECT_EQ(call.top_logprobs, -1);
}

TEST(OpenAiRequest, MaxTokensDefaultsToTheRoomLeftAndLogprobsKeepLogits) {
  const OpenAiCall call = parse_chat_completion(
      parse_json_object(R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true, "top_logprobs": 3})"),
      qwen3_model());
  EXPECT_EQ(call.gen.max_tokens, 256 - int(call.gen.prompt.size()));
  EXPECT_EQ(call.top_logprobs, 3);
  EXPECT_TRUE(call.gen.keep_logits);
}

TEST(OpenAiRequest, CompletionTakesTextOrTokenIds) {
  const OpenAiCall text = parse_completion(parse_json_object(R"({"prompt": "The quick brown fox", "max_tokens": 5})"), qwen3_model());
  EXPECT_EQ(text.gen.prompt, qwen3_model().tok->encode("The quick brown fox"));
  EXPECT_EQ(text.gen.max_tokens, 5);
  EXPECT_FALSE(text.chat);
  const OpenAiCall ids = parse_completion(parse_json_object(R"({"prompt": [1, 2, 3]})"), qwen3_model());
  EXPECT_EQ(ids.gen.prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ids.gen.max_tokens, 16);  // the API's documented default
  EXPECT_FALSE(ids.gen.ignore_eos);
  EXPECT_TRUE(parse_completion(parse_json_object(R"({"prompt": [1], "ignore_eos": true})"), qwen3_model()).gen.ignore_eos);
  EXPECT_EQ(openai_models(qwen3_model())["data"][0]["max_model_len"], qwen3_model().context);
}

TEST(OpenAiRequest, BadInputIsRefusedWithTheRightStatus) {
  EXPECT_EQ(openai_status("{not json"), 400);
  EXPECT_EQ(openai_status("[1, 2]"), 400);
  EXPECT_EQ(openai_status(R"({"messages": "hi"})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": []})"), 400);
  EXPECT_EQ(openai_status(R"({})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "wizard", "content": "x"}]})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": 5}]})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 100000})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "n": 0})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})"), 400);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "seed": 1e300})"), 400);
  EXPECT_EQ(openai_status(R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})"), 404);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 3.0, "seed": -1})"), 0);
  EXPECT_EQ(openai_status(R"({"messages": [{"role": "user", "content": "x"}], "temperature": null})"), 0);
  for (const char* prediction : {R"("x")", R"({"content": "x"})", R"({"type": "text", "content": "x"})", R"({"type": "content"})",
                                 R"({"type": "content", "content": 5})", R"({"type": "content", "content": [{"type": "image_url"}]})"})
    EXPECT_EQ(openai_status(std::string(R"({"messages": [{"role": "user", "content": "x"}], "prediction": )") + prediction + "}"), 400)
        << prediction;
}

TEST(OpenAiRequest, APredictionIsTheTokensOfItsText) {
  const ServedModel& m = qwen3_model();
  const std::string text = "def area(r):\n    return 3.14159 * r * r\n";
  for (const char* content : {R"("def area(r):\n    return 3.14159 * r * r\n")",
                              R"([{"type": "text", "text": "def area(r):\n"}, {"type": "text", "text": "    return 3.14159 * r * r\n"}])"}) {
    const OpenAiCall call = parse_chat_completion(
        parse_json_object(std::string(R"({"messages": [{"role": "user", "content": "x"}], "prediction": {"type": "content", "content": )") +
                          content + "}}"),
        m);
    EXPECT_TRUE(call.predicted);
    EXPECT_EQ(call.gen.prediction, m.tok->encode(text, /*add_special=*/false, /*parse_special=*/false)) << content;
    EXPECT_EQ(m.tok->decode(call.gen.prediction), text);
  }
  const OpenAiCall none = parse_chat_completion(parse_json_object(R"({"messages": [{"role": "user", "content": "x"}]})"), m);
  EXPECT_FALSE(none.predicted);
  EXPECT_TRUE(none.gen.prediction.empty());
}

TEST(AnthropicRequest, SystemBlocksToolUseAndToolResultGoThroughTheTemplate) {
  const AnthropicCall call = parse_messages(parse_json_object(R"({
    "model": "tiny", "max_tokens": 9, "system": [{"type": "text", "text": "You are terse."}],
    "stop_sequences": ["STOP"], "temperature": 0.7, "top_k": 5, "top_p": 0.8,
    "tools": [{"name": "weather", "description": "Weather now", "input_schema": {"type": "object"}}],
    "messages": [
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "-3 C, snow"}]}]})"),
                                        qwen3_model());
  EXPECT_EQ(call.gen.max_tokens, 9);
  EXPECT_EQ(call.gen.stop, std::vector<std::string>{"STOP"});
  EXPECT_EQ(call.gen.sampling.top_k, 5);
  const std::string prompt = decoded_prompt(call.gen);
  EXPECT_NE(prompt.find("You are terse."), std::string::npos);
  EXPECT_NE(prompt.find("\"name\": \"weather\""), std::string::npos) << prompt;   // the tool definition
  EXPECT_NE(prompt.find("{\"city\": \"Oslo\"}"), std::string::npos) << prompt;     // the call
  EXPECT_NE(prompt.find("<tool_response>\n-3 C, snow"), std::string::npos) << prompt;  // the result
}

TEST(AnthropicRequest, BadInputIsRefusedWithTheRightStatus) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", )" + msgs + "}"), 400);  // max_tokens is required
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, )" + msgs + "}"), 0);
  EXPECT_EQ(anthropic_status(R"({"max_tokens": 5, )" + msgs + "}"), 400);  // so is model
  EXPECT_EQ(anthropic_status(R"({"model": "claude", "max_tokens": 5, )" + msgs + "}"), 404);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, "temperature": 1.5, )" + msgs + "}"), 400);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5000, )" + msgs + "}"), 400);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, "stop_sequences": "x", )" + msgs + "}"), 400);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, "system": 3, )" + msgs + "}"), 400);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})"), 400);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, "messages": [{"role": "user", "content": [
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]})"), 400);
  EXPECT_EQ(anthropic_status(R"({"model": "tiny", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use"}]}]})"), 400);
}

TEST(AnthropicRequest, CountTokensIsThePromptLength) {
  const json body = parse_json_object(R"({"model": "tiny", "messages": [{"role": "user", "content": "Count me"}]})");
  EXPECT_EQ(count_message_tokens(body, qwen3_model()),
            int64_t(template_ids(json::parse(R"([{"role": "user", "content": "Count me"}])")).size()));
}

TEST(ErrorShapes, EachApiHasItsOwn) {
  const nlohmann::json o = openai_error_body(400, "bad", "temperature");
  EXPECT_EQ(o["error"]["message"], "bad");
  EXPECT_EQ(o["error"]["type"], "invalid_request_error");
  EXPECT_EQ(o["error"]["param"], "temperature");
  EXPECT_EQ(openai_error_body(401, "no")["error"]["code"], "invalid_api_key");
  const nlohmann::json a = anthropic_error_body(429, "busy");
  EXPECT_EQ(a["type"], "error");
  EXPECT_EQ(a["error"]["type"], "rate_limit_error");
  EXPECT_EQ(anthropic_error_body(413, "big")["error"]["type"], "request_too_large");
}

TEST(Responses, UsageCountsCachedTokensInEachApisWay) {
  Completion c;
  c.text = "<think>\nhmm\n</think>\n\nHello";
  c.tokens = {1, 2, 3};
  c.reason = FinishReason::Length;
  c.prompt_tokens = 10;
  c.cached_tokens = 6;
  OpenAiCall call;
  const json o = openai_response(call, {c}, qwen3_model(), "id1", 5);
  EXPECT_EQ(o["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(o["usage"]["completion_tokens"], 3);
  EXPECT_EQ(o["usage"]["prompt_tokens_details"]["cached_tokens"], 6);
  EXPECT_FALSE(o["usage"].contains("completion_tokens_details")) << "no prediction came";
  {  // with a prediction: how many of its tokens the answers took and left, over every choice
    Completion d = c;
    c.prediction_kept = 5;
    c.prediction_dropped = 2;
    d.prediction_kept = 1;
    d.prediction_dropped = 4;
    OpenAiCall predicted;
    predicted.predicted = true;
    const json u = openai_response(predicted, {c, d}, qwen3_model(), "id2", 5)["usage"];
    EXPECT_EQ(u["completion_tokens"], 6);
    EXPECT_EQ(u["completion_tokens_details"]["accepted_prediction_tokens"], 6);
    EXPECT_EQ(u["completion_tokens_details"]["rejected_prediction_tokens"], 6);
  }
  EXPECT_EQ(o["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(o["choices"][0]["message"]["reasoning_content"], "\nhmm\n");
  EXPECT_EQ(o["choices"][0]["finish_reason"], "length");
  const json a = anthropic_response(c, "", qwen3_model(), "msg1");
  EXPECT_EQ(a["usage"]["input_tokens"], 4);  // Anthropic counts cache reads apart
  EXPECT_EQ(a["usage"]["cache_read_input_tokens"], 6);
  EXPECT_EQ(a["stop_reason"], "max_tokens");
  EXPECT_EQ(a["content"][0]["type"], "thinking");
  EXPECT_EQ(a["content"][1]["text"], "Hello");
}

TEST(Responses, TheStopStringThatEndedGenerationIsNamed) {
  const Tokenizer& tok = *qwen3_model().tok;
  Completion c;
  c.tokens = tok.encode("Hello world END more", false);
  c.text = "Hello world ";
  c.reason = FinishReason::Stop;
  EXPECT_EQ(matched_stop(tok, c, {"XYZ", "END"}), "END");
  EXPECT_EQ(anthropic_stop_reason(c, "END"), "stop_sequence");
  c.reason = FinishReason::Length;
  EXPECT_EQ(matched_stop(tok, c, {"END"}), "");
}

TEST(Logprobs, AreALogSoftmaxWithTheBestAlternatives) {
  const float logits[4] = {1.0f, 3.0f, 2.0f, -1.0f};
  const TokenLogprob t = token_logprob(logits, 4, 2, 2);
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  EXPECT_NEAR(t.logprob, 2.0 - std::log(z), 1e-5);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[0].first, 1);
  EXPECT_EQ(t.top[1].first, 2);
}
