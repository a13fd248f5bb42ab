// `ralp report`: one Markdown report, with tables and gnuplot plots, from the JSON documents of
// `ralp simulate --json`, `ralp sweep`, `ralp place --json` and `ralp validate`.
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "ralp/reports/results_report.hpp"

namespace ralp::cli {
namespace {

struct ReportCommandOptions {
  std::vector<std::string> results;
  std::string out;
  bool quiet = false;
};

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ReportCommandOptions>();
  auto* sub = app.add_subcommand(
      "report",
      "Write a Markdown report with tables and plots from result files.\n"
      "Reads, in any mix and order, the JSON of `ralp simulate --json` (a scenario's results), "
      "`ralp sweep` (DIR/sweep.json), `ralp place --json` and `ralp validate` "
      "(DIR/validation.json); each file's kind is told from its fields. Writes DIR/report.md, one "
      "section per input with its tables, and beside it each plot as SVG and PNG with its data "
      "(.dat) and gnuplot script (.gp): speedup against workers per bandwidth and strategy "
      "(sweep), the step-time breakdown into compute / communication / waiting and the traffic "
      "per host (simulate), step time against the cut (simulate's cut search, place's ranking) "
      "and predicted against measured with the y = x line (validate). Without gnuplot the report "
      "is written with its tables and says that plots were skipped. The same inputs give the same "
      "report.md and SVG bytes.");
  sub->add_option("results", options->results, "Result files (JSON)")->required();
  sub->add_option("--out", options->out, "Folder to write report.md and the plots into (created)")
      ->required();
  sub->add_flag("--quiet", options->quiet, "No progress lines on standard error");
  sub->callback([options, &action] {
    action = [options] {
      std::vector<reports::ResultDocument> documents;
      for (const std::string& file : options->results) {
        documents.push_back(reports::read_result_document(file));
      }
      std::error_code ec;
      std::filesystem::create_directories(options->out, ec);
      if (ec || !std::filesystem::is_directory(options->out)) {
        throw InputError("", "--out",
                         "names " + options->out + ", which cannot be made a folder" +
                             (ec ? " (" + ec.message() + ")" : std::string()));
      }
      const auto progress = [options](const std::string& line) {
        if (!options->quiet) std::cerr << line << '\n';
      };
      const reports::ReportOutcome outcome =
          reports::write_results_report(documents, options->out, progress);
      if (outcome.plots_skipped && !options->quiet) {
        std::cerr << "ralp report: plots skipped: " << *outcome.plots_skipped << '\n';
      }
      std::cout << (std::filesystem::path(options->out) / "report.md").string() << ": "
                << documents.size() << " input" << (documents.size() == 1 ? "" : "s") << ", "
                << outcome.plots.size() << " plot" << (outcome.plots.size() == 1 ? "" : "s")
                << '\n';
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
