// A small gnuplot driver: any plot as a data file and a script kept beside the SVG and PNG it
// draws, and the scatter of predicted against measured values with the y = x line and a band of
// +-`band_pct` around it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ralp::reports {

inline constexpr int kPlotWidthPx = 800;
inline constexpr int kPlotHeightPx = 600;

// A plot for gnuplot: `settings` (title, axes, styles) and `plot` (the plot command, which names
// its data file as the gnuplot variable `data`) drawn at `width_px` x `height_px`.
struct GnuplotFigure {
  std::string data;      // the data file's contents
  std::string settings;  // commands before the plot command, each line ending in '\n'
  std::string plot;      // the plot command without "plot "
  int width_px = kPlotWidthPx;
  int height_px = kPlotHeightPx;
  bool enhanced = true;  // gnuplot's enhanced text ('_' subscripts, '^' superscripts, '@')
};

// The script: `data` set to the data file's name, the settings, then the plot drawn into `svg`
// (SVG terminal) and `png` (pngcairo). Pure: same figure, same bytes.
std::string figure_script(const GnuplotFigure& figure, const std::string& data,
                          const std::string& svg, const std::string& png);

// Writes BASE.dat and BASE.gp and runs gnuplot on it (in BASE's folder, with file names relative
// to it) to make BASE.svg and BASE.png. Returns why the plot could not be drawn (gnuplot missing
// or failing) in one line, or nullopt on success. Throws std::runtime_error when a file cannot be
// written.
std::optional<std::string> write_plot(const GnuplotFigure& figure, const std::filesystem::path& base);

// Why gnuplot cannot be run here ("gnuplot not found (install gnuplot-nox)"), or nullopt.
std::optional<std::string> gnuplot_problem();

// `text` as a gnuplot string literal.
std::string gnuplot_quoted(const std::string& text);

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
