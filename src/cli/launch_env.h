// How each coding tool `ember launch` starts is pointed at an ember server:
// the environment variables and arguments it reads its endpoint, key and
// model from. Plain data, so the choices are tested without starting anything.
//
// - claude (Claude Code): Anthropic Messages API; ANTHROPIC_BASE_URL,
//   ANTHROPIC_AUTH_TOKEN (sent as a bearer token), ANTHROPIC_MODEL and the
//   model of every size class, so background tasks use the same model;
// - codex (Codex CLI): a model provider given with -c overrides, on the chat
//   completions wire API (the Responses API is not served yet, so Codex
//   versions that accept only "responses" refuse it);
// - opencode: an inline config (OPENCODE_CONFIG_CONTENT) with an
//   OpenAI-compatible provider named "ember".
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace ember::cli {

struct LaunchPlan {
  std::string program;                                   // looked up on PATH
  std::vector<std::string> args;                         // before the user's own
  std::vector<std::pair<std::string, std::string>> env;  // set for the tool only
};

// url: the server's root ("http://127.0.0.1:8080"). Throws ember::Error for an unknown tool.
LaunchPlan launch_plan(const std::string& tool, const std::string& url, const std::string& api_key, const std::string& model);

}  // namespace ember::cli
