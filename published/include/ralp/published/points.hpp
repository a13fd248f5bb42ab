// The published whole-network points the GPU model is checked on, each as the scenario that
// describes its setup, and the report that sets predictions beside them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/published/data.hpp"

namespace ralp::published {

struct Point {
  ThroughputRow row;
  std::string name;       // scenario name, also its file name
  std::string zoo_model;  // the model as the source ran it
  bool variables_on_host = false;
  Json scenario;          // a scenario file's contents
  [[nodiscard]] double published_step() const {  // seconds
    return static_cast<double>(row.batch * row.gpus) / row.images_per_s;
  }
};

// Every synthetic-data single-GPU row of tf_cnn_benchmarks and the Horovod README, as a scenario:
// variables on the GPU run as one all-reduce worker (no communication, the update on the GPU);
// variables on the host's CPU as one worker and a PS on the host's CPU profile, reached over a
// link too fast to matter, so the step pays the PCIe copies and the host's update.
std::vector<Point> single_gpu_points(const std::filesystem::path& data_dir);

// NVIDIA DeepLearningExamples' single-GPU ResNet-50 v1.5 rows (PyTorch, DGX-1 and DGX-2 V100),
// each as a scenario: one all-reduce worker on the v100 profile in the row's precision, the
// zoo's resnet50 (torchvision's v1.5: the stride on the bottleneck's 3x3 convolution). The rows
// of README revision kDleTargetCommit are the check; older revisions are shown apart.
inline constexpr const char* kDleTargetCommit = "7bdfc81d";
struct DlePoint {
  DleRow row;
  std::string name;  // scenario name, also its file name
  bool target = false;
  Json scenario;
  [[nodiscard]] double published_step() const {  // seconds
    return static_cast<double>(row.batch) / row.images_per_s;
  }
};
std::vector<DlePoint> dle_points(const std::filesystem::path& data_dir);

struct DlePrediction {
  const DlePoint* point = nullptr;
  double predicted_step = 0;  // seconds
  [[nodiscard]] double error() const { return predicted_step / point->published_step() - 1.0; }
};
// The DLE check as Markdown (reports/published/dle-v100.md) and its points as CSV.
std::string dle_report_markdown(const std::vector<DlePrediction>& predictions,
                                const std::string& command);
std::string dle_points_csv(const std::vector<DlePrediction>& predictions);

// One point's prediction.
struct Prediction {
  const Point* point = nullptr;
  double predicted_step = 0;            // seconds
  double predicted_without_framework = 0;
  std::string profile_source;           // "published", "datasheet", ...
  [[nodiscard]] double error() const { return predicted_step / point->published_step() - 1.0; }
};

// Everything the report sets beside the predictions: each profile's fit and derivation checks.
struct ProfileSummary {
  std::string name, source, derived_from, architecture_row;
  int64_t rows = 0;
  double median = 0, max = 0, loso_median = 0, loso_max = 0, architecture_efficiency = 1;
  double framework_us = 0;
};
struct DerivationSummary {
  std::string check;  // "m40 from titanx-maxwell"
  int64_t rows = 0;
  double median = 0, max = 0;
};

// The report as Markdown (reports/published/README.md) and the points as CSV.
std::string report_markdown(const std::vector<Prediction>& predictions,
                            const std::vector<ProfileSummary>& profiles,
                            const std::vector<DerivationSummary>& derivations,
                            const std::string& command);
std::string points_csv(const std::vector<Prediction>& predictions);

}  // namespace ralp::published
