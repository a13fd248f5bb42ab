// Scenario builders for simulator tests: round numbers, an "instant" device whose compute
// vanishes, and models whose parameter bytes are easy to count.
#pragma once

#include <string>

#include "ralp/sim/simulate.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::testing {

// A device so fast that compute, sums and updates take no measurable time.
inline const char* kInstantDevice =
    R"({"name": "instant", "kind": "cpu", "peak_flops": 1e30, "memory_bandwidth": 1e30})";

// input [in] -> fc(in -> out, no bias) -> softmax: in*out*4 bytes of weights.
inline std::string fc_model(int in, int out) {
  return R"({"name": "fc", "input": [)" + std::to_string(in) +
         R"(, 1, 1], "layers": [{"name": "fc", "type": "fc", "out_features": )" +
         std::to_string(out) +
         R"(, "bias": false}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
}

// Parses a scenario written in the test; `body` holds the keys after "name".
inline Scenario scenario_from(const std::string& body) {
  const std::string text = R"({"name": "test", )" + body + "}";
  return parse_scenario(parse_json_text(text, "test.json"), "test.json", RALP_TEST_DATA_DIR);
}

inline double relative_error(double a, double b) { return std::abs(a - b) / std::abs(b); }

inline const HostTraffic& host(const StrategyResult& r, const std::string& name) {
  for (const auto& h : r.hosts) {
    if (h.name == name) return h;
  }
  throw std::runtime_error("no host " + name);
}

}  // namespace ralp::testing
