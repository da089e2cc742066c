// Bad templates and hostile ones: every failure is an ember::Error that names the line, and
// runaway templates stop at the render limits instead of exhausting the machine.
#include <gtest/gtest.h>

#include <string>

#include "chat/template.h"
#include "util/error.h"

namespace {

using ember::chat::RenderLimits;
using ember::chat::Template;
using ojson = nlohmann::ordered_json;

// The message of the ember::Error the call throws ("" when it does not throw).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(const std::string& src) {
  return error_of([&] { Template::parse(src); });
}
std::string render_error(const std::string& src, const ojson& ctx = ojson::object(), RenderLimits limits = {}) {
  return error_of([&] { Template::parse(src).render(ctx, limits); });
}

TEST(ChatErrors, SyntaxErrorsNameTheLine) {
  std::string e = parse_error("line one\n{% if x %}\nnever closed");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("not closed"), std::string::npos) << e;

  e = parse_error("a\nb\n{{ 1 + * 2 }}");
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;

  e = parse_error("{{ x }}\n\n\n{{ x | no_such_filter }}");
  EXPECT_NE(e.find("line 4"), std::string::npos) << e;
  EXPECT_NE(e.find("no_such_filter"), std::string::npos) << e;

  e = parse_error("{% if x is no_such_test %}{% endif %}");
  EXPECT_NE(e.find("no_such_test"), std::string::npos) << e;

  e = parse_error("x\n{% include 'other.html' %}");
  EXPECT_NE(e.find("include"), std::string::npos) << e;
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;

  EXPECT_NE(parse_error("{{ 'unterminated }}"), "");
  EXPECT_NE(parse_error("{{ x "), "");
  EXPECT_NE(parse_error("{# open comment"), "");
  EXPECT_NE(parse_error("{% for x in %}{% endfor %}"), "");
  EXPECT_NE(parse_error("{% for %}"), "");
  EXPECT_NE(parse_error("{% endif %}"), "");
  EXPECT_NE(parse_error("{{ [1, 2 }}"), "");
  EXPECT_NE(parse_error("{{ {'a' 1} }}"), "");
  EXPECT_NE(parse_error("{{ f(a=1, 2) }}"), "");
  EXPECT_NE(parse_error("{% macro m(a=1, b) %}{% endmacro %}"), "");
  EXPECT_NE(parse_error("{{ x[] }}"), "");
  EXPECT_NE(parse_error("{{ 'bad \\q escape' }}"), "");
  EXPECT_NE(parse_error("{{ @ }}"), "");
}

TEST(ChatErrors, LineNumbersSurviveWhitespaceControl) {
  // trim_blocks removes newlines, but errors still point at the line the user wrote
  std::string src = "{% if true %}\n{% if true %}\n{% endif %}\n{% endif %}\n{{ 1 +* 2 }}";
  std::string e = parse_error(src);
  EXPECT_NE(e.find("line 5"), std::string::npos) << e;
}

TEST(ChatErrors, RuntimeErrorsNameTheLine) {
  std::string e = render_error("ok\n{{ none + 1 }}");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  e = render_error("{% for c in 'abc' %}{% endfor %}");
  EXPECT_NE(e.find("cannot loop"), std::string::npos) << e;
  e = render_error("{{ raise_exception('Roles must alternate') }}");
  EXPECT_NE(e.find("Roles must alternate"), std::string::npos) << e;
  e = render_error("{% break %}");
  EXPECT_NE(e.find("outside a loop"), std::string::npos) << e;
  e = render_error("{{ x|wordcount }}", ojson{{"x", "a b"}});
  EXPECT_NE(e.find("wordcount"), std::string::npos) << e;
  EXPECT_NE(render_error("{{ x }}", ojson{{"range", 1}}), "");  // context may not hide a global
}

TEST(ChatErrors, RunawayRecursionIsLimited) {
  std::string e = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(e.find("nest deeper"), std::string::npos) << e;
  // exponential fan-out stops at the iteration budget
  RenderLimits small;
  small.max_iterations = 100000;
  e = render_error("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", {}, small);
  EXPECT_NE(e.find("too long"), std::string::npos) << e;
}

TEST(ChatErrors, HugeRangesAndOutputsAreLimited) {
  std::string e = render_error("{% for i in range(1000000000000) %}{% endfor %}");
  EXPECT_NE(e.find("range()"), std::string::npos) << e;
  RenderLimits small;
  small.max_iterations = 1000;
  e = render_error("{% for i in range(5000) %}{% endfor %}", {}, small);
  EXPECT_NE(e.find("too long"), std::string::npos) << e;
  small = RenderLimits{};
  small.max_output_bytes = 1000;
  e = render_error("{% set ns = namespace(s='ab') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", {}, small);
  EXPECT_NE(e.find("exceeds"), std::string::npos) << e;
  e = render_error("{% for i in range(2000) %}x{% endfor %}", {}, small);
  EXPECT_NE(e.find("exceeds"), std::string::npos) << e;
  // a list that holds itself many times is not expanded without bound
  e = render_error("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|tojson }}", {}, small);
  EXPECT_NE(e.find("exceeds"), std::string::npos) << e;
}

TEST(ChatErrors, DeepNestingIsASyntaxError) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(parse_error(deep), "");
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_NE(parse_error(ifs), "");
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(parse_error(chain + " }}"), "");
  // moderately nested templates are fine
  EXPECT_EQ(Template::parse("{{ ((((1 + 2)))) }}").render(ojson::object()), "3");
}

TEST(ChatErrors, SelfReferenceDoesNotLeakOrLoop) {
  std::string e = render_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  EXPECT_NE(e.find("deep"), std::string::npos) << e;
}

}  // namespace
