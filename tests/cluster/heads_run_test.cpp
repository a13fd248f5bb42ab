// `ralp cluster` with heads that are not suffixes of the layer order (1 PS + 2 workers on
// loopback): every rank runs the model in the head's order, the final parameters (dumped in the
// file's order) equal the ps strategy's, dropout in a reordered tail included, and the simulator
// and the real run name the head alike and send the same bytes per host.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "../support/run_command.hpp"
#include "loopback.hpp"
#include "ralp/cluster/run_cluster.hpp"
#include "ralp/core/json_input.hpp"

namespace ralp::cluster {
namespace {

using testing::loopback_mpirun;
using testing::ralp_binary;
using testing::relative_differences;
using testing::result_of;
using testing::TempDir;
using testing::read_floats;
using testing::run_command;

// As in cluster_run_test.cpp: two workers, so every sum has two terms; the tolerance covers
// gradient sums whose order the head's order changes.
constexpr double kTolerance = 1e-4;

TEST(ClusterHeads, HeadsThatAreNotSuffixesGiveTheSameUpdate) {
  const TempDir dir("heads-test");
  const std::string file = std::string(RALP_TEST_DATA_DIR) + "/data/scenarios/cluster-branches.json";
  const std::string measured = (dir.path / "measured.json").string();
  const auto real = run_command(loopback_mpirun(3, "--quiet " + file + " --json " + measured +
                                                       " --dump-parameters " +
                                                       (dir.path / "params").string()));
  ASSERT_EQ(real.status, 0) << real.out << real.err;

  const Scenario scenario = load_scenario(file);
  const std::vector<ParameterEntry> layout = dump_layout(scenario.model);
  const auto reference = read_floats(dir.path / "params" / "ps.params");
  for (const char* label :
       {"ralp@a_fc+", "ralp-b", "hybrid@a_relu+b_conv2", "ralp-suffix", "allreduce"}) {
    SCOPED_TRACE(label);
    const auto other = read_floats(dir.path / "params" / (std::string(label) + ".params"));
    ASSERT_EQ(other.size(), reference.size());
    const std::vector<double> differences = relative_differences(scenario.model, reference, other);
    for (size_t i = 0; i < layout.size(); ++i) {
      EXPECT_LT(differences[i], kTolerance)
          << scenario.model.layer(layout[i].layer).name() << (layout[i].bias ? ".bias" : ".weight");
    }
  }

  const Json m = parse_json_text(testing::read_file(measured), measured);
  EXPECT_EQ(result_of(m, "ralp@a_fc+")["cut"], "a_fc+");
  EXPECT_EQ(result_of(m, "ralp@a_fc+")["head_layers"],
            Json::array({"a_fc", "a_relu", "join", "drop", "fc", "loss"}));
  EXPECT_EQ(result_of(m, "ralp-b")["cut"], "b_drop");  // the head ["b_drop"] is a suffix
  EXPECT_FALSE(result_of(m, "ralp-b").contains("head_layers"));

  // The simulator runs the same reordered models: the same heads and bytes per host.
  const std::string predicted = (dir.path / "predicted.json").string();
  const auto sim = run_command(ralp_binary() + " simulate --quiet " + file + " --json " + predicted);
  if (sim.status != 0 && sim.err.find("not built") != std::string::npos) {
    GTEST_SKIP() << "this build has no simulator: " << sim.err;
  }
  ASSERT_EQ(sim.status, 0) << sim.err;
  const Json p = parse_json_text(testing::read_file(predicted), predicted);
  ASSERT_EQ(p["results"].size(), m["results"].size());
  for (size_t i = 0; i < p["results"].size(); ++i) {
    const Json& a = p["results"][i];
    const Json& b = m["results"][i];
    SCOPED_TRACE(a["strategy"].get<std::string>());
    EXPECT_EQ(a["cut"], b["cut"]);
    EXPECT_EQ(a.value("head_layers", Json()), b.value("head_layers", Json()));
    ASSERT_EQ(a["hosts"].size(), b["hosts"].size());
    for (size_t h = 0; h < a["hosts"].size(); ++h) {
      EXPECT_EQ(a["hosts"][h]["bytes_in"], b["hosts"][h]["bytes_in"]);
      EXPECT_EQ(a["hosts"][h]["bytes_out"], b["hosts"][h]["bytes_out"]);
    }
  }
}

}  // namespace
}  // namespace ralp::cluster
