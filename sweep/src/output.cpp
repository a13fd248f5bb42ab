// The sweep's CSV, JSON Lines and JSON files, written in point order, and reading them back for
// --resume.
#include "ralp/sweep/output.hpp"

#include <charconv>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace ralp::sweep {
namespace {

const char* const kCsvFile = "sweep.csv";
const char* const kJsonlFile = "sweep.points.jsonl";
const char* const kJsonFile = "sweep.json";

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Splits one CSV line (without its newline) into fields, undoing csv_field's quoting.
std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string number(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value.get<double>());
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

std::string text(const Json& value) { return value.is_string() ? value.get<std::string>() : ""; }

Json axis_value(const std::string& axis, const std::string& value) {
  if (is_integer_axis(axis)) return std::stoll(value);
  return value;
}

// The complete lines of a file with the byte offset after each; a last line without its newline
// (a run stopped while writing) is left out.
std::vector<std::pair<std::string, std::streamoff>> complete_lines(const std::filesystem::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::vector<std::pair<std::string, std::streamoff>> out;
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t start = 0;
  while (true) {
    const size_t nl = all.find('\n', start);
    if (nl == std::string::npos) break;
    out.emplace_back(all.substr(start, nl - start), static_cast<std::streamoff>(nl + 1));
    start = nl + 1;
  }
  return out;
}

}  // namespace

std::string price_currency(const Json& training) {
  const Json& price = training.at("price_per_hour");
  const std::optional<Price> parsed =
      price.is_string() ? parse_price(price.get<std::string>()) : std::nullopt;
  return parsed ? parsed->currency : "";
}

std::string csv_header(const SweepSpec& spec) {
  std::string out = "point";
  for (const Axis* a : spec.point_axes()) out += "," + a->name;
  return out +
         ",strategy,kind,cut,step_time_mean_s,step_time_median_s,images_per_s,speedup_vs_ps,"
         "speedup_vs_allreduce,images_per_s_per_gpu,scaling_efficiency,time_to_train_s,"
         "billed_hosts,cost,currency";
}

std::string csv_rows(const SweepPoint& point, const Json& outcome) {
  std::string prefix = std::to_string(point.index);
  for (const auto& [axis, value] : point.values) {
    prefix.push_back(',');
    prefix.append(csv_field(value));
  }
  std::string out;
  const std::string currency = price_currency(outcome.at("training"));
  for (const Json& r : outcome.at("results")) {
    const std::string fields[] = {
        prefix,
        csv_field(text(r.at("strategy"))),
        csv_field(text(r.at("kind"))),
        csv_field(text(r.at("cut"))),
        number(r.at("step_time_mean_s")),
        number(r.at("step_time_median_s")),
        number(r.at("images_per_s")),
        number(r.at("speedup_vs_ps")),
        number(r.at("speedup_vs_allreduce")),
        number(r.at("images_per_s_per_gpu")),
        number(r.at("scaling_efficiency")),
        number(r.at("time_to_train_s")),
        number(r.at("billed_hosts")),
        number(r.at("cost")),
        r.at("cost").is_null() ? "" : currency};
    for (size_t i = 0; i < std::size(fields); ++i) {
      if (i > 0) out.push_back(',');
      out.append(fields[i]);
    }
    out.push_back('\n');
  }
  return out;
}

Json point_json(const SweepPoint& point, const Json& outcome) {
  Json values = Json::object();
  for (const auto& [axis, value] : point.values) values[axis] = axis_value(axis, value);
  return {{"index", point.index},
          {"values", std::move(values)},
          {"scenario", point.scenario.name},
          {"baseline", outcome.at("baseline")},
          {"training", outcome.at("training")},
          {"results", outcome.at("results")},
          {"verdict", outcome.at("verdict")}};
}

Json sweep_json(const SweepSpec& spec) {
  Json axes = Json::array();
  for (const Axis& a : spec.axes) {
    Json values = Json::array();
    for (const std::string& v : a.values) values.push_back(axis_value(a.name, v));
    axes.push_back({{"name", a.name}, {"values", std::move(values)}});
  }
  return {{"base", spec.base}, {"fidelity", spec.fidelity}, {"axes", std::move(axes)}};
}

std::vector<Json> read_finished_points(const std::filesystem::path& dir, const SweepSpec& spec,
                                       const std::vector<SweepPoint>& points) {
  const std::filesystem::path csv = dir / kCsvFile;
  const std::string csv_name = csv.string();
  std::error_code ec;
  if (!std::filesystem::exists(csv, ec)) return {};
  const auto lines = complete_lines(csv);
  const std::string header = csv_header(spec);
  if (lines.empty() || lines.front().first != header) {
    throw InputError(csv_name, "",
                     "has header \"" + (lines.empty() ? std::string() : lines.front().first) +
                         "\", but this sweep's is \"" + header +
                         "\"; expected the same sweep, or run without --resume");
  }
  // Complete points in the CSV: each point's rows, one per strategy, in point order.
  size_t csv_points = 0;
  size_t row = 1;
  const size_t columns = 1 + spec.point_axes().size();
  while (csv_points < points.size() && row < lines.size()) {
    const SweepPoint& p = points[csv_points];
    const size_t rows = p.scenario.strategies.size();
    if (row + rows > lines.size()) break;
    for (size_t k = 0; k < rows; ++k) {
      const std::vector<std::string> fields = csv_split(lines[row + k].first);
      std::vector<std::string> expected{std::to_string(p.index)};
      for (const auto& [axis, value] : p.values) expected.push_back(value);
      if (fields.size() < columns || !std::equal(expected.begin(), expected.end(), fields.begin())) {
        std::string found;
        for (size_t i = 0; i < std::min(columns, fields.size()); ++i) {
          found += (i == 0 ? "" : ",") + fields[i];
        }
        throw InputError(csv_name, "",
                         "line " + std::to_string(row + k + 1) + " starts \"" + found +
                             "\", but this sweep's point " + std::to_string(p.index) + " is \"" +
                             p.describe() + "\"; expected the same sweep, or run without --resume");
      }
    }
    row += rows;
    ++csv_points;
  }
  std::vector<Json> out;
  const auto jsonl = complete_lines(dir / kJsonlFile);
  for (size_t i = 0; i < std::min(csv_points, jsonl.size()); ++i) {
    Json entry;
    try {
      entry = Json::parse(jsonl[i].first);
    } catch (const Json::exception&) {
      break;
    }
    if (!entry.is_object() || entry.value("index", Json()) != Json(i)) break;
    const bool complete = entry.contains("results") && entry.contains("baseline") &&
                          entry.contains("training") && entry.contains("verdict");
    if (!complete) break;
    out.push_back(std::move(entry));
  }
  return out;
}

SweepWriter::SweepWriter(std::filesystem::path dir, const SweepSpec& spec,
                         const std::vector<SweepPoint>& points, std::vector<Json> finished)
    : dir_(std::move(dir)), spec_(spec), points_(points) {
  csv_.open(dir_ / kCsvFile, std::ios::binary | std::ios::trunc);
  jsonl_.open(dir_ / kJsonlFile, std::ios::binary | std::ios::trunc);
  if (!csv_ || !jsonl_) throw std::runtime_error("cannot write " + (dir_ / kCsvFile).string());
  csv_ << csv_header(spec_) << '\n';
  std::string csv;
  std::string jsonl;
  for (const Json& entry : finished) {
    const size_t index = entries_.size();
    Json outcome = {{"results", entry.at("results")},
                    {"baseline", entry.at("baseline")},
                    {"training", entry.at("training")},
                    {"verdict", entry.at("verdict")}};
    csv += csv_rows(points_.at(index), outcome);
    entries_.push_back(entry.dump());
    jsonl += entries_.back() + "\n";
  }
  append(csv, jsonl);
}

void SweepWriter::append(const std::string& csv, const std::string& jsonl) {
  // The JSON line first: a point in the CSV always has its JSON for --resume.
  jsonl_ << jsonl;
  jsonl_.flush();
  csv_ << csv;
  csv_.flush();
  if (!csv_ || !jsonl_) throw std::runtime_error("cannot write " + (dir_ / kCsvFile).string());
}

std::vector<Json> SweepWriter::entries() const {
  std::vector<Json> out;
  out.reserve(entries_.size());
  for (const std::string& text : entries_) out.push_back(Json::parse(text));
  return out;
}

void SweepWriter::add(size_t index, const Json& outcome) {
  if (index < entries_.size()) return;
  held_.emplace(index, outcome);
  std::string csv;
  std::string jsonl;
  while (!held_.empty() && held_.begin()->first == entries_.size()) {
    const SweepPoint& p = points_.at(entries_.size());
    csv += csv_rows(p, held_.begin()->second);
    entries_.push_back(point_json(p, held_.begin()->second).dump());
    jsonl += entries_.back() + "\n";
    held_.erase(held_.begin());
  }
  if (!csv.empty()) append(csv, jsonl);
}

void SweepWriter::finish() {
  if (entries_.size() != points_.size()) {
    throw std::logic_error("sweep: finish() before every point was written");
  }
  Json all = Json::array();
  for (const std::string& e : entries_) all.push_back(Json::parse(e));
  const Json document = {{"sweep", sweep_json(spec_)}, {"points", std::move(all)}};
  const std::filesystem::path target = dir_ / kJsonFile;
  const std::filesystem::path partial = dir_ / (std::string(kJsonFile) + ".partial");
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << document.dump(2) << '\n';
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + target.string());
  }
  std::filesystem::rename(partial, target);
}

}  // namespace ralp::sweep
