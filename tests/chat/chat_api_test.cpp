// The chat-facing API: tokenizer_config.json reading, request files, the CLI helper, and the
// few Jinja features ember has beyond the reference renderer (checked against Python Jinja's
// documented results).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "util/error.h"

namespace {

using namespace ember::chat;
using ojson = nlohmann::ordered_json;

ojson load(const std::string& name) {
  std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/tests/chat/data/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ojson::parse(ss.str());
}

std::string temp_file(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/ember_chat_" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(ChatApi, TokenizerConfigForms) {
  TokenizerChatConfig c = read_tokenizer_chat_config(
      ojson::parse(R"({"chat_template": "T", "bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": false}})"));
  EXPECT_EQ(c.chat_template, "T");
  EXPECT_EQ(c.bos_token, "<s>");
  EXPECT_EQ(c.eos_token, "</s>");
  c = read_tokenizer_chat_config(ojson::parse(R"({"chat_template": [{"name": "tool_use", "template": "A"},
      {"name": "default", "template": "B"}], "bos_token": null})"));
  EXPECT_EQ(c.chat_template, "B");
  EXPECT_EQ(c.bos_token, "");
  EXPECT_EQ(c.eos_token, "");
  EXPECT_THROW(read_tokenizer_chat_config(ojson::parse(R"({"bos_token": "x"})")), ember::Error);
  EXPECT_THROW(read_tokenizer_chat_config(ojson::parse(R"({"chat_template": 5})")), ember::Error);
  EXPECT_THROW(read_tokenizer_chat_config(ojson::parse(R"({"chat_template": "T", "eos_token": 3})")), ember::Error);
}

TEST(ChatApi, CommandHelperPrintsTheReferencePrompt) {
  // Qwen3 with a tool definition: the expected text is the reference renderer's.
  ojson templates = load("model_templates.json");
  ojson conv, expected;
  const ojson conversations = load("conversations.json")["conversations"];
  const ojson chat_expected = load("chat_expected.json")["chat"];
  for (const auto& c : conversations)
    if (c["name"] == "tool_call_with_text_before") conv = c;
  for (const auto& e : chat_expected)
    if (e["model"] == "qwen3" && e["name"] == "tool_call_with_text_before") expected = e;
  ASSERT_TRUE(expected.contains("output"));

  ChatTemplateCommand cmd;
  cmd.messages_path = temp_file("messages.json", conv["messages"].dump());
  cmd.tools_path = temp_file("tools.json", conv["tools"].dump());
  cmd.kwargs_json = conv["kwargs"].dump();
  std::ostringstream out;
  write_chat_prompt(out, templates["qwen3"]["chat_template"], templates["qwen3"]["bos_token"],
                    templates["qwen3"]["eos_token"], cmd);
  EXPECT_EQ(out.str(), expected["output"].get<std::string>());

  // an object with "messages" and "tools" works as the messages file too
  ojson both = {{"messages", conv["messages"]}, {"tools", conv["tools"]}};
  cmd.messages_path = temp_file("both.json", both.dump());
  cmd.tools_path.clear();
  std::ostringstream out2;
  write_chat_prompt(out2, templates["qwen3"]["chat_template"], "", "<|im_end|>", cmd);
  EXPECT_EQ(out2.str(), expected["output"].get<std::string>());
}

TEST(ChatApi, BadRequestFilesAreErrors) {
  ChatTemplateCommand cmd;
  cmd.messages_path = "/nonexistent/messages.json";
  EXPECT_THROW(load_chat_request(cmd), ember::Error);
  cmd.messages_path = temp_file("bad.json", "[{\"role\": ");
  EXPECT_THROW(load_chat_request(cmd), ember::Error);
  cmd.messages_path = temp_file("norole.json", R"([{"content": "hi"}])");
  EXPECT_THROW(load_chat_request(cmd), ember::Error);
  cmd.messages_path = temp_file("ok.json", R"([{"role": "user", "content": "hi"}])");
  cmd.kwargs_json = "[1]";
  EXPECT_THROW(load_chat_request(cmd), ember::Error);
  cmd.kwargs_json = "{\"enable_thinking\": false}";
  ChatRequest req = load_chat_request(cmd);
  EXPECT_EQ(req.kwargs["enable_thinking"], false);
  EXPECT_TRUE(req.tools.is_null());
}

TEST(ChatApi, ContextKeyOrderIsKept) {
  // tojson must keep the caller's key order (tool schemas are printed into prompts)
  ChatRequest req;
  req.messages = ojson::parse(R"([{"role": "user", "content": "x"}])");
  req.tools = ojson::parse(R"([{"zeta": 1, "alpha": 2, "mid": {"b": 1, "a": 2}}])");
  EXPECT_EQ(render_chat_template("{{ tools[0]|tojson }}", req, "", ""), R"({"zeta": 1, "alpha": 2, "mid": {"b": 1, "a": 2}})");
  req.kwargs = {{"extra", "v"}};
  EXPECT_EQ(render_chat_template("{{ bos_token }}|{{ extra }}|{{ add_generation_prompt }}", req, "<s>", ""), "<s>|v|true");
}

TEST(ChatApi, JinjaFeaturesBeyondTheReference) {
  auto render = [](const std::string& src) { return Template::parse(src).render(ojson::object()); };
  EXPECT_EQ(render("{{ 'a,b,c'.rsplit(',', 1) }}"), R"(["a,b", "c"])");
  EXPECT_EQ(render("{{ 'hello'.find('l') }} {{ 'hello'.find('z') }}"), "2 -1");
  EXPECT_EQ(render("{{ '<a href=\"x\">&'|e }}"), "&lt;a href=&#34;x&#34;&gt;&amp;");
  EXPECT_EQ(render("{{ 2.567|round(2) }} {{ 2.5|round }} {{ 2.1|round(0, 'ceil') }}"), "2.57 3.0 3.0");
  EXPECT_EQ(render("{{ [0, 1, 2, '', 'x']|select|list }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }}"),
            R"([1, 2, "x"] [1, 3] [2, 4])");
  EXPECT_EQ(render("{{ 'abc'|list }} {{ x|default }}|"), R"(["a", "b", "c"] |)");
}

}  // namespace
