#include "bench/svg_chart.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace ember::bench {

namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string f1(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f", v);
  return b;
}

std::string tick_label(double v, double step) {
  char b[32];
  if (step >= 1 || v == 0) std::snprintf(b, sizeof(b), "%.0f", v);
  else std::snprintf(b, sizeof(b), "%.*f", int(std::ceil(-std::log10(step) - 1e-9)), v);
  return b;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int n) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(n, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string compact_count(double v) {
  char b[32];
  const double k = v / 1024;
  if (v >= 1024 && std::abs(k - std::round(k)) < 1e-9) std::snprintf(b, sizeof(b), "%.0fK", k);
  else if (v >= 1024 && std::abs(k * 10 - std::round(k * 10)) < 1e-9) std::snprintf(b, sizeof(b), "%.1fK", k);
  else std::snprintf(b, sizeof(b), "%.0f", v);
  return b;
}

std::string render_svg(const Chart& c) {
  const double left = 80, right = 190, top = 50, bottom = c.x_groups.empty() ? 60 : 78;
  const double pw = c.width - left - right, ph = c.height - top - bottom;
  // Data ranges.
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = 0;
  for (const Series& s : c.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (c.log2_x && s.x[i] <= 0) continue;
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      if (std::isfinite(s.y[i])) ymax = std::max(ymax, s.y[i]);
    }
  for (const auto& [x, label] : c.x_ticks) {
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
  }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1;
  if (ymax <= 0) ymax = 1;
  std::vector<double> yt = nice_ticks(0, ymax * 1.05);
  const double ytop = std::max(yt.back(), ymax);
  const double ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;
  // x transform.
  double x0 = xmin, x1 = xmax;
  std::vector<std::pair<double, std::string>> xt = c.x_ticks;
  if (c.log2_x) {
    x0 = std::floor(std::log2(xmin));
    x1 = std::ceil(std::log2(xmax));
    if (x1 <= x0) x1 = x0 + 1;
    if (xt.empty()) {
      const int every = x1 - x0 > 10 ? 2 : 1;
      for (double e = x0; e <= x1; e += every) xt.push_back({std::pow(2.0, e), compact_count(std::pow(2.0, e))});
    }
  } else {
    if (!c.x_ticks.empty()) {
      x0 = xmin - 0.5;
      x1 = xmax + 0.5;
    } else {
      x0 = std::min(0.0, xmin);
      std::vector<double> t = nice_ticks(x0, xmax);
      x1 = std::max(t.back(), xmax);
      for (double v : t) xt.push_back({v, xmax >= 4096 ? compact_count(v) : tick_label(v, t.size() > 1 ? t[1] - t[0] : 1)});
    }
    if (x1 <= x0) x1 = x0 + 1;
  }
  auto px = [&](double x) { return left + pw * ((c.log2_x ? std::log2(x) : x) - x0) / (x1 - x0); };
  auto py = [&](double y) { return top + ph * (1 - y / ytop); };

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(c.width) + "\" height=\"" +
       std::to_string(c.height) + "\" viewBox=\"0 0 " + std::to_string(c.width) + " " + std::to_string(c.height) +
       "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(c.width) + "\" height=\"" + std::to_string(c.height) +
       "\" fill=\"white\"/>\n";
  s += "<text x=\"" + f1(left + pw / 2) + "\" y=\"28\" font-size=\"16\" text-anchor=\"middle\" font-weight=\"bold\">" +
       xml_escape(c.title) + "</text>\n";
  // Grid and y ticks.
  s += "<g font-size=\"11\" fill=\"#333\">\n";
  for (double v : yt) {
    if (v > ytop + 1e-12) continue;
    const std::string y = f1(py(v));
    s += "<line x1=\"" + f1(left) + "\" y1=\"" + y + "\" x2=\"" + f1(left + pw) + "\" y2=\"" + y +
         "\" stroke=\"#e5e5e5\" stroke-width=\"1\"/>\n";
    s += "<text x=\"" + f1(left - 6) + "\" y=\"" + f1(py(v) + 4) + "\" text-anchor=\"end\">" + xml_escape(tick_label(v, ystep)) +
         "</text>\n";
  }
  for (const auto& [v, label] : xt) {
    const double x = px(v);
    if (x < left - 0.5 || x > left + pw + 0.5) continue;
    s += "<line x1=\"" + f1(x) + "\" y1=\"" + f1(top + ph) + "\" x2=\"" + f1(x) + "\" y2=\"" + f1(top + ph + 5) +
         "\" stroke=\"#333\"/>\n";
    s += "<text x=\"" + f1(x) + "\" y=\"" + f1(top + ph + 18) + "\" text-anchor=\"middle\">" + xml_escape(label) + "</text>\n";
  }
  for (const auto& [v, label] : c.x_groups)
    s += "<text x=\"" + f1(px(v)) + "\" y=\"" + f1(top + ph + 34) + "\" text-anchor=\"middle\" fill=\"#666\">" +
         xml_escape(label) + "</text>\n";
  s += "</g>\n";
  for (double v : c.x_separators)
    s += "<line x1=\"" + f1(px(v)) + "\" y1=\"" + f1(top) + "\" x2=\"" + f1(px(v)) + "\" y2=\"" + f1(top + ph) +
         "\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>\n";
  // Axes and their labels.
  s += "<line x1=\"" + f1(left) + "\" y1=\"" + f1(top + ph) + "\" x2=\"" + f1(left + pw) + "\" y2=\"" + f1(top + ph) +
       "\" stroke=\"#333\" stroke-width=\"1.2\"/>\n";
  s += "<line x1=\"" + f1(left) + "\" y1=\"" + f1(top) + "\" x2=\"" + f1(left) + "\" y2=\"" + f1(top + ph) +
       "\" stroke=\"#333\" stroke-width=\"1.2\"/>\n";
  s += "<text x=\"" + f1(left + pw / 2) + "\" y=\"" + f1(c.height - 12) + "\" font-size=\"13\" text-anchor=\"middle\">" +
       xml_escape(c.x_label) + "</text>\n";
  s += "<text transform=\"translate(20 " + f1(top + ph / 2) + ") rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">" +
       xml_escape(c.y_label) + "</text>\n";
  // Series.
  for (size_t k = 0; k < c.series.size(); ++k) {
    const Series& sr = c.series[k];
    const std::string color = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string points;
    auto flush = [&] {
      if (points.find(' ') != std::string::npos)
        s += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"" +
             (sr.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points + "\"/>\n";
      points.clear();
    };
    for (size_t i = 0; i < sr.x.size() && i < sr.y.size(); ++i) {
      if (!std::isfinite(sr.y[i]) || (c.log2_x && sr.x[i] <= 0)) {
        flush();
        continue;
      }
      if (!points.empty()) points += ' ';
      points += f1(px(sr.x[i])) + "," + f1(py(sr.y[i]));
    }
    flush();
    if (sr.markers)
      for (size_t i = 0; i < sr.x.size() && i < sr.y.size(); ++i) {
        if (!std::isfinite(sr.y[i]) || (c.log2_x && sr.x[i] <= 0)) continue;
        char tip[96];
        std::snprintf(tip, sizeof(tip), "%g, %.4g", sr.x[i], sr.y[i]);
        s += "<circle cx=\"" + f1(px(sr.x[i])) + "\" cy=\"" + f1(py(sr.y[i])) + "\" r=\"3.5\" fill=\"" + color +
             "\"><title>" + xml_escape(sr.name + ": " + tip) + "</title></circle>\n";
      }
  }
  // Legend, right of the plot.
  const double lx = left + pw + 16;
  for (size_t k = 0; k < c.series.size(); ++k) {
    const std::string color = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    const double ly = top + 10 + 20 * double(k);
    s += "<line x1=\"" + f1(lx) + "\" y1=\"" + f1(ly) + "\" x2=\"" + f1(lx + 22) + "\" y2=\"" + f1(ly) + "\" stroke=\"" + color +
         "\" stroke-width=\"2\"" + (c.series[k].dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
    s += "<text x=\"" + f1(lx + 28) + "\" y=\"" + f1(ly + 4) + "\" font-size=\"12\">" + xml_escape(c.series[k].name) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace ember::bench
