// Calibration: microbenchmarks of each distinct layer shape of some models (forward,
// backward-data, backward-weight), of the parameter-server operations and host-device copies, and
// end-to-end forward+backward of each model, with Google Benchmark as the harness; the results
// become a measured device profile with a fitted cost model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ralp/devices/device_profile.hpp"
#include "ralp/kernels/backend.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp::calibrate {

// A model and the batch sizes to measure it at.
struct ModelRequest {
  LayerGraph graph;
  std::vector<int64_t> batches;
};

// One layer signature at one batch size, measured once however many layers share it.
struct ShapeToMeasure {
  Layer layer;  // the first layer with this signature
  int64_t batch = 0;
  std::string signature;
  size_t uses = 0;  // layers (across the models) with this signature and batch
};

// The distinct (signature, batch) pairs of the requests in first-seen order, leaving out layers
// with no work in any pass.
std::vector<ShapeToMeasure> distinct_shapes(const std::vector<ModelRequest>& requests);

struct CalibrationOptions {
  int repetitions = 5;         // medians and spread over these, each after warm-up
  double min_time = 0.05;      // seconds each repetition runs at least
  double warm_up_time = 0.02;  // seconds of warm-up before the repetitions
  bool end_to_end = true;      // also time each model's forward+backward
  // Training steps each model's end-to-end and in-step benchmarks take at least, over all their
  // repetitions (0: as min_time gives): a machine whose speed wanders from step to step needs
  // many steps for the in-step layer times to describe a run's typical step.
  int model_steps = 0;
  // Seconds each model's steps run in the time-sharing measurement, alone and then two processes
  // at once on one core (CPU, one thread; 0: not measured).
  double time_sharing_window = 2.0;
  uint64_t seed = 1;           // parameter initialisation and random inputs
  std::string name;            // the profile's name; empty: derived from the device
  std::string command;         // recorded in the provenance
};

// What calibration reports while it runs, one call per finished benchmark.
struct ProgressUpdate {
  size_t done = 0;
  size_t total = 0;
  std::string what;   // "conv2d(...)<3x224x224 b8 forward"
  Seconds median;     // zero when skipped
  double spread = 0.0;
  std::string error;  // why a benchmark was skipped
  Seconds elapsed;
  Seconds remaining;  // estimate
};
using ProgressFn = std::function<void(const ProgressUpdate&)>;

// Runs the whole calibration on `backend` and returns the profile. A shape the backend cannot run
// is left out (reported through `progress` with its reason) and falls back to the fitted model.
// The measured layers are tagged with the backend's precision, and their fitted rates go to
// `fitted` (fp32) or to `precision_fitted` of that precision; the datasheet fallback and the
// end-to-end checks use that precision's figures.
DeviceProfile calibrate(kernels::Backend& backend, const std::vector<ModelRequest>& requests,
                        const CalibrationOptions& options, const ProgressFn& progress);

// Steps `graph` at `batch` in child processes pinned to the first CPU this process may use: one
// alone, then two at once from a common start, each for `window` seconds after warm-up steps.
// Returns the lone process's time per step and the mean of the two sharing processes'. Throws
// std::runtime_error when a child fails or does not get ready within a minute.
TimeSharingCheck measure_time_sharing(kernels::Backend& backend, const LayerGraph& graph,
                                      int64_t batch, double window, uint64_t seed);

// The mean over `checks` of shared / (2 x alone), the time sharing's slowdown; at least 1, and 1
// without checks.
double time_sharing_slowdown(const std::vector<TimeSharingCheck>& checks);

// `base` (a measured profile) with the section of `precision` measured in `section` (what
// calibrate() returned on a backend of that precision, not fp32): base's measured layers of that
// precision and its precision_fitted entry are replaced by section's, and the section's date,
// command, load, steal time, oneDNN instruction set and end-to-end checks go into the provenance
// under keys prefixed with the precision ("bf16_date", "bf16_end_to_end"). Everything else,
// the FP32 layers, fits, rates and checks included, stays base's. Throws std::invalid_argument
// when base is not measured or was measured on another CPU, GPU or thread count.
DeviceProfile add_precision_section(const DeviceProfile& base, const DeviceProfile& section,
                                    Precision precision);

// The host a calibration on `backend` records (ProfileHost), and the check add_precision_section
// makes of it before measuring: throws std::invalid_argument, saying why, unless `base` is a
// measured profile of that host.
ProfileHost profile_host(const kernels::Backend& backend);
void check_same_host(const DeviceProfile& base, const ProfileHost& here);

// "AMD EPYC (family 26, model 2)" -> "amd-epyc-family-26-model-2".
std::string slug(const std::string& text);

// (sum of layers - measured) / measured, the fidelity error of an end-to-end check.
double fidelity_error(const EndToEndCheck& check);

}  // namespace ralp::calibrate
