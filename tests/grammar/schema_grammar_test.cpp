// JSON Schema -> grammar, checked by what the matcher accepts and refuses:
// every accepted string must be JSON valid under the schema, and the
// grammar must still reach the usual ways of writing such values.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_grammar.h"
#include "util/error.h"

using namespace ember;
using namespace ember::grammar;
using json = nlohmann::ordered_json;

namespace {

std::shared_ptr<const Grammar> compile(const char* schema) {
  return std::make_shared<const Grammar>(json_schema_grammar(json::parse(schema)));
}

bool whole(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.can_end();
}

bool prefix(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.advance(text);
}

}  // namespace

TEST(SchemaGrammar, ObjectWithRequiredAndOptionalPropertiesInOrder) {
  auto g = compile(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"]})");
  EXPECT_TRUE(whole(g, R"({"a":1,"b":"x"})"));
  EXPECT_TRUE(whole(g, R"({"b":"x"})"));
  EXPECT_TRUE(whole(g, "{ \"a\": -12, \"b\": \"\" }"));
  EXPECT_TRUE(whole(g, "{\n  \"a\": 3,\n  \"b\": \"y\"\n}"));
  EXPECT_FALSE(whole(g, R"({"a":1})")) << "b is required";
  EXPECT_FALSE(whole(g, R"({"b":"x","a":1})")) << "properties come in schema order";
  EXPECT_FALSE(whole(g, R"({"b":"x","c":1})")) << "no additional properties unless allowed";
  EXPECT_FALSE(whole(g, R"({"a":1.5,"b":"x"})"));
  EXPECT_FALSE(prefix(g, R"({"c)"));
  EXPECT_TRUE(prefix(g, R"({"a":1)")) << "a prefix of a valid object is not refused";
}

TEST(SchemaGrammar, AdditionalPropertiesWithASchema) {
  auto g = compile(R"({"type":"object","properties":{"a":{"type":"null"}},"additionalProperties":{"type":"boolean"}})");
  EXPECT_TRUE(whole(g, R"({"a":null,"x":true,"y":false})"));
  EXPECT_TRUE(whole(g, R"({"x":true})"));
  EXPECT_FALSE(whole(g, R"({"x":1})"));
}

TEST(SchemaGrammar, EnumConstAndAnyOf) {
  auto g = compile(R"({"anyOf":[{"enum":["red","green",3]},{"const":{"k":[1,2]}},{"type":"null"}]})");
  for (const char* ok : {R"("red")", R"("green")", "3", R"({"k":[1,2]})", "null"}) EXPECT_TRUE(whole(g, ok)) << ok;
  for (const char* bad : {R"("blue")", "4", R"({"k":[1]})", "true", R"("re")"}) EXPECT_FALSE(whole(g, bad)) << bad;
}

TEST(SchemaGrammar, StringLengthsCountCharactersAndEscapes) {
  auto g = compile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(whole(g, R"("ab")"));
  EXPECT_TRUE(whole(g, "\"\xc3\xa9t\xc3\xa9\""));  // three characters, five bytes
  EXPECT_TRUE(whole(g, R"("a\"\u00e9")"));
  EXPECT_FALSE(whole(g, R"("a")"));
  EXPECT_FALSE(whole(g, R"("abcd")"));
  EXPECT_FALSE(whole(g, "\"a\nb\"")) << "a raw control character";
  EXPECT_FALSE(prefix(g, "\"\xc0")) << "an overlong UTF-8 lead";
  EXPECT_FALSE(prefix(g, R"("\ud800)")) << "a lone surrogate would not parse";
  EXPECT_FALSE(prefix(g, R"("\x)"));
}

TEST(SchemaGrammar, IntegerBoundsAreExact) {
  auto g = compile(R"({"type":"integer","minimum":-15,"maximum":120})");
  for (int v = -30; v <= 200; ++v) EXPECT_EQ(whole(g, std::to_string(v)), v >= -15 && v <= 120) << v;
  EXPECT_FALSE(whole(g, "007"));
  EXPECT_FALSE(whole(g, "-0"));
  auto ex = compile(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
  EXPECT_FALSE(whole(ex, "0"));
  EXPECT_TRUE(whole(ex, "1"));
  EXPECT_TRUE(whole(ex, "9"));
  EXPECT_FALSE(whole(ex, "10"));
  auto big = compile(R"({"type":"integer","minimum":999})");
  EXPECT_TRUE(whole(big, "999"));
  EXPECT_TRUE(whole(big, "123456789"));
  EXPECT_FALSE(whole(big, "998"));
}

TEST(SchemaGrammar, NumbersStayWithinBounds) {
  auto g = compile(R"({"type":"number","minimum":-2.5,"maximum":3})");
  for (const char* ok : {"3", "2.75", "0", "-1.5", "-2", "0.001"}) EXPECT_TRUE(whole(g, ok)) << ok;
  for (const char* bad : {"3.5", "4", "-3", "3.0e1", "1e2"}) EXPECT_FALSE(whole(g, bad)) << bad;
  auto free = compile(R"({"type":"number"})");
  for (const char* ok : {"0", "-0.5", "12e-3", "6.02E+23"}) EXPECT_TRUE(whole(free, ok)) << ok;
  for (const char* bad : {"01", ".5", "1.", "+1", "1e"}) EXPECT_FALSE(whole(free, bad)) << bad;
}

TEST(SchemaGrammar, ArraysCountTheirItems) {
  auto g = compile(R"({"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":3})");
  EXPECT_FALSE(whole(g, "[]"));
  EXPECT_TRUE(whole(g, "[true]"));
  EXPECT_TRUE(whole(g, "[true, false,true]"));
  EXPECT_FALSE(whole(g, "[true,true,true,true]"));
  EXPECT_FALSE(whole(g, "[1]"));
  auto empty = compile(R"({"type":"array","maxItems":0})");
  EXPECT_TRUE(whole(empty, "[]"));
  EXPECT_FALSE(whole(empty, "[1]"));
}

TEST(SchemaGrammar, RefsAndRecursion) {
  auto g = compile(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                       "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
                       "$ref":"#/$defs/node"})");
  EXPECT_TRUE(whole(g, R"({"v":1})"));
  EXPECT_TRUE(whole(g, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
  EXPECT_FALSE(whole(g, R"({"v":1,"kids":[{}]})"));
}

TEST(SchemaGrammar, AnyJsonWhereTheSchemaIsSilent) {
  auto g = compile("{}");
  for (const char* ok : {"1", "\"s\"", "[1,[2,{}]]", R"({"a":{"b":null}})", "true"}) EXPECT_TRUE(whole(g, ok)) << ok;
  EXPECT_FALSE(whole(g, "{a:1}"));
  auto object = std::make_shared<const Grammar>(json_object_grammar());
  EXPECT_TRUE(whole(object, R"({"x":[1,2]})"));
  EXPECT_FALSE(whole(object, "[1]"));
}

TEST(SchemaGrammar, OneOfOfDisjointBranches) {
  // Different kinds (integer vs number overlap; a fraction does not).
  auto g = compile(R"({"oneOf":[{"type":"string","maxLength":2},{"type":"integer"},{"type":["null","boolean"]}]})");
  for (const char* ok : {R"("ab")", "12", "null", "true"}) EXPECT_TRUE(whole(g, ok)) << ok;
  for (const char* bad : {R"("abc")", "1.5", "[]"}) EXPECT_FALSE(whole(g, bad)) << bad;
  EXPECT_NO_THROW(compile(R"({"oneOf":[{"type":"integer"},{"const":1.5}]})"));
  // Different const / enum values.
  EXPECT_NO_THROW(compile(R"({"oneOf":[{"enum":["a","b"]},{"const":"c"},{"type":"string","enum":["d",1]}]})"));
  // A discriminator: a property both require, with different const values (through $refs, as tagged unions are written).
  auto tagged = compile(R"({"$defs":{
      "cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},"required":["kind","lives"]},
      "dog":{"type":"object","properties":{"kind":{"type":"string","enum":["dog","wolf"]},"good":{"type":"boolean"}},"required":["kind"]}},
    "oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"}]})");
  EXPECT_TRUE(whole(tagged, R"({"kind":"cat","lives":9})"));
  EXPECT_TRUE(whole(tagged, R"({"kind":"wolf","good":false})"));
  EXPECT_FALSE(whole(tagged, R"({"kind":"dog","lives":9})"));
}

TEST(SchemaGrammar, OneOfThatMayOverlapIsRefused) {
  for (const char* bad : {
           R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]})",  // "ab" matches both
           R"({"oneOf":[{"type":"number"},{"type":"integer"}]})",               // 1 matches both
           R"({"oneOf":[{"enum":["a","b"]},{"enum":["b","c"]}]})",
           R"({"oneOf":[{"const":1},{"const":1.0}]})",                          // equal numbers
           R"({"oneOf":[{"type":"object"},{"properties":{"a":{"type":"string"}}}]})",
           R"({"oneOf":[{"type":"integer"},{}]})",
           // both require "kind" but the values meet; the other property alone proves nothing
           R"({"oneOf":[{"type":"object","properties":{"kind":{"enum":["a","b"]}},"required":["kind"]},
                        {"type":"object","properties":{"kind":{"const":"b"},"x":{"const":1}},"required":["kind","x"]}]})",
           // a discriminator that only one branch requires
           R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},
                        {"type":"object","properties":{"kind":{"const":"b"}}}]})",
           // a discriminator in branches that allow extra members: {"kind":"a","kind":"b"} parses as the other
           R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"],"additionalProperties":true},
                        {"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]})",
           // self-referencing fan-out: analysed within a budget, then refused
           R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"},{"type":"string"}]}},
               "oneOf":[{"$ref":"#/$defs/a"},{"type":"integer"}]})"}) {
    try {
      json_schema_grammar(json::parse(bad));
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("oneOf"), std::string::npos) << e.what();
    }
  }
}

// 2,000 disjoint branches of 50 values each: about 5e9 value comparisons if every
// pair were checked in full. A budget for the whole oneOf refuses it at once.
TEST(SchemaGrammar, OneOfAnalysisIsBoundedForHugeSchemas) {
  json branches = json::array();
  for (int b = 0; b < 2000; ++b) {
    json values = json::array();
    for (int v = 0; v < 50; ++v) values.push_back(b * 50 + v);
    branches.push_back({{"enum", values}});
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(json_schema_grammar(json{{"oneOf", branches}}), Error);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(SchemaGrammar, PrefixAndSuffixWrapTheValue) {
  auto g = std::make_shared<const Grammar>(json_schema_grammar(json::parse(R"({"const":1})"), "<a>\n", "\n</a>"));
  EXPECT_TRUE(whole(g, "<a>\n1\n</a>"));
  EXPECT_FALSE(whole(g, "1"));
}

TEST(SchemaGrammar, RefusesWhatItCannotEnforce) {
  for (const char* bad : {R"({"type":"string","pattern":"^a"})", R"({"not":{}})", "false", R"({"type":"wat"})",
                          R"({"$ref":"#/nowhere"})", R"({"$ref":"http://x"})", R"({"type":"integer","minimum":3,"maximum":2})",
                          R"({"type":"string","maxLength":100000})", R"({"anyOf":[{"$ref":"#"}]})", R"({"enum":[]})",
                          R"({"type":"number","minimum":0.2,"maximum":0.7})", "[]"})
    EXPECT_THROW(json_schema_grammar(json::parse(bad)), Error) << bad;
}

// A combinator compiles alone: an assertion beside it would be dropped, so it is refused; annotations are fine.
TEST(SchemaGrammar, AssertionsBesideACombinatorAreRefused) {
  for (const char* bad : {R"({"type":"object","properties":{"a":{"type":"integer"}},"anyOf":[{"required":["a"]},{}]})",
                          R"({"type":"string","oneOf":[{"maxLength":2},{"minLength":5}]})",
                          R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":3})",
                          R"({"allOf":[{"type":"string"}],"anyOf":[{"type":"string"}]})"}) {
    try {
      json_schema_grammar(json::parse(bad));
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("beside"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(compile(R"({"anyOf":[{"type":"string"},{"type":"null"}],"title":"X","default":null,"description":"d"})"));
  EXPECT_NO_THROW(compile(R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","description":"d"})"));
}

TEST(SchemaGrammar, RefusesSchemasThatMultiplyIntoTooManyRules) {
  // 100 strings of about 10000 characters, each bound different: a million rules.
  json schema = {{"type", "object"}, {"properties", json::object()}};
  for (int i = 0; i < 100; ++i) schema["properties"]["p" + std::to_string(i)] = {{"type", "string"}, {"maxLength", 9999 - i}};
  EXPECT_THROW(json_schema_grammar(schema), Error);
}
