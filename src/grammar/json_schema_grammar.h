// JSON Schema -> Grammar: the values a schema allows, as bytes, so that
// constrained decoding can only write JSON that parses and validates.
//
// Supported: type (one or a list), enum, const, properties / required /
// additionalProperties, items / minItems / maxItems, minLength / maxLength,
// minimum / maximum / exclusiveMinimum / exclusiveMaximum, anyOf, oneOf whose
// branches are provably disjoint (schema_disjoint.h; else refused), allOf with one member, $ref to "#" and "#/$defs/..." or "#/definitions/...".
// Unsupported keywords that would restrict values (pattern, not, ...) are
// refused rather than silently ignored; descriptive ones (title, format,
// description, default, ...) are ignored.
//
// What is written is a subset of what the schema allows, chosen so that a
// model cannot run on forever where the schema is silent:
// - properties come in the schema's order, required ones always, optional
//   ones maybe; other properties only with additionalProperties true or a schema;
// - numbers have at most 16 integer digits, 15 fraction digits and 3 exponent
//   digits; bounded numbers are written without exponent, with a fraction only
//   where any fraction stays inside the bounds;
// - whitespace between tokens is nothing, one space, or a newline and up to 16 spaces.
#pragma once
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/grammar.h"

namespace ember::grammar {

// Throws ember::Error naming the unsupported or contradictory part.
// prefix and suffix are literal text around the value (a tool-call wrapper).
Grammar json_schema_grammar(const nlohmann::ordered_json& schema, std::string_view prefix = {},
                            std::string_view suffix = {});
// Any JSON object (response_format json_object).
Grammar json_object_grammar();

}  // namespace ember::grammar
