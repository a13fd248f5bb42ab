// The multi-GPU published points for `ralp published` (built with the simulator): the named
// transports' fit and every point's event simulation.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ralp/published/cluster_points.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::cli {

using Progress = std::function<void(const std::string&)>;

// Subplex evaluations per transport fit (each simulates every fitting row once).
inline constexpr int kTransportEvaluations = 60;

// The points of a folder of published multi-GPU scenarios (its points.csv).
std::vector<published::ClusterPoint> cluster_points(const std::filesystem::path& dir);

// A point's scenario, every strategy with `transport` where given.
Scenario cluster_scenario(const published::ClusterPoint& point, const std::filesystem::path& dir,
                          const std::optional<Transport>& transport);

// The mean simulated step of the scenario's first strategy, in seconds.
double simulated_step(const Scenario& scenario);

// Every named transport fitted on the points whose role is "fit" and which use it: the
// parameters its definition names, by least squares of the log errors (Subplex), the others kept.
// A transport whose rows span sources fits their scaling efficiency, each row's prediction
// against its 1-GPU point's predicted step from `baseline_steps` (keyed as below), so that the
// compute model's error on each source's GPU stays out of the transport's parameters; the others
// fit the step.
std::vector<Transport> fit_transports(const std::filesystem::path& dir,
                                      const std::map<std::string, double>& baseline_steps,
                                      const Progress& progress);

// Every point simulated, with its 1-GPU point's predicted step from `baseline_steps` (keyed
// "source/system/model/batch").
std::vector<published::ClusterPrediction> predict_cluster_points(
    const std::vector<published::ClusterPoint>& points, const std::filesystem::path& dir,
    const std::map<std::string, double>& baseline_steps, const Progress& progress);

}  // namespace ralp::cli
