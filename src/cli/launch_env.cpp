#include "cli/launch_env.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace ember::cli {

LaunchPlan launch_plan(const std::string& tool, const std::string& url, const std::string& api_key, const std::string& model) {
  LaunchPlan p;
  p.program = tool;
  if (tool == "claude") {
    p.env = {{"ANTHROPIC_BASE_URL", url},
             {"ANTHROPIC_AUTH_TOKEN", api_key},
             {"ANTHROPIC_MODEL", model},
             {"ANTHROPIC_SMALL_FAST_MODEL", model},
             {"ANTHROPIC_DEFAULT_OPUS_MODEL", model},
             {"ANTHROPIC_DEFAULT_SONNET_MODEL", model},
             {"ANTHROPIC_DEFAULT_HAIKU_MODEL", model}};
  } else if (tool == "codex") {
    // The key travels in an environment variable the provider names, never on the command line.
    p.env = {{"EMBER_API_KEY", api_key}};
    p.args = {"-c", "model_providers.ember.name=\"ember\"",
              "-c", "model_providers.ember.base_url=\"" + url + "/v1\"",
              "-c", "model_providers.ember.env_key=\"EMBER_API_KEY\"",
              "-c", "model_providers.ember.wire_api=\"chat\"",
              "-c", "model_provider=\"ember\"",
              "-m", model};
  } else if (tool == "opencode") {
    const nlohmann::ordered_json config = {
        {"provider",
         {{"ember",
           {{"npm", "@ai-sdk/openai-compatible"},
            {"name", "ember"},
            {"options", {{"baseURL", url + "/v1"}, {"apiKey", api_key}}},
            {"models", {{model, {{"name", model}}}}}}}}},
        {"model", "ember/" + model}};
    p.env = {{"OPENCODE_CONFIG_CONTENT", config.dump()}};
  } else {
    throw Error("launch: unknown tool '" + tool.substr(0, 64) + "' (claude, codex or opencode)");
  }
  return p;
}

}  // namespace ember::cli
