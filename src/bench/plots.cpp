#include "bench/plots.h"

#include <filesystem>
#include <limits>

#include "bench/report.h"
#include "bench/svg_chart.h"

namespace ember::bench {

using json = nlohmann::json;

namespace {

double value(const json& row, const std::string& key) {
  if (!row.contains(key) || !row[key].is_number()) return std::numeric_limits<double>::quiet_NaN();
  return row[key].get<double>();
}

// One series per server from the rows of scenario `id`: (x_key, y_key).
std::vector<Series> row_series(const Suite& suite, const std::string& id, const std::string& x_key, const std::string& y_key) {
  std::vector<Series> out;
  for (const TargetResult& tr : suite.results()) {
    auto it = tr.scenarios.find(id);
    if (it == tr.scenarios.end() || it->second.rows.empty()) continue;
    Series s;
    s.name = tr.target.name;
    for (const json& row : it->second.rows) {
      s.x.push_back(value(row, x_key));
      s.y.push_back(value(row, y_key));
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool has_values(const std::vector<Series>& ss) {
  for (const Series& s : ss)
    for (double y : s.y)
      if (std::isfinite(y)) return true;
  return false;
}

std::string model_suffix(const Suite& suite) {
  return suite.facts().name.empty() ? std::string() : " (" + suite.facts().name + ")";
}

}  // namespace

std::vector<std::string> write_plots(const Suite& suite, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> written;
  auto save = [&](const std::string& name, const Chart& c) {
    if (!has_values(c.series)) return;
    const std::string path = (std::filesystem::path(dir) / name).string();
    write_text_file(path, render_svg(c));
    written.push_back(path);
  };
  const std::string model = model_suffix(suite);

  {
    Chart c;
    c.title = "S2: aggregate decode throughput" + model;
    c.x_label = "clients at once";
    c.y_label = "aggregate tok/s";
    c.log2_x = true;
    c.series = row_series(suite, "S2", "clients", "aggregate_tps");
    save("s2_aggregate_tps.svg", c);
    c.title = "S2: slowest request's completion time" + model;
    c.y_label = "seconds";
    c.series = row_series(suite, "S2", "clients", "slowest_s");
    save("s2_slowest.svg", c);
  }
  {
    Chart c;
    c.title = "S3: cold prefill time vs prompt length" + model;
    c.x_label = "prompt tokens";
    c.y_label = "prefill seconds";
    c.series = row_series(suite, "S3", "prompt_tokens", "prefill_s");
    save("s3_prefill.svg", c);
  }
  {
    Chart c;
    c.title = "S5: prefill of each request, A -> A -> B -> A" + model;
    c.x_label = "request";
    c.y_label = "prefill seconds (time to first token)";
    const int rounds = suite.plan().rounds;
    const char* names[] = {"A", "A", "B", "A"};
    for (int r = 0; r < rounds; ++r) {
      for (int k = 0; k < 4; ++k) c.x_ticks.push_back({double(r * 4 + k + 1), names[k]});
      c.x_groups.push_back({r * 4 + 2.5, "round " + std::to_string(r + 1)});
      if (r > 0) c.x_separators.push_back(r * 4 + 0.5);
    }
    for (const TargetResult& tr : suite.results()) {
      auto it = tr.scenarios.find("S5");
      if (it == tr.scenarios.end()) continue;
      Series s;
      s.name = tr.target.name;
      int i = 0;
      for (const Sample& smp : it->second.samples) {
        ++i;
        s.x.push_back(double((smp.round - 1) * 4 + ((i - 1) % 4) + 1));
        s.y.push_back(smp.r.ok() ? (smp.r.ttft() >= 0 ? smp.r.ttft() : smp.r.end) : std::numeric_limits<double>::quiet_NaN());
      }
      c.series.push_back(std::move(s));
    }
    save("s5_sessions.svg", c);
  }
  {
    Chart c;
    c.title = "S8: decode speed vs context" + model;
    c.x_label = "context (tokens before decoding)";
    c.y_label = "decode tok/s";
    c.series = row_series(suite, "S8", "context", "decode_tps");
    std::vector<Series> roof = row_series(suite, "S8", "context", "roofline_tps");
    if (!roof.empty() && has_values({roof[0]})) {
      roof[0].name = "roofline";
      roof[0].dashed = true;
      roof[0].markers = false;
      c.series.push_back(roof[0]);
    }
    save("s8_decode.svg", c);
  }
  return written;
}

}  // namespace ember::bench
