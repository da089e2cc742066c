// A small SVG line chart: axes with ticks and labels, grid, one polyline
// with point markers per series, a legend, a title. Self-made (no plotting
// library), valid standalone XML.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace ember::bench {

struct Series {
  std::string name;
  std::vector<double> x, y;  // a NaN y leaves a gap
  bool dashed = false;
  bool markers = true;
};

struct Chart {
  std::string title, x_label, y_label;
  bool log2_x = false;                                  // ticks at powers of two (client counts)
  std::vector<std::pair<double, std::string>> x_ticks;  // when set: these ticks instead of computed ones
  std::vector<std::pair<double, std::string>> x_groups; // labels under the ticks, centred at x (e.g. "round 1")
  std::vector<double> x_separators;                     // dashed vertical lines (between groups)
  std::vector<Series> series;
  int width = 760, height = 440;
};

std::string render_svg(const Chart& c);

// "&<>\"'" escaped for XML text and attributes.
std::string xml_escape(const std::string& s);

// Tick positions for [lo, hi]: a step of 1, 2 or 5 times a power of ten, about `n` of them.
std::vector<double> nice_ticks(double lo, double hi, int n = 5);

// 1536 -> "1.5K", 131072 -> "128K" (K = 1024, as contexts are counted), else plain.
std::string compact_count(double v);

}  // namespace ember::bench
