// What a request demands of the form of its answer, as engine constraints:
// OpenAI's response_format (json_object, json_schema) and a forced tool
// call (tool_choice "required" or a named function, Anthropic "any" or
// "tool"), which makes the model write a call in its own format with
// arguments that match the tool's parameter schema.
#pragma once
#include <string>

#include "engine/token_constraint.h"
#include "server/json_fields.h"
#include "server/served_model.h"
#include "server/tool_calls.h"

namespace ember::server {

// response_format: null or {"type": "text"} give no constraint. Throws ApiError(400).
ConstraintFactory response_format_constraint(const json& response_format, const ServedModel& m);

enum class ToolChoice { Auto, None, Required, Named };

struct ToolUse {
  ToolCallFormat format = ToolCallFormat::None;  // None: the answer is not searched for calls
  ConstraintFactory constraint;                  // set when a call is forced
};

// tools: null or OpenAI-style definitions ({"type": "function", "function": {name, parameters}}).
// `name` is the tool of ToolChoice::Named. Throws ApiError(400) naming `param`.
ToolUse tool_use(const ServedModel& m, const json& tools, ToolChoice choice, const std::string& name, const char* param);

}  // namespace ember::server
