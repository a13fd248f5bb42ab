// A small gnuplot driver: a scatter of predicted against measured values with the y = x line and
// a band of +-`band_pct` around it, written as SVG and PNG from one script that is kept beside them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ralp::reports {

struct ScatterSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;  // (x, y)
};

struct ScatterPlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_scale = true;
  double band_pct = 0.0;  // 0: no band
  std::vector<ScatterSeries> series;
};

// The gnuplot script that draws `plot` into `svg` and `png`, reading its data from `data`
// (one block per series, as write_scatter_data writes it). Pure: same plot, same bytes.
std::string scatter_script(const ScatterPlot& plot, const std::string& data, const std::string& svg,
                           const std::string& png);
// One block per series, blocks separated by two blank lines (gnuplot's `index`).
std::string scatter_data(const ScatterPlot& plot);

// Writes BASE.dat, BASE.gp and runs gnuplot on it (in BASE's folder, with file names relative to
// it) to make BASE.svg and BASE.png. Returns why it could not (gnuplot missing or failing) in one
// line, or nullopt on success.
std::optional<std::string> write_scatter_plot(const ScatterPlot& plot,
                                              const std::filesystem::path& base);

}  // namespace ralp::reports
