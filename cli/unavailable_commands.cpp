// Subcommands whose part this build leaves out (no SimGrid, no CPU kernels, no MPI): they stay in
// --help and say what to install instead of vanishing.
#include <iostream>

#include "commands.hpp"

namespace ralp::cli {
namespace {

[[maybe_unused]] void add_unavailable(CLI::App& app, Action& action, const char* name,
                                      const char* description, std::string why) {
  auto* sub = app.add_subcommand(name, description);
  sub->allow_extras();
  sub->callback([&action, why] {
    action = [why] {
      std::cerr << "error: " << why << '\n';
      return kExitFailure;
    };
  });
}

}  // namespace

#ifndef RALP_HAVE_SIM
void add_simulate_command(CLI::App& app, Action& action) {
  add_unavailable(app, action, "simulate", "Simulate training steps (not in this build)",
                  "this ralp was built without SimGrid: install libsimgrid-dev (scripts/setup "
                  "does) and rebuild");
}
#endif

#ifndef RALP_HAVE_SIM
void add_place_command(CLI::App& app, Action& action) {
  add_unavailable(app, action, "place", "Search where to cut the model (not in this build)",
                  "this ralp was built without SimGrid: install libsimgrid-dev (scripts/setup "
                  "does) and rebuild");
}
#endif

#ifndef RALP_HAVE_SWEEP
void add_sweep_command(CLI::App& app, Action& action) {
  add_unavailable(app, action, "sweep", "Run a scenario over axes of values (not in this build)",
                  "this ralp was built without SimGrid: install libsimgrid-dev (scripts/setup "
                  "does) and rebuild");
}
#endif

#ifndef RALP_HAVE_CALIBRATE
void add_calibrate_command(CLI::App& app, Action& action) {
  add_unavailable(app, action, "calibrate", "Measure kernels into a profile (not in this build)",
                  "this ralp was built without the kernel backends: install libdnnl-dev and "
                  "libopenblas-dev (scripts/setup does) and rebuild");
}
#endif

#ifndef RALP_HAVE_CLUSTER
void add_cluster_command(CLI::App& app, Action& action) {
  add_unavailable(app, action, "cluster", "Run a strategy as a real MPI cluster (not in this build)",
                  "this ralp was built without MPI and the kernels: install openmpi-bin, "
                  "libopenmpi-dev and libdnnl-dev (scripts/setup does) and rebuild");
}
#endif

}  // namespace ralp::cli
