// Sweep specifications: range syntax, sweep files and their errors, and the points they expand to.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ralp/sweep/spec.hpp"

namespace ralp::sweep {
namespace {

using Values = std::vector<std::string>;

const std::string kSmall = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/ralp-sweep-spec-XXXXXX";
    path = std::filesystem::path(mkdtemp(name)) / "s.json";
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove_all(path.parent_path()); }
};

TEST(SweepRanges, DoublingEveryIntegerAndStepped) {
  EXPECT_EQ(expand_axis_list("workers", "1,2,4..64", "", "--workers"),
            (Values{"1", "2", "4", "8", "16", "32", "64"}));
  EXPECT_EQ(expand_axis_item("workers", "1-5", "", "--workers"), (Values{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(expand_axis_item("batch", "8-32:8", "", "--batch"), (Values{"8", "16", "24", "32"}));
  EXPECT_EQ(expand_axis_item("workers", "3..3", "", "--workers"), (Values{"3"}));
  EXPECT_EQ(expand_axis_item("workers", "1-125", "", "--workers").size(), 125u);
  // Non-integer axes keep their text, ranges included.
  EXPECT_EQ(expand_axis_list("bandwidth", "1Gbps,10Gbps", "", "--bandwidth"),
            (Values{"1Gbps", "10Gbps"}));
}

TEST(SweepRanges, MalformedItemsSayWhatIsExpected) {
  const std::string expected =
      ", expected an integer, A..B (doubling: A, 2A, 4A, .. B), A-B (every integer) or A-B:S "
      "(every S-th integer)";
  EXPECT_EQ(error_of([] { expand_axis_item("workers", "3..10", "", "--workers"); }),
            "--workers is \"3..10\", whose series misses its end 10" + expected);
  EXPECT_EQ(error_of([] { expand_axis_item("workers", "8-2", "", "--workers"); }),
            "--workers is \"8-2\", which runs backwards" + expected);
  EXPECT_EQ(error_of([] { expand_axis_item("workers", "four", "", "--workers"); }),
            "--workers is \"four\"" + expected);
  EXPECT_EQ(error_of([] { expand_axis_item("workers", "1-9:0", "", "--workers"); }),
            "--workers is \"1-9:0\", whose step is not an integer >= 1" + expected);
  EXPECT_EQ(error_of([] { expand_axis_list("workers", "1,2,1..4", "", "--workers"); }),
            "--workers is \"1,2,1..4\", which gives 1 twice, expected each value once");
  EXPECT_EQ(error_of([] { expand_axis_list("workers", "1,,2", "", "--workers"); }),
            "--workers is \"1,,2\", which has an empty item, expected a comma-separated list of "
            "values");
}

TEST(SweepFile, ReadsBaseFidelityAndAxesInAxisOrder) {
  TempFile f(R"({"base": "base.json", "fidelity": "analytic",
                 "axes": {"bandwidth": ["1Gbps", "10Gbps"], "workers": [1, "4..16"],
                          "strategies": "ps,ralp"}})");
  const SweepSpec spec = read_sweep_file(f.path);
  EXPECT_EQ(spec.base, "base.json");
  EXPECT_EQ(spec.base_path, f.path.parent_path() / "base.json");
  EXPECT_EQ(spec.fidelity, "analytic");
  ASSERT_EQ(spec.axes.size(), 3u);
  EXPECT_EQ(spec.axes[0], (Axis{"workers", {"1", "4", "8", "16"}}));
  EXPECT_EQ(spec.axes[1], (Axis{"bandwidth", {"1Gbps", "10Gbps"}}));
  EXPECT_EQ(spec.axes[2], (Axis{"strategies", {"ps", "ralp"}}));
}

TEST(SweepFile, ErrorsNameTheFileThePathAndTheExpectation) {
  {
    TempFile f(R"({"base": "b.json", "axes": {"wrokers": [1]}})");
    EXPECT_EQ(error_of([&] { read_sweep_file(f.path); }),
              f.path.string() +
                  ": /axes/wrokers is not a known key, expected one of: bandwidth, batch, "
                  "device, devices_per_node, latency, parameter_servers, precision, strategies, transport, "
                  "workers "
                  "(did you mean \"workers\"?)");
  }
  {
    TempFile f(R"({"base": "b.json", "axes": {"workers": [1, 2.5]}})");
    EXPECT_EQ(error_of([&] { read_sweep_file(f.path); }),
              f.path.string() +
                  ": /axes/workers/1 is 2.5, expected an integer or a range string such as "
                  "\"4..64\"");
  }
  {
    TempFile f(R"({"base": "b.json", "fidelity": "exact"})");
    EXPECT_EQ(error_of([&] { read_sweep_file(f.path); }),
              f.path.string() + ": /fidelity is \"exact\", expected one of: event, analytic");
  }
  {
    TempFile f(R"({"base": "b.json", "axes": {"workers": []}})");
    EXPECT_EQ(error_of([&] { read_sweep_file(f.path); }),
              f.path.string() +
                  ": /axes/workers is an empty array, expected a non-empty array of values or a "
                  "comma-separated string");
  }
}

SweepSpec small_spec() {
  SweepSpec spec;
  spec.base = kSmall;
  spec.base_path = kSmall;
  return spec;
}

TEST(SweepPoints, CartesianProductWithTheLastAxisFastest) {
  SweepSpec spec = small_spec();
  set_axis(spec, {"bandwidth", {"1Gbps", "10Gbps", "25Gbps"}});
  set_axis(spec, {"workers", {"2", "8"}});
  const std::vector<SweepPoint> points = make_points(spec);
  ASSERT_EQ(points.size(), 6u);
  // 2 workers x 3 bandwidths; point 4 is workers 8 (the second) at 10 Gbps (the second).
  EXPECT_EQ(points[4].index, 4u);
  EXPECT_EQ(points[4].describe(), "workers=8, bandwidth=10Gbps");
  EXPECT_EQ(points[4].scenario.workers, 8);
  EXPECT_EQ(points[2].describe(), "workers=2, bandwidth=25Gbps");
  // 10 Gbps is 1.25e9 bytes per second.
  EXPECT_DOUBLE_EQ(points[4].scenario.platform.nic.bandwidth.value(), 1.25e9);
  // The base's four strategies at every point.
  EXPECT_EQ(points[0].scenario.strategies.size(), 4u);
}

TEST(SweepPoints, StrategiesAreThoseEveryPointRuns) {
  SweepSpec spec = small_spec();
  set_axis(spec, {"strategies", {"ralp-auto", "hybrid", "ps"}});
  const std::vector<SweepPoint> points = make_points(spec);
  ASSERT_EQ(points.size(), 1u);
  const auto& s = points[0].scenario.strategies;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].label, "ralp-auto");
  EXPECT_EQ(s[1].label, "hybrid");
  EXPECT_EQ(s[1].kind, StrategyKind::hybrid);
  EXPECT_EQ(s[2].label, "ps");
}

TEST(SweepPoints, PrecisionIsAnAxisAndADeviceRefusesWhatItCannotRun) {
  SweepSpec spec = small_spec();
  set_axis(spec, {"precision", {"fp32", "bf16"}});
  set_axis(spec, {"device", {"a100", "h100"}});
  const std::vector<SweepPoint> points = make_points(spec);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[1].describe(), "device=a100, precision=bf16");
  EXPECT_EQ(points[1].scenario.precision, Precision::bf16);
  EXPECT_EQ(points[2].scenario.precision, Precision::fp32);
  SweepSpec cpu = small_spec();
  set_axis(cpu, {"device", {"cpu-core"}});
  set_axis(cpu, {"precision", {"fp32", "tf32"}});
  EXPECT_NE(error_of([&] { make_points(cpu); })
                .find("point 1 (device=cpu-core, precision=tf32) is refused: --precision is "
                      "\"tf32\", but the worker device \"cpu-core\" cannot run it"),
            std::string::npos)
      << error_of([&] { make_points(cpu); });
}

TEST(SweepPoints, AnInvalidPointIsRefusedNamingItAndTheReason) {
  SweepSpec spec = small_spec();
  set_axis(spec, {"workers", {"2", "0"}});
  EXPECT_EQ(error_of([&] { make_points(spec); }),
            "point 1 (workers=0) is refused: --workers is 0, expected an integer in [1, 65536]");
  SweepSpec device = small_spec();
  set_axis(device, {"device", {"v100", "gtx1080"}});
  EXPECT_NE(error_of([&] { make_points(device); })
                .find("point 1 (device=gtx1080) is refused: " + kSmall +
                      ": /cluster/worker_device is \"gtx1080\""),
            std::string::npos);
  SweepSpec strategies = small_spec();
  set_axis(strategies, {"strategies", {"ps", "horovod"}});
  EXPECT_NE(error_of([&] { make_points(strategies); }).find("--strategies has \"horovod\""),
            std::string::npos);
}

}  // namespace
}  // namespace ralp::sweep
