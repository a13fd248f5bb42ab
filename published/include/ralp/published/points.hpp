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

// NVIDIA DeepLearningExamples' PyTorch ConvNets rows (dle-pytorch-convnets.csv), each whose model
// the zoo has, whose batch and precision are given and which ran on one machine as a scenario:
// its GPUs on that machine's NVLink or NVSwitch, all-reduce by NCCL's ring, the row's precision
// and batch on the row's GPU profile. The rows of README revision kDleTargetCommit are the check
// (its "fit" rows fit the A100's efficiencies and are marked); older revisions are shown apart.
// MLPerf's DGX H100 row (mlperf-h100-declared.csv) is a point of its own, shown, never fitted.
inline constexpr const char* kDleTargetCommit = "7bdfc81d";
struct DlePoint {
  DleRow row;
  std::string name;       // scenario name, also its file name; empty where excluded
  std::string zoo_model;  // the zoo's name for the row's model
  std::string profile;    // the GPU profile it runs on
  bool target = false;    // of README revision kDleTargetCommit
  bool mlperf = false;    // MLPerf's declared row, not a DLE one
  std::string excluded;   // why the row is no scenario; empty for a point
  Json scenario;
  [[nodiscard]] double published_step() const {  // seconds
    return static_cast<double>(row.batch * row.gpus) / row.images_per_s;
  }
};
// Every row of both files, the excluded ones with their reason (in file order, MLPerf's last).
std::vector<DlePoint> dle_points(const std::filesystem::path& data_dir);

struct DlePrediction {
  const DlePoint* point = nullptr;
  double predicted_step = 0;  // seconds
  [[nodiscard]] double error() const { return predicted_step / point->published_step() - 1.0; }
};
// The DLE check as Markdown (reports/published/dle.md) and its points as CSV; `predictions`
// holds every point of dle_points that is not excluded, `points` all of them.
std::string dle_report_markdown(const std::vector<DlePoint>& points,
                                const std::vector<DlePrediction>& predictions,
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
  std::string efficiencies;  // "0.715" or "tf32 0.7388, fp16 1.004, bf16 1.004"
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
