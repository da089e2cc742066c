#include "server/output_constraints.h"

#include <memory>

#include "grammar/grammar_constraint.h"
#include "grammar/json_schema_grammar.h"
#include "server/api_error.h"

namespace ember::server {

namespace {

ConstraintFactory constraint_of(const ServedModel& m, grammar::Grammar g) {
  if (!m.token_trie) throw ApiError(400, "this server cannot constrain output (no token table)");
  return grammar::grammar_constraint(std::make_shared<const grammar::Grammar>(std::move(g)), m.token_trie);
}

// A tool's parameter schema sits inside the call's schema, so its local $refs ("#/...") get the path to it.
json rebase_refs(const json& schema, const std::string& base) {
  if (schema.is_array()) {
    json out = json::array();
    for (const json& v : schema) out.push_back(rebase_refs(v, base));
    return out;
  }
  if (!schema.is_object()) return schema;
  json out = json::object();
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (it.key() == "$ref" && it->is_string() && it->get<std::string>().starts_with("#"))
      out["$ref"] = "#" + base + it->get<std::string>().substr(1);
    else
      out[it.key()] = rebase_refs(it.value(), base);
  }
  return out;
}

}  // namespace

ConstraintFactory response_format_constraint(const json& response_format, const ServedModel& m) {
  if (response_format.is_null()) return {};
  const auto type = response_format.is_object() ? string_field(response_format, "type") : std::nullopt;
  if (!type) throw ApiError(400, "response_format must be an object with a \"type\"", "response_format");
  if (*type == "text") return {};
  if (*type == "json_object") return constraint_of(m, grammar::json_object_grammar());
  if (*type != "json_schema")
    throw ApiError(400, "response_format.type must be text, json_object or json_schema", "response_format");
  const json* spec = field(response_format, "json_schema");
  if (!spec || !spec->is_object()) throw ApiError(400, "response_format.json_schema must be an object", "response_format");
  const json* schema = field(*spec, "schema");
  try {
    return constraint_of(m, grammar::json_schema_grammar(schema ? *schema : json::object()));
  } catch (const Error& e) {
    throw ApiError(400, std::string("response_format.json_schema.schema: ") + e.what(), "response_format");
  }
}

ToolUse tool_use(const ServedModel& m, const json& tools, ToolChoice choice, const std::string& name, const char* param) {
  ToolUse use;
  if (tools.is_null() || choice == ToolChoice::None) {
    if (choice == ToolChoice::Required || choice == ToolChoice::Named)
      throw ApiError(400, std::string(param) + " asks for a tool call but no tools are given", param);
    return use;
  }
  use.format = m.chat_template ? tool_call_format(m.tok->chat_template()) : ToolCallFormat::None;
  if (choice == ToolChoice::Auto) return use;
  if (use.format == ToolCallFormat::None)
    throw ApiError(400, "this model's chat template shows no tool-call format, so a call cannot be required", param);
  // The call the model must write, as a schema: one of the tools' names with its own arguments.
  const char* args_key = use.format == ToolCallFormat::Llama3Json ? "parameters" : "arguments";
  json alternatives = json::array();
  for (const json& t : tools) {
    const json* fn = field(t, "function");
    const auto fn_name = fn && fn->is_object() ? string_field(*fn, "name") : std::nullopt;
    if (!fn_name || (choice == ToolChoice::Named && *fn_name != name)) continue;
    const std::string base = "/anyOf/" + std::to_string(alternatives.size()) + "/properties/" + args_key;
    const json* params = field(*fn, "parameters");
    alternatives.push_back({{"type", "object"},
                            {"properties", {{"name", {{"const", *fn_name}}}, {args_key, params ? rebase_refs(*params, base) : json{{"type", "object"}}}}},
                            {"required", {"name", args_key}},
                            {"additionalProperties", false}});
  }
  if (alternatives.empty()) throw ApiError(400, std::string(param) + " names a tool that is not in tools", param);
  const bool tagged = use.format == ToolCallFormat::Tagged;
  try {
    use.constraint = constraint_of(m, grammar::json_schema_grammar({{"anyOf", alternatives}}, tagged ? "<tool_call>\n" : "",
                                                                   tagged ? "\n</tool_call>" : ""));
  } catch (const Error& e) {
    throw ApiError(400, std::string("tools: a parameter schema cannot be enforced: ") + e.what(), "tools");
  }
  return use;
}

}  // namespace ember::server
