// Where a step's compute times came from: the device profile, and how many layers were measured,
// fitted or taken from a datasheet. Filled by the step plan, reported with every result.
#pragma once

#include <cstddef>
#include <string>

namespace ralp {

struct ComputeSources {
  std::string profile;         // device profile name
  std::string profile_source;  // "datasheet", "measured" or "published"
  std::string cost_model;      // CostModel::describe()
  size_t measured = 0;
  size_t fitted = 0;
  size_t datasheet = 0;
  size_t published = 0;  // from the GPU kernel model fitted to published kernel timings
  friend bool operator==(const ComputeSources&, const ComputeSources&) = default;
};

}  // namespace ralp
