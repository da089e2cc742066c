// Renders every conversation and small template of tests/chat/data with ember and compares the
// text with what @huggingface/jinja produced for the same input (chat_expected.json, written by
// tools/oracle/chat_expected.mjs). Where the reference failed, ember must throw ember::Error.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/template.h"
#include "util/error.h"

namespace {

using ojson = nlohmann::ordered_json;

ojson load(const std::string& name) {
  std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/tests/chat/data/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ojson::parse(ss.str());
}

TEST(ChatOracle, RealTemplatesMatchReference) {
  ojson templates = load("model_templates.json");
  ojson conversations = load("conversations.json")["conversations"];
  ojson expected = load("chat_expected.json")["chat"];
  std::map<std::string, const ojson*> by_name;
  for (const auto& c : conversations) by_name[c["name"].get<std::string>()] = &c;

  std::map<std::string, int> rendered;
  ASSERT_GT(expected.size(), 60u);
  for (const auto& exp : expected) {
    const std::string model = exp["model"], name = exp["name"];
    SCOPED_TRACE(model + " / " + name);
    const ojson& conv = *by_name.at(name);
    const ojson& cfg = templates.at(model);
    ember::chat::ChatRequest req;
    req.messages = conv["messages"];
    req.tools = conv.value("tools", ojson());
    req.add_generation_prompt = conv.value("add_generation_prompt", true);
    req.kwargs = conv.value("kwargs", ojson::object());
    const std::string tmpl = cfg["chat_template"], bos = cfg["bos_token"], eos = cfg["eos_token"];
    if (exp.contains("output")) {
      std::string got;
      try {
        got = ember::chat::render_chat_template(tmpl, req, bos, eos);
      } catch (const ember::Error& e) {
        ADD_FAILURE() << "ember failed where the reference rendered: " << e.what();
        continue;
      }
      EXPECT_EQ(got, exp["output"].get<std::string>());
      if (got == exp["output"].get<std::string>()) ++rendered[model];
    } else {
      EXPECT_THROW(ember::chat::render_chat_template(tmpl, req, bos, eos), ember::Error)
          << "reference failed with: " << exp["error"];
    }
  }
  // at least 20 conversations per model render exactly as the reference renders them
  for (const char* model : {"qwen3", "llama3", "gemma3"}) EXPECT_GE(rendered[model], 20) << model;
}

TEST(ChatOracle, TemplateFeaturesMatchReference) {
  ojson cases = load("template_cases.json");
  ojson expected = load("chat_expected.json")["templates"];
  ASSERT_EQ(cases.size(), expected.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const ojson& c = cases[i];
    const ojson& exp = expected[i];
    ASSERT_EQ(c["name"], exp["name"]);
    SCOPED_TRACE(c["name"].get<std::string>() + ": " + c["template"].get<std::string>());
    ojson ctx = c.value("context", ojson::object());
    if (exp.contains("output")) {
      try {
        EXPECT_EQ(ember::chat::Template::parse(c["template"]).render(ctx), exp["output"].get<std::string>());
      } catch (const ember::Error& e) {
        ADD_FAILURE() << "ember failed where the reference rendered: " << e.what();
      }
    } else {
      EXPECT_THROW(ember::chat::Template::parse(c["template"]).render(ctx), ember::Error)
          << "reference failed with: " << exp["error"];
    }
  }
}

}  // namespace
