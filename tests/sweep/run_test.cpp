// Running points: worker processes, a process per point and in-process give the same outcomes,
// each point once, and a point's failure surfaces in the caller.
#include <gtest/gtest.h>

#include <map>

#include "ralp/sweep/run.hpp"

namespace ralp::sweep {
namespace {

const std::string kSmall = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";

std::vector<SweepPoint> seven_points() {
  SweepSpec spec;
  spec.base = kSmall;
  spec.base_path = kSmall;
  set_axis(spec, {"workers", expand_axis_item("workers", "1-7", "", "--workers")});
  return make_points(spec);
}

std::map<size_t, Json> run(const std::vector<SweepPoint>& points, const std::vector<size_t>& which,
                           Isolation isolation, int jobs) {
  std::map<size_t, Json> out;
  PoolOptions options;
  options.jobs = jobs;
  options.isolation = isolation;
  run_points(points, which, "analytic", options, [&](size_t index, const Json& outcome) {
    EXPECT_TRUE(out.emplace(index, outcome).second) << "point " << index << " twice";
  });
  return out;
}

TEST(SweepRun, EveryIsolationGivesTheSameOutcomesOncePerPoint) {
  const auto points = seven_points();
  const std::vector<size_t> which{6, 0, 3, 1, 5, 2, 4};
  const auto reference = run(points, which, Isolation::in_process, 1);
  ASSERT_EQ(reference.size(), 7u);
  EXPECT_EQ(run(points, which, Isolation::workers, 3), reference);
  EXPECT_EQ(run(points, which, Isolation::workers, 1), reference);
  EXPECT_EQ(run(points, which, Isolation::process_per_point, 2), reference);
  // A subset runs only that subset.
  EXPECT_EQ(run(points, {2, 5}, Isolation::workers, 4).size(), 2u);
  EXPECT_TRUE(run(points, {}, Isolation::workers, 2).empty());
  // Point 3 has 4 workers: its ps strategy's images/s are 4 x 16 / its step time.
  const Json& ps = reference.at(3)["results"][0];
  EXPECT_EQ(ps["strategy"], "ps");
  EXPECT_DOUBLE_EQ(ps["images_per_s"].get<double>(),
                   64.0 / ps["step_time_mean_s"].get<double>());
}

TEST(SweepRun, AFailingPointStopsTheRunWithItsError) {
  auto points = seven_points();
  // A ralp cut that names no layer of the model fails while evaluating, not while parsing.
  points[4].scenario.strategies[1].cut = "no-such-layer";
  for (const Isolation isolation :
       {Isolation::workers, Isolation::process_per_point, Isolation::in_process}) {
    PoolOptions options;
    options.jobs = 2;
    options.isolation = isolation;
    try {
      run_points(points, {0, 1, 2, 3, 4, 5, 6}, "analytic", options, [](size_t, const Json&) {});
      ADD_FAILURE() << "no error";
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()).rfind("point 4 (workers=5) failed: ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace ralp::sweep
