// Whether the branches of a JSON Schema `oneOf` can never match the same
// value, so that a grammar of "any branch" (what anyOf compiles to) writes only
// values that match exactly one.
//
// Exactly-one in general needs "A and not B", which a context-free grammar of
// JSON cannot express; instead the branches are checked pairwise for a proof
// that no value matches both:
// - the JSON kinds they allow do not meet (string vs object, integer vs
//   boolean, ...; "number" includes the integers);
// - their const / enum values share none;
// - or, for two object branches, a property both require has const / enum
//   values that share none (a discriminator, as in tagged unions).
// Every test over-approximates what a branch allows (keywords apply together,
// so any one of them bounds the branch), so "disjoint" is a proof; a pair
// without one is reported and the schema refused.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ember::grammar {

// nullopt when every pair of `branches` (a oneOf array) is provably disjoint;
// else the indices of a pair that may overlap, as "i and j". `root` resolves local $refs.
std::optional<std::string> oneof_overlap(const nlohmann::ordered_json& branches, const nlohmann::ordered_json& root);

}  // namespace ember::grammar
