// A strict well-formedness check of an XML document (what an SVG viewer
// needs before anything else): one root element, every tag closed in order,
// attributes quoted, only the five named entities and numeric ones, no '<'
// or bare '&' in text. Returns "" when well formed, else what is wrong.
#pragma once
#include <cctype>
#include <string>
#include <vector>

namespace ember::bench::test {

inline std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0;
  int roots = 0;
  auto name_at = [&](size_t& p) {
    const size_t b = p;
    while (p < s.size() && (std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '-' || s[p] == '_' || s[p] == ':' || s[p] == '.')) ++p;
    return s.substr(b, p - b);
  };
  auto entity_ok = [&](size_t p) {  // s[p] == '&'
    const size_t semi = s.find(';', p);
    if (semi == std::string::npos || semi - p > 10) return false;
    const std::string e = s.substr(p + 1, semi - p - 1);
    if (e == "amp" || e == "lt" || e == "gt" || e == "quot" || e == "apos") return true;
    if (e.size() > 1 && e[0] == '#') {
      for (size_t k = 1; k < e.size(); ++k)
        if (!std::isxdigit(static_cast<unsigned char>(e[k])) && !(k == 1 && e[k] == 'x')) return false;
      return true;
    }
    return false;
  };
  if (s.rfind("<?xml", 0) == 0) {
    i = s.find("?>");
    if (i == std::string::npos) return "unterminated XML declaration";
    i += 2;
  }
  while (i < s.size()) {
    if (s[i] == '<') {
      if (s.compare(i, 4, "<!--") == 0) {
        const size_t e = s.find("-->", i);
        if (e == std::string::npos) return "unterminated comment";
        i = e + 3;
        continue;
      }
      if (s.compare(i, 2, "</") == 0) {
        size_t p = i + 2;
        const std::string n = name_at(p);
        if (open.empty() || open.back() != n) return "closing </" + n + "> does not match";
        open.pop_back();
        while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
        if (p >= s.size() || s[p] != '>') return "bad closing tag " + n;
        i = p + 1;
        continue;
      }
      size_t p = i + 1;
      const std::string n = name_at(p);
      if (n.empty()) return "a tag without a name at " + std::to_string(i);
      if (open.empty() && roots++ > 0) return "more than one root element";
      for (;;) {
        while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
        if (p >= s.size()) return "unterminated tag " + n;
        if (s[p] == '>') {
          open.push_back(n);
          ++p;
          break;
        }
        if (s.compare(p, 2, "/>") == 0) {
          p += 2;
          break;
        }
        const std::string attr = name_at(p);
        if (attr.empty() || p >= s.size() || s[p] != '=') return "bad attribute in <" + n + ">";
        ++p;
        if (p >= s.size() || (s[p] != '"' && s[p] != '\'')) return "unquoted attribute " + attr;
        const char q = s[p];
        const size_t end = s.find(q, p + 1);
        if (end == std::string::npos) return "unterminated attribute " + attr;
        for (size_t k = p + 1; k < end; ++k) {
          if (s[k] == '<') return "'<' inside attribute " + attr;
          if (s[k] == '&' && !entity_ok(k)) return "bad entity in attribute " + attr;
        }
        p = end + 1;
      }
      i = p;
      continue;
    }
    if (s[i] == '&' && !entity_ok(i)) return "bad entity at " + std::to_string(i);
    if (open.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return "text outside the root element";
    ++i;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots != 1) return "no root element";
  return "";
}

}  // namespace ember::bench::test
