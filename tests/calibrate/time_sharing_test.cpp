// The time-sharing measurement on this machine's cores: alone in the test run (RUN_SERIAL), since
// other work on the core it pins to would change what it measures.
#include <gtest/gtest.h>

#include "ralp/calibrate/calibration.hpp"
#include "ralp/kernels/backend.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp::calibrate {
namespace {

// Two copies of a model at once on one core each get about half of it: a step takes about twice
// the lone one's (over 1.2 times leaves room for the machine's noise; copies on two cores would
// take about as long as one alone).
TEST(TimeSharing, TwoProcessesOnOneCoreEachStepSlowerThanOneAlone) {
  if (!kernels::cpu_backend_built()) GTEST_SKIP() << "the CPU backend is not built";
  auto backend = kernels::make_cpu_backend(1);
  const TimeSharingCheck c = measure_time_sharing(*backend, *zoo_model("cifar_allconv"), 4, 0.5, 1);
  EXPECT_EQ(c.model, "cifar_allconv");
  EXPECT_EQ(c.batch, 4);
  EXPECT_GT(c.alone.value(), 0.0);
  EXPECT_GT(c.shared.value(), 1.2 * c.alone.value())
      << "alone " << c.alone.value() << " s, shared " << c.shared.value() << " s";
}

}  // namespace
}  // namespace ralp::calibrate
