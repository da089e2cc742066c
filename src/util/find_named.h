// Looking up an entry of a fixed table by its `name`, with an error that lists
// the valid names (presets, quant mixes, architectures).
#pragma once
#include <string>
#include <vector>

#include "util/error.h"

namespace ember {

template <class T>
const T& find_named(const std::vector<T>& table, const std::string& name, const char* what) {
  std::string names;
  for (const T& e : table) {
    if (e.name == name) return e;
    names += (names.empty() ? "" : ", ") + e.name;
  }
  throw Error("unknown " + std::string(what) + " '" + name + "' (available: " + names + ")");
}

}  // namespace ember
