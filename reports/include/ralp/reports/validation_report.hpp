// The Markdown report of a validation run (`ralp validate`): the accuracy per strategy against the
// target, a predicted-against-measured plot, the calibration it used and every grid point. It
// reads the run's JSON document (`ralp validate --json`), so a report can be rebuilt from it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "ralp/core/json_input.hpp"
#include "ralp/reports/gnuplot.hpp"

namespace ralp::reports {

// Predicted against measured step times, one series per strategy kind, in milliseconds.
ScatterPlot validation_plot(const Json& run);

// The report's text; it shows `plot` (a file name beside the report, without extension) as SVG,
// or says `plot_problem` instead when the plot could not be drawn. Throws InputError naming
// "validation results" and the JSON path for a malformed document.
std::string validation_markdown(const Json& run, const std::string& plot,
                                const std::optional<std::string>& plot_problem);

// Writes FOLDER/report.md and FOLDER/predicted-vs-measured.{dat,gp,svg,png}. Returns the plot's
// problem (gnuplot missing) or nullopt.
std::optional<std::string> write_validation_report(const Json& run,
                                                   const std::filesystem::path& folder);

}  // namespace ralp::reports
