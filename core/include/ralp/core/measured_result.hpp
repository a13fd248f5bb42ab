// What a real run (`ralp cluster`) measured, summarised per strategy in the simulator's terms:
// the fields a measured step shares with a predicted one (step_result.hpp) and what only a real
// run has. Value types only; cluster/ fills them, reports/ writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ralp/core/step_result.hpp"

namespace ralp {

struct MeasuredResult : StepResult {
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
  std::vector<MeasuredResult> results;
};

}  // namespace ralp
