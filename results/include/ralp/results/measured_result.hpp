// What a real run (`ralp cluster`) measured, summarised per strategy in the simulator's terms:
// the fields a measured step shares with a predicted one (step_result.hpp) and what only a real
// run has. Value types only; cluster/ fills them, reports/ writes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ralp/core/precision.hpp"
#include "ralp/results/step_result.hpp"

namespace ralp {

// One device operation of a host's step schedule (its index in the host's list and its label) and
// the time it took in a real run: its mean over the typical measured steps (those whose device
// time is in the middle half, core middle_half, so that the operations sum to a typical step) of
// the time its thread spent on it, its CPU time on a CPU (so time the core gave other threads is left out) and its wall
// time on a GPU. `ralp simulate --replay` plays the schedule with these times instead of the
// profile's.
struct DeviceOpTime {
  std::string host;  // "ps-0", "worker-1"
  int32_t op = 0;
  std::string label;
  double seconds = 0.0;
  friend bool operator==(const DeviceOpTime&, const DeviceOpTime&) = default;
};

struct MeasuredResult : StepResult {
  std::vector<DeviceOpTime> device_times;  // every host's device operations, host by host
  std::vector<double> loss;  // per step, mean over the workers' micro-batches
  std::string ring;          // "message" or "mpi_allreduce" where gradients are all-reduced
  std::string backend;       // the kernels' device, "AMD EPYC 9R14 (1 thread)"
  int threads = 1;
  friend bool operator==(const MeasuredResult&, const MeasuredResult&) = default;
};

struct MeasuredRun {
  std::string scenario;
  std::string file;
  std::string model;
  int64_t workers = 0;
  int64_t parameter_servers = 0;
  int64_t batch_per_worker = 0;
  Precision precision = Precision::fp32;  // what the step computed in
  std::vector<MeasuredResult> results;
};

// The device times of each strategy of a `ralp cluster --json` file, by strategy label, with the
// JSON path of each strategy's list (for errors found later). Throws InputError naming the file
// and path of anything malformed, and when a result has no device times.
struct DeviceTimes {
  std::string path;  // "/results/2/device_times"
  std::vector<DeviceOpTime> ops;
};
std::map<std::string, DeviceTimes> read_device_times(const std::string& file);

}  // namespace ralp
