// The one-line summary of a result's shard assignment, for the simulate and cluster tables.
#include <string>

#include "commands.hpp"
#include "ralp/core/units.hpp"

namespace ralp::cli {

std::string shard_line(const StepResult& result, const Scenario& scenario) {
  if (result.shards.empty()) return "";
  ShardPlacement sharding = ShardPlacement::round_robin;
  for (const StrategySpec& spec : scenario.strategies) {
    if (spec.label == result.label) sharding = spec.sharding;
  }
  // Every layer named while the whole list stays short.
  constexpr size_t kNamedLayers = 16;
  size_t named = 0;
  for (const ShardShare& s : result.shards) named += s.layers.size();
  std::string line = result.label + ": variables on " + std::to_string(result.shards.size()) +
                     " shards (" + std::string(to_string(sharding)) + "):";
  for (size_t i = 0; i < result.shards.size(); ++i) {
    const ShardShare& s = result.shards[i];
    line += std::string(i == 0 ? " " : "; ") + "ps-" + std::to_string(s.shard) + " " +
            format_bytes(Bytes(static_cast<double>(s.bytes)));
    if (s.layers.empty()) {
      line += ", no layers";
    } else if (named <= kNamedLayers) {
      line += ":";
      for (size_t l = 0; l < s.layers.size(); ++l) line += (l == 0 ? " " : ", ") + s.layers[l];
    } else {
      line += ", " + std::to_string(s.layers.size()) + " layers (" + s.layers.front() + " .. " +
              s.layers.back() + ")";
    }
  }
  return line;
}

}  // namespace ralp::cli
