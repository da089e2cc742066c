#include "chat/template.h"

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "util/error.h"

namespace ember::chat {

Template Template::parse(const std::string& source) {
  Template t;
  t.program_ = std::make_shared<const std::vector<StmtPtr>>(chat::parse(tokenize(source)));
  return t;
}

std::string Template::render(const nlohmann::ordered_json& context, const RenderLimits& limits) const {
  if (!context.is_object() && !context.is_null()) throw Error("template context must be a JSON object");
  Interpreter interp(limits);
  auto globals = std::make_shared<Env>();
  install_globals(*globals, interp);
  if (context.is_object()) {
    for (auto it = context.begin(); it != context.end(); ++it) {
      // The reference refuses context keys that would hide a global (true, range, namespace, ...).
      if (globals->has_own(it.key())) throw Error("template context may not redefine '" + it.key() + "'");
      globals->set(it.key(), from_json(it.value()));
    }
  }
  std::string out;
  interp.run(*program_, *globals, out);
  return out;
}

}  // namespace ember::chat
