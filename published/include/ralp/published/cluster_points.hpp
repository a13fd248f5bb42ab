// The published multi-GPU points: every multi-GPU row of published/*.csv as the scenario in
// scenarios/published/multi-gpu/ that describes it (scripts/published-scenarios writes both the
// scenarios and their points.csv), and the report that sets predictions beside them
// (reports/published/multi-gpu.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ralp/devices/transport.hpp"

namespace ralp::published {

struct ClusterPoint {
  std::string scenario;  // file name in the points' folder
  std::string source;    // "tf_cnn_benchmarks 2017", "Horovod README 2017"
  std::string system;    // "DGX-1", "table 1b", ...
  std::string model, setup, transport;
  std::string role;      // "fit" (fits its transport), "check" or "out of scope"
  int64_t gpus = 0, batch = 0;
  double images_per_s = 0;           // published
  double baseline_images_per_s = 0;  // the same source's 1-GPU figure
  [[nodiscard]] double published_step() const {  // seconds
    return static_cast<double>(batch * gpus) / images_per_s;
  }
  [[nodiscard]] double published_efficiency() const {
    return images_per_s / (static_cast<double>(gpus) * baseline_images_per_s);
  }
};

// How a point names its 1-GPU baseline: "source/system/model/batch", as the single-GPU points'
// rows give them.
inline std::string baseline_key(const std::string& source, const std::string& system,
                                const std::string& model, int64_t batch) {
  return source + "/" + system + "/" + model + "/" + std::to_string(batch);
}

// Reads points.csv; throws InputError naming the file and line of a malformed row.
std::vector<ClusterPoint> read_cluster_points(const std::filesystem::path& file);

struct ClusterPrediction {
  const ClusterPoint* point = nullptr;
  double predicted_step = 0;           // seconds
  double predicted_baseline_step = 0;  // the 1-GPU point's predicted step (seconds)
  std::string model_as_run;            // the scenario's model ("resnet50_tf" for "resnet50")
  [[nodiscard]] double error() const { return predicted_step / point->published_step() - 1.0; }
  [[nodiscard]] double predicted_efficiency() const {  // 1-GPU step / step, as throughputs
    return predicted_baseline_step / predicted_step;
  }
  // Predicted minus published scaling efficiency, in points (0.05: 5 points).
  [[nodiscard]] double efficiency_error() const {
    return predicted_efficiency() - point->published_efficiency();
  }
};

// The multi-GPU report as Markdown, and its points as CSV.
std::string cluster_report_markdown(const std::vector<ClusterPrediction>& predictions,
                                    const std::vector<Transport>& transports,
                                    const std::string& command);
std::string cluster_points_csv(const std::vector<ClusterPrediction>& predictions);

}  // namespace ralp::published
