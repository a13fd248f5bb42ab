// `ralp report`: one Markdown report, with tables and gnuplot plots, from the JSON documents of
// `ralp simulate --json`, `ralp sweep`, `ralp place --json` and `ralp validate`; and its pivot and
// summary tables of sweep results and tables.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "ralp/reports/pivot.hpp"
#include "ralp/reports/results_report.hpp"

namespace ralp::cli {
namespace {

using reports::CellStyle;
using reports::NumberFormat;
using reports::parse_field_column;
using reports::parse_record_input;
using reports::parse_reference;
using reports::parse_selection;
using reports::parse_statistic;
using reports::pivot_table;
using reports::PivotSpec;
using reports::read_records;
using reports::RecordInput;
using reports::RecordSet;
using reports::Reference;
using reports::render_table;
using reports::ReportTable;
using reports::Selection;
using reports::split_keyed;
using reports::summary_table;
using reports::SummarySpec;
using reports::TableFormat;

struct ReportCommandOptions {
  std::vector<std::string> results;
  std::string out;
  bool quiet = false;
};

// The options `ralp report pivot` and `ralp report summary` share: the inputs, their file axis,
// the selections, the headings and the output form.
struct RecordOptions {
  std::vector<std::string> inputs;
  std::string file_axis = "file";
  std::vector<std::string> where;
  std::string relative_to;
  std::string difference_from;
  std::vector<std::string> headers;
  std::string as = "markdown";
};

struct PivotOptions : RecordOptions {
  std::vector<std::string> fields;
  std::vector<std::string> rows;
  std::vector<std::string> columns;
  std::vector<std::string> formats;
  std::vector<std::string> divides;
  std::string missing = "-";
};

struct SummaryOptions : RecordOptions {
  std::string field;
  std::string label;
  std::vector<std::string> rows;
  std::vector<std::string> along;
  std::vector<std::string> statistics;
  std::string format;
};

// Markdown shows numbers readably by default; the machine-read forms keep every digit.
constexpr const char* kMarkdownFormat = "{:.4g}";

constexpr const char* kRecordsHelp =
    "Records: a sweep (its sweep.json or sweep.csv) gives one per point and strategy: the\n"
    "sweep's axes (workers, bandwidth, batch, device, parameter_servers, latency), strategy, kind\n"
    "and cut are axes; the results' numbers are fields: step_time_mean_s, step_time_median_s,\n"
    "step_time_spread_s, images_per_s, speedup_vs_ps, speedup_vs_allreduce, ps_busy_s,\n"
    "worker_mean.compute_s, worker_mean.communication_s, worker_mean.waiting_s. A table (.csv,\n"
    "or .tsv as jq's @tsv writes it) gives one per line after its header; each column is both.\n"
    "Every input adds the file axis (--file-axis), whose value is LABEL in LABEL=PATH, else the\n"
    "path: `--file-axis model vgg16=a/sweep.json resnet50=b/sweep.json` makes a model axis.\n"
    "\n"
    "Rows (and columns) come in the order their values first appear in the inputs.\n"
    "--where AXIS=V1,V2 keeps the records whose AXIS is V1 or V2; several --where must all hold.\n"
    "--relative-to AXIS=VALUE divides each value by that of the record alike on the axes of the\n"
    "rows, columns (or --along) but with AXIS=VALUE, and leaves the records at VALUE out;\n"
    "--difference-from subtracts it instead.\n"
    "\n"
    "FORMAT: TEXT{SPEC}TEXT, SPEC empty (the shortest exact digits) or :[+][.N]T, T one of f, e,\n"
    "g or % (times 100, then %): \"{:.2f}x\", \"{:+.1%}\". Markdown defaults to {:.4g}, the\n"
    "other forms to {}. --header NAME=TEXT names a column; for a --columns axis, {} in TEXT\n"
    "stands for each value (workers: \"{} w\"). The same inputs and options give the same bytes.\n"
    "\n";

void add_record_options(CLI::App& sub, RecordOptions& o) {
  sub.add_option("inputs", o.inputs,
                 "Sweeps (sweep.json, sweep.csv) and tables (.csv, .tsv): [LABEL=]PATH")
      ->required();
  sub.add_option("--file-axis", o.file_axis, "The axis whose value is each input's LABEL or path")
      ->capture_default_str();
  sub.add_option("--where", o.where, "AXIS=VALUE[,VALUE...]: keep only such records (repeatable)");
  sub.add_option("--relative-to", o.relative_to,
                 "AXIS=VALUE: divide by the value at AXIS=VALUE (see below)");
  sub.add_option("--difference-from", o.difference_from,
                 "AXIS=VALUE: subtract the value at AXIS=VALUE (see below)");
  sub.add_option("--header", o.headers,
                 "NAME=TEXT: a row axis's or column's heading (repeatable; see below)");
}

RecordSet read_inputs(const RecordOptions& o) {
  std::vector<RecordInput> inputs;
  for (const std::string& text : o.inputs) inputs.push_back(parse_record_input(text));
  return read_records(inputs, o.file_axis);
}

std::vector<Selection> selections(const RecordOptions& o) {
  std::vector<Selection> out;
  for (const std::string& w : o.where) out.push_back(parse_selection(w, "--where"));
  return out;
}

std::optional<Reference> reference(const RecordOptions& o) {
  if (!o.relative_to.empty() && !o.difference_from.empty()) {
    throw InputError("", "--relative-to", "and --difference-from are both given, expected one");
  }
  if (!o.relative_to.empty()) return parse_reference(o.relative_to, "--relative-to", true);
  if (!o.difference_from.empty()) {
    return parse_reference(o.difference_from, "--difference-from", false);
  }
  return std::nullopt;
}

std::pair<std::string, std::string> keyed(const std::string& text, const std::string& option,
                                          const char* expected) {
  const auto pair = split_keyed(text);
  if (!pair || pair->first.empty()) {
    throw InputError("", option, "is \"" + text + "\", expected " + expected);
  }
  return *pair;
}

std::map<std::string, std::string> headings(const RecordOptions& o) {
  std::map<std::string, std::string> out;
  for (const std::string& h : o.headers) out.insert(keyed(h, "--header", "NAME=TEXT"));
  return out;
}

TableFormat table_format(const std::string& as) {
  if (as == "csv") return TableFormat::csv;
  if (as == "tsv") return TableFormat::tsv;
  if (as == "dat") return TableFormat::dat;
  return TableFormat::markdown;
}

// --format FORMAT or NAME=FORMAT: keyed when an '=' outside [...] comes before the first '{'.
void read_formats(const PivotOptions& o, CellStyle& style) {
  style.format = NumberFormat::parse(o.as == "markdown" ? kMarkdownFormat : "{}", "--format");
  for (const std::string& text : o.formats) {
    const auto pair = split_keyed(text);
    if (pair && !pair->first.empty() && pair->first.find('{') == std::string::npos) {
      style.formats[pair->first] = NumberFormat::parse(pair->second, "--format " + pair->first);
    } else {
      style.format = NumberFormat::parse(text, "--format");
    }
  }
  for (const std::string& text : o.divides) {
    const auto [name, number] = keyed(text, "--divide", "NAME=NUMBER");
    size_t used = 0;
    double divisor = 0.0;
    try {
      divisor = std::stod(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != number.size() || divisor == 0.0 || !std::isfinite(divisor)) {
      throw InputError("", "--divide " + name,
                       "is \"" + number + "\", expected a number other than 0");
    }
    style.divisors[name] = divisor;
  }
}

int run_pivot(const PivotOptions& o) {
  const RecordSet set = read_inputs(o);
  PivotSpec spec;
  for (const std::string& f : o.fields) spec.fields.push_back(parse_field_column(f, "--field"));
  spec.rows = o.rows;
  spec.columns = o.columns;
  spec.where = selections(o);
  spec.reference = reference(o);
  spec.style.headers = headings(o);
  read_formats(o, spec.style);
  spec.missing = o.missing;
  std::cout << render_table(pivot_table(set, spec), table_format(o.as));
  return kExitOk;
}

int run_summary(const SummaryOptions& o) {
  const RecordSet set = read_inputs(o);
  SummarySpec spec;
  spec.field = o.field;
  spec.label = o.label;
  spec.rows = o.rows;
  spec.along = o.along;
  for (const std::string& s : o.statistics) spec.statistics.push_back(parse_statistic(s, "--stat"));
  spec.where = selections(o);
  spec.reference = reference(o);
  spec.headers = headings(o);
  const std::string fallback = o.as == "markdown" ? kMarkdownFormat : "{}";
  spec.format = NumberFormat::parse(o.format.empty() ? fallback : o.format, "--format");
  const ReportTable table = summary_table(set, spec);
  if (o.as == "value") {
    if (table.rows.size() != 1 || table.header.size() != 1) {
      throw InputError("", "--as", "is value, which needs one --stat and no --rows");
    }
    std::cout << table.rows[0][0] << '\n';
  } else {
    std::cout << render_table(table, table_format(o.as));
  }
  return kExitOk;
}

void add_pivot_command(CLI::App& report, Action& action) {
  auto o = std::make_shared<PivotOptions>();
  auto* sub = report.add_subcommand(
      "pivot", "Print one field of sweep results or table lines by rows and columns of their axes");
  add_record_options(*sub, *o);
  sub->add_option("--field", o->fields,
                  "The field in the cells; several without --columns (see below)")
      ->required();
  sub->add_option("--rows", o->rows, "Axes whose values make the rows (comma-separated)")
      ->delimiter(',');
  sub->add_option("--columns", o->columns, "Axes whose values make the columns (comma-separated)")
      ->delimiter(',');
  sub->add_option("--format", o->formats,
                  "FORMAT of the numbers, or NAME=FORMAT of one column's (repeatable)");
  sub->add_option("--divide", o->divides,
                  "NAME=NUMBER: divide one column's numbers by NUMBER (repeatable)");
  sub->add_option("--missing", o->missing, "What a cell no record fills shows")
      ->capture_default_str();
  sub->add_option("--as", o->as, "markdown, csv, tsv or dat (gnuplot data)")
      ->check(CLI::IsMember({"markdown", "csv", "tsv", "dat"}))
      ->capture_default_str();
  sub->footer(
      std::string(kRecordsHelp) +
      "Cells: with --columns, one --field fills the cell of each row and column; a cell no\n"
      "record fills shows --missing, and one that several fill is an error naming the axes\n"
      "they differ in. Without --columns, each --field is a column, and FIELD[AXIS=VALUE,...]\n"
      "takes the field from the row's record with those values: ps0_in[strategy=ps].\n"
      "--as dat writes gnuplot data: the header as a # comment, values separated by spaces.\n"
      "\n"
      "Example (speedup of ralp over ps, per model and bandwidth, by workers):\n"
      "  ralp report pivot --file-axis model vgg16=a/sweep.json resnet50=b/sweep.json \\\n"
      "      --field speedup_vs_ps --rows model,bandwidth --columns workers \\\n"
      "      --where kind=ralp --format '{:.2f}x'\n");
  sub->callback([o, &action] { action = [o] { return run_pivot(*o); }; });
}

void add_summary_command(CLI::App& report, Action& action) {
  auto o = std::make_shared<SummaryOptions>();
  auto* sub = report.add_subcommand(
      "summary", "Print statistics of one field of sweep results or table lines, per row");
  add_record_options(*sub, *o);
  sub->add_option("--field", o->field, "The field the statistics are of (numbers)");
  sub->add_option("--label", o->label, "Names the field in headings (default: its name)");
  sub->add_option("--rows", o->rows, "Axes whose values make the rows (comma-separated)")
      ->delimiter(',');
  sub->add_option("--along", o->along, "Axes that order each row's records (comma-separated)")
      ->delimiter(',');
  sub->add_option("--stat", o->statistics, "Statistics (comma-separated, repeatable; see below)")
      ->delimiter(',')
      ->required();
  sub->add_option("--format", o->format, "FORMAT of values and thresholds");
  sub->add_option("--as", o->as, "markdown, csv, tsv, dat, or value (the one cell alone)")
      ->check(CLI::IsMember({"markdown", "csv", "tsv", "dat", "value"}))
      ->capture_default_str();
  sub->footer(
      std::string(kRecordsHelp) +
      "Statistics, over each row's records in --along order: count (records with a\n"
      "value), min, max, absmax (largest absolute value), first and last (the values at\n"
      "the ends of --along), argmin and argmax (the --along values of the smallest and\n"
      "the largest; ties: the first), count OP T (how many compare so with T), first OP T\n"
      "(the first --along value where the field does, else never), all OP T (every such\n"
      "--along value, else none). Without --field, count counts records.\n"
      "\n"
      "Example (where ralp first reaches 13x over ps, and its largest speedup):\n"
      "  ralp report summary --file-axis model vgg16=a/sweep.json resnet50=b/sweep.json \\\n"
      "      --field speedup_vs_ps --where kind=ralp --rows model,bandwidth \\\n"
      "      --along workers --stat max,argmax,'first>=13' --format '{:.2f}x'\n");
  sub->callback([o, &action] { action = [o] { return run_summary(*o); }; });
}

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
      "report.md and SVG bytes. `ralp report pivot` and `ralp report summary` print tables of "
      "sweep results instead (see their --help).");
  sub->add_option("results", options->results, "Result files (JSON)");
  sub->add_option("--out", options->out, "Folder to write report.md and the plots into (created)");
  sub->add_flag("--quiet", options->quiet, "No progress lines on standard error");
  add_pivot_command(*sub, action);
  add_summary_command(*sub, action);
  sub->callback([options, &action, sub] {
    if (!sub->get_subcommands().empty()) return;  // pivot or summary set the action
    if (options->results.empty()) {
      throw InputError("", "results", "are missing, expected at least one result file");
    }
    if (options->out.empty()) {
      throw InputError("", "--out", "is missing, expected the folder to write report.md into");
    }
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
