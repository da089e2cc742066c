// Hostile chat templates: every runaway ends with a clear error within
// seconds and a bounded amount of memory; raise_exception stays an error with
// the template's own message.
#include <gtest/gtest.h>

#include "chat/template.h"
#include "expect_error.h"
#include "hostile_util.h"

using namespace ember;
using namespace ember::hostile;

namespace {

std::string render(const std::string& source) {
  return chat::Template::parse(source).render(nlohmann::ordered_json::object());
}

// Runs `source`, expecting an error holding `part`, in under 30 s (a runaway would take
// hours; the bound leaves room for sanitizers on a loaded machine) and 600 MB.
void expect_bounded_error(const std::string& source, const std::string& part) {
  const double before = peak_rss_mb();
  const double secs = seconds([&] { EXPECT_CLEAR_ERROR(render(source), {part}); });
  EXPECT_LT(secs, 30.0) << source;
  EXPECT_LT(peak_rss_mb() - before, 600.0) << source;
}

TEST(HostileTemplate, ListNestedByALoopIsRefusedBeforeItOverflowsTheStack) {
  expect_bounded_error("{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
                       "nest deeper");
  expect_bounded_error("{% set x = [] %}{% for i in range(200000) %}{% set x = [x] %}{% endfor %}{{ x }}", "nest deeper");
  expect_bounded_error("{% set x = {} %}{% for i in range(200000) %}{% set x = {'a': x} %}{% endfor %}{{ x }}",
                       "nest deeper");
}

// `s` holds `unit` repeated 2^doublings times (the dialect has no string repetition).
std::string big(const std::string& unit, int doublings) {
  return "{% set ns = namespace(s='" + unit + "') %}{% for i in range(" + std::to_string(doublings) +
         ") %}{% set ns.s = ns.s + ns.s %}{% endfor %}{% set s = ns.s %}";
}

TEST(HostileTemplate, SplitAndListCannotBuildMillionsOfItems) {
  expect_bounded_error(big("a,", 22) + "{{ s.split(',') | length }}", "split");
  expect_bounded_error(big("ab", 22) + "{{ s | list | length }}", "items");
  expect_bounded_error(big("a b ", 21) + "{{ s.split() | length }}", "split");
  expect_bounded_error(big("a,", 22) + "{{ s.rsplit(',', 100000000) | length }}", "rsplit");
}

TEST(HostileTemplate, FiltersBuildingLargeStringsInALoopStop) {
  // 2^25 bytes = 32 MB per step: each loop would build tens of terabytes.
  expect_bounded_error(big("x", 25) + "{% for i in range(1000000) %}{% set t = s | upper %}{% endfor %}", "bytes of strings");
  expect_bounded_error(big("x", 25) + "{% for i in range(1000000) %}{% set t = s + 'y' %}{% endfor %}", "bytes of strings");
  expect_bounded_error(big("x", 25) + "{% for i in range(1000000) %}{% set t = s.replace('z', 'y') %}{% endfor %}",
                       "bytes of strings");
}

TEST(HostileTemplate, RaiseExceptionStaysACleanErrorWithTheTemplatesMessage) {
  EXPECT_CLEAR_ERROR(render("{{ raise_exception('Only user and assistant roles are supported!') }}"),
                     {"Only user and assistant roles are supported!"});
}

}  // namespace
