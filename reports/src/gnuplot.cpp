// The gnuplot driver: a script and a data file, then gnuplot run on them as a child process.
#include "ralp/reports/gnuplot.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

namespace ralp::reports {
namespace {

// The axes reach this far beyond the data on each side (a factor on log axes).
constexpr double kMargin = 1.15;

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string number(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Runs `command` through the shell; why it failed in one line, or nullopt.
std::optional<std::string> run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "cannot run gnuplot (install gnuplot-nox)";
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  if (status == 0) return std::nullopt;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return "gnuplot not found (install gnuplot-nox)";
  while (!output.empty() && output.back() == '\n') output.pop_back();
  const size_t nl = output.rfind('\n');
  return "gnuplot failed: " + (nl == std::string::npos ? output : output.substr(nl + 1));
}

// Runs gnuplot on `script` inside `folder`, so that the script's relative names resolve there.
std::optional<std::string> run_gnuplot(const std::filesystem::path& folder,
                                       const std::string& script) {
  // The folder is quoted for the shell; gnuplot then reads and writes names relative to it.
  std::string dir = "'";
  for (const char c : folder.string()) dir += c == '\'' ? std::string("'\\''") : std::string(1, c);
  dir += "'";
  return run_command("cd " + dir + " && gnuplot " + script);
}

}  // namespace

std::string scatter_data(const ScatterPlot& plot) {
  std::string s;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    if (i > 0) s += "\n\n";
    s += "# " + plot.series[i].title + "\n";
    for (const auto& [x, y] : plot.series[i].points) s += number(x) + " " + number(y) + "\n";
  }
  return s;
}

std::string scatter_script(const ScatterPlot& plot, const std::string& data, const std::string& svg,
                           const std::string& png) {
  double lo = std::numeric_limits<double>::max(), hi = 0.0;
  for (const auto& series : plot.series) {
    for (const auto& [x, y] : series.points) {
      lo = std::min({lo, x, y});
      hi = std::max({hi, x, y});
    }
  }
  if (hi <= 0.0) {
    lo = 0.1;
    hi = 1.0;
  }
  const double min = plot.log_scale ? lo / kMargin : std::max(0.0, lo - (hi - lo) * (kMargin - 1));
  const double max = plot.log_scale ? hi * kMargin : hi + (hi - lo) * (kMargin - 1);
  std::string s = "# " + plot.title + "\n";
  s += "set title " + quoted(plot.title) + "\n";
  s += "set xlabel " + quoted(plot.x_label) + "\nset ylabel " + quoted(plot.y_label) + "\n";
  if (plot.log_scale) s += "set logscale xy\n";
  s += "set xrange [" + number(min) + ":" + number(max) + "]\n";
  s += "set yrange [" + number(min) + ":" + number(max) + "]\n";
  s += "set size ratio -1\nset grid\nset key top left\n";
  std::string plots = "x title \"predicted = measured\" with lines lc rgb \"#444444\"";
  if (plot.band_pct > 0.0) {
    const std::string f = number(1.0 + plot.band_pct / 100.0);
    const std::string g = number(1.0 - plot.band_pct / 100.0);
    plots += ", x*" + f + " title \"+-" + number(plot.band_pct) +
             "%\" with lines dt 2 lc rgb \"#888888\", x*" + g +
             " notitle with lines dt 2 lc rgb \"#888888\"";
  }
  for (size_t i = 0; i < plot.series.size(); ++i) {
    plots += ", " + quoted(data) + " index " + std::to_string(i) + " using 1:2 title " +
             quoted(plot.series[i].title) + " with points pt " + std::to_string(7 + i % 6) +
             " ps 1.3";
  }
  s += "set terminal svg size " + std::to_string(kPlotWidthPx) + "," + std::to_string(kPlotHeightPx) +
       " dynamic\n";
  s += "set output " + quoted(svg) + "\nplot " + plots + "\n";
  s += "set terminal pngcairo size " + std::to_string(kPlotWidthPx) + "," + std::to_string(kPlotHeightPx) +
       "\n";
  s += "set output " + quoted(png) + "\nreplot\nset output\n";
  return s;
}

std::string figure_script(const GnuplotFigure& figure, const std::string& data,
                          const std::string& svg, const std::string& png) {
  const std::string size = " size " + std::to_string(figure.width_px) + "," +
                           std::to_string(figure.height_px);
  const std::string text = figure.enhanced ? "" : " noenhanced";
  std::string s = "data = " + quoted(data) + "\n" + figure.settings;
  s += "set terminal svg" + size + " dynamic" + text + "\n";
  s += "set output " + quoted(svg) + "\nplot " + figure.plot + "\n";
  s += "set terminal pngcairo" + size + text + "\n";
  s += "set output " + quoted(png) + "\nreplot\nset output\n";
  return s;
}

std::optional<std::string> write_plot(const GnuplotFigure& figure,
                                      const std::filesystem::path& base) {
  const std::filesystem::path folder = base.has_parent_path() ? base.parent_path() : ".";
  const std::string stem = base.filename().string();
  write_file(folder / (stem + ".dat"), figure.data);
  write_file(folder / (stem + ".gp"),
             figure_script(figure, stem + ".dat", stem + ".svg", stem + ".png"));
  return run_gnuplot(folder, stem + ".gp");
}

std::optional<std::string> write_scatter_plot(const ScatterPlot& plot,
                                              const std::filesystem::path& base) {
  const std::filesystem::path folder = base.has_parent_path() ? base.parent_path() : ".";
  const std::string stem = base.filename().string();
  write_file(folder / (stem + ".dat"), scatter_data(plot));
  write_file(folder / (stem + ".gp"),
             scatter_script(plot, stem + ".dat", stem + ".svg", stem + ".png"));
  return run_gnuplot(folder, stem + ".gp");
}

std::optional<std::string> gnuplot_problem() {
  return run_command("gnuplot --version");
}

std::string gnuplot_quoted(const std::string& text) { return quoted(text); }

}  // namespace ralp::reports
