// Small helpers the benchmark programs share.
#pragma once
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace ember::bench {

// "1,2,4,8" -> {1, 2, 4, 8}
inline std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::stoi(item));
  return v;
}

// The middle value; for an even count the mean of the two middle ones (of two
// rounds, their mean, not the larger).
template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / T(2);
}

}  // namespace ember::bench
