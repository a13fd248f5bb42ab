// `ralp report` through the real binary, on real outputs made here: `ralp simulate --json` and
// `ralp place --json` of a small scenario, a sweep document assembled from `ralp simulate --json`
// runs at several worker counts and bandwidths, and the shipped example of `ralp validate`.
#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "../support/run_command.hpp"
#include "ralp/reports/result_io.hpp"
#include "ralp/reports/results_report.hpp"

namespace ralp::reports {
namespace {

namespace fs = std::filesystem;
using testing::ralp_binary;
using testing::read_file;
using testing::run_command;

const std::string kScenario = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";
const std::string kValidation =
    RALP_SOURCE_DIR "/reports/examples/validate-default/validation.json";

bool have_simulator() {
  return run_command(ralp_binary() + " simulate --help").out.find("not in this build") ==
         std::string::npos;
}
bool have_gnuplot() { return run_command("gnuplot --version").status == 0; }

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Inputs made once for the suite, in a folder of its own.
class ReportCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char name[] = "/tmp/ralp-report-test-XXXXXX";
    folder_ = new fs::path(mkdtemp(name));
    if (!have_simulator()) return;
    const fs::path& f = *folder_;
    const std::string ralp = ralp_binary();
    run_command(ralp + " simulate " + kScenario + " --quiet --json " + (f / "sim.json").string());
    run_command(ralp + " place " + kScenario + " --quiet --top 2 --json " +
                (f / "place.json").string());
    // A sweep over workers 1, 2, 4 and 1 and 10 Gbps, analytic fidelity, in sweep.json's shape.
    Json points = Json::array();
    int index = 0;
    for (const char* bandwidth : {"1Gbps", "10Gbps"}) {
      for (const int workers : {1, 2, 4}) {
        const auto run =
            run_command(ralp + " simulate " + kScenario +
                        " --quiet --fidelity analytic --strategy ps --workers " +
                        std::to_string(workers) + " --bandwidth " + bandwidth + " --json -");
        const Json doc = Json::parse(run.out);
        points.push_back({{"index", index++},
                          {"values", {{"workers", workers}, {"bandwidth", bandwidth}}},
                          {"scenario", doc["scenario"]["name"]},
                          {"results", doc["results"]},
                          {"verdict", doc["verdict"]},
                          {"baseline", doc["scenario"]["baseline"]},
                          {"training", doc["scenario"]["training"]}});
      }
    }
    const Json sweep = {{"sweep",
                         {{"base", "small-mixed.json"},
                          {"fidelity", "analytic"},
                          {"axes",
                           {{{"name", "workers"}, {"values", {1, 2, 4}}},
                            {{"name", "bandwidth"}, {"values", {"1Gbps", "10Gbps"}}}}}}},
                        {"points", points}};
    write_text(f / "sweep.json", sweep.dump(2) + "\n");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*folder_);
    delete folder_;
  }
  void SetUp() override {
    if (!have_simulator()) GTEST_SKIP() << "ralp built without the simulator";
  }

  static std::string in(const std::string& name) { return (*folder_ / name).string(); }
  static std::string all_inputs() {
    return in("sim.json") + " " + in("sweep.json") + " " + in("place.json") + " " + kValidation;
  }

  static fs::path* folder_;
};
fs::path* ReportCommand::folder_ = nullptr;

// Every link target of a Markdown text: ![alt](target) and [text](target).
std::vector<std::string> links(const std::string& markdown) {
  std::vector<std::string> out;
  const std::regex link(R"(\]\(([^)]+)\))");
  for (auto it = std::sregex_iterator(markdown.begin(), markdown.end(), link);
       it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

bool is_svg(const std::string& text) {
  xmlDocPtr doc = xmlReadMemory(text.data(), static_cast<int>(text.size()), "plot.svg", nullptr,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (doc == nullptr) return false;
  const xmlNode* root = xmlDocGetRootElement(doc);
  const bool svg =
      root != nullptr && std::string(reinterpret_cast<const char*>(root->name)) == "svg";
  xmlFreeDoc(doc);
  return svg;
}

uint32_t big_endian(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// The PNG signature, then an IHDR chunk of 13 bytes whose width and height are not zero.
bool is_png(const std::string& s) {
  const std::string signature = "\x89PNG\r\n\x1a\n";
  if (s.size() < 33 || s.compare(0, signature.size(), signature) != 0) return false;
  return big_endian(s, 8) == 13 && s.compare(12, 4, "IHDR") == 0 && big_endian(s, 16) > 0 &&
         big_endian(s, 20) > 0;
}

TEST_F(ReportCommand, EveryInputKindRoundTrips) {
  const Json sim = read_json_file(in("sim.json"));
  const ResultDocument s = read_result_document(in("sim.json"));
  ASSERT_EQ(s.kind, ResultKind::simulate);
  EXPECT_EQ(to_json(s.simulation), sim);
  const Json sweep = read_json_file(in("sweep.json"));
  const ResultDocument w = read_result_document(in("sweep.json"));
  ASSERT_EQ(w.kind, ResultKind::sweep);
  EXPECT_EQ(to_json(w.sweep), sweep);
  const Json place = read_json_file(in("place.json"));
  const ResultDocument p = read_result_document(in("place.json"));
  ASSERT_EQ(p.kind, ResultKind::place);
  EXPECT_EQ(to_json(p.placement), place);
  const ResultDocument v = read_result_document(kValidation);
  ASSERT_EQ(v.kind, ResultKind::validate);
  EXPECT_EQ(v.validation, read_json_file(kValidation));
}

TEST_F(ReportCommand, WritesEveryPlotAsSvgAndPngAndLinksThem) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path out = *folder_ / "all";
  const auto run =
      run_command(ralp_binary() + " report " + all_inputs() + " --out " + out.string());
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string md = read_file((out / "report.md").string());
  ASSERT_FALSE(md.empty());
  // One plot of each kind the inputs hold, and a progress line for each.
  const std::vector<std::string> expected = {
      "simulate-1-breakdown", "simulate-1-traffic",     "simulate-1-cuts-ralp-auto",
      "sweep-1-speedup",      "place-1-cuts-ralp-auto", "validate-1-predicted-vs-measured"};
  std::set<std::string> svgs;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() == ".svg") svgs.insert(entry.path().stem().string());
  }
  for (const std::string& stem : expected) {
    EXPECT_TRUE(svgs.contains(stem)) << stem;
    EXPECT_NE(run.err.find("ralp report: plot " + stem + ".svg, " + stem + ".png\n"),
              std::string::npos)
        << run.err;
  }
  std::set<std::string> linked;
  for (const std::string& target : links(md)) {
    EXPECT_TRUE(fs::is_regular_file(out / target)) << target;
    linked.insert(target);
  }
  for (const std::string& stem : svgs) {
    EXPECT_TRUE(linked.contains(stem + ".svg")) << stem;
    EXPECT_TRUE(linked.contains(stem + ".png")) << stem;
    EXPECT_TRUE(is_svg(read_file((out / (stem + ".svg")).string()))) << stem;
    EXPECT_TRUE(is_png(read_file((out / (stem + ".png")).string()))) << stem;
  }
  EXPECT_NE(md.find("Speedup at W workers = the strategy's images/s at W over its images/s at 1 "
                    "worker (the sweep's smallest count)"),
            std::string::npos);
  EXPECT_EQ(run.out,
            out.string() + "/report.md: 4 inputs, " + std::to_string(svgs.size()) + " plots\n");
}

TEST_F(ReportCommand, SameInputsSameBytes) {
  const fs::path a = *folder_ / "a";
  const fs::path b = *folder_ / "b";
  ASSERT_EQ(run_command(ralp_binary() + " report " + all_inputs() + " --quiet --out " + a.string())
                .status,
            0);
  ASSERT_EQ(run_command(ralp_binary() + " report " + all_inputs() + " --quiet --out " + b.string())
                .status,
            0);
  size_t compared = 0;
  for (const auto& entry : fs::directory_iterator(a)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".md" && ext != ".svg" && ext != ".png" && ext != ".dat" && ext != ".gp") continue;
    EXPECT_EQ(read_file(entry.path().string()), read_file((b / entry.path().filename()).string()))
        << entry.path().filename();
    ++compared;
  }
  EXPECT_GE(compared, 1u);
}

TEST_F(ReportCommand, QuietPrintsNoProgress) {
  const auto run = run_command(ralp_binary() + " report " + in("sim.json") + " --quiet --out " +
                               (*folder_ / "quiet").string());
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
}

TEST_F(ReportCommand, WithoutGnuplotTheTablesAreWrittenAndThePlotsSkipped) {
  const fs::path out = *folder_ / "no-gnuplot";
  const auto run = run_command("env PATH=/nonexistent " + ralp_binary() + " report " +
                               in("sim.json") + " " + in("sweep.json") + " --out " + out.string());
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string md = read_file((out / "report.md").string());
  EXPECT_NE(md.find("\nPlots skipped: gnuplot not found (install gnuplot-nox); the tables hold "
                    "the figures.\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| ps |"), std::string::npos);
  EXPECT_TRUE(links(md).empty());
  EXPECT_EQ(run.err, "ralp report: plots skipped: gnuplot not found (install gnuplot-nox)\n");
}

TEST_F(ReportCommand, ValidationSummaryHasTheReplayedErrors) {
  const fs::path out = *folder_ / "validation";
  const auto run = run_command("env PATH=/nonexistent " + ralp_binary() + " report " +
                               kValidation + " --out " + out.string());
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string md = read_file((out / "report.md").string());
  EXPECT_NE(md.find("| strategy | points | median abs error | max abs error | replayed: median | "
                    "replayed: max |"),
            std::string::npos)
      << md;
  // The same figures as the run's own summary tables.
  const Json v = read_json_file(kValidation);
  const Json& all = v.at("summary").back();
  const Json& replayed = v.at("replay_summary").back();
  const auto pct = [](const Json& j, const char* key) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", j.at(key).get<double>());
    return std::string(text);
  };
  EXPECT_NE(md.find("| all | " + std::to_string(all.at("points").get<int>()) + " | " +
                    pct(all, "median_abs_error_pct") + " | " + pct(all, "max_abs_error_pct") +
                    " | " + pct(replayed, "median_abs_error_pct") + " | " +
                    pct(replayed, "max_abs_error_pct") + " |"),
            std::string::npos)
      << md;
}

TEST_F(ReportCommand, BadInputsExitTwoWithOneLine) {
  const fs::path f = *folder_;
  write_text(f / "not-json.json", "{\"results\": [");
  write_text(f / "unknown.json", "{\"hello\": 1}");
  Json sim = read_json_file(in("sim.json"));
  sim["results"][1]["worker_mean"].erase("waiting_s");
  write_text(f / "broken.json", sim.dump());
  const std::string out = " --out " + (f / "bad").string();
  const auto expect_one_line = [&](const std::string& file, const std::string& start) {
    const auto run = run_command(ralp_binary() + " report " + in("sim.json") + " " + file + out);
    EXPECT_EQ(run.status, 2) << file;
    EXPECT_EQ(run.err.rfind("error: " + file + ": " + start, 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_FALSE(fs::exists(f / "bad" / "report.md"));
  };
  expect_one_line(in("not-json.json"), "");
  expect_one_line(in("unknown.json"), "is a JSON object of no known kind, expected the JSON of");
  expect_one_line(in("broken.json"), "/results/1/worker_mean/waiting_s is missing");
  expect_one_line(in("missing.json"), "");
  const auto no_out = run_command(ralp_binary() + " report " + in("sim.json"));
  EXPECT_EQ(no_out.status, 2);
}

TEST_F(ReportCommand, HelpExplainsInputsAndOutputs) {
  const auto run = run_command(ralp_binary() + " report --help");
  EXPECT_EQ(run.status, 0);
  for (const char* word : {"ralp simulate --json", "ralp sweep", "ralp place --json",
                           "ralp validate", "report.md", "SVG and PNG", "--quiet", "--out"}) {
    EXPECT_NE(run.out.find(word), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace ralp::reports
