// Random small layer DAGs for the head tests: fc layers of 32, 128 or 512 outputs, relu and
// concat layers on vectors, each layer reading earlier ones, the layers nothing reads joined
// (concatenated) before the loss. Deterministic for
// a seed (a splitmix64 stream, no library distribution).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ralp/spec/scenario.hpp"

namespace ralp::testing {

class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

// The "layers" array of a model with `layers` layers in all (at least 3), loss included.
inline std::string random_dag_layers(uint64_t seed, size_t layers) {
  SplitMix rng(seed);
  std::vector<std::string> entries;
  std::vector<bool> read;
  const auto name = [](size_t i) {
    std::string out = "l";  // appended, not "l" + ...: GCC 12 warns wrongly (-Wrestrict) on that
    return out += std::to_string(i);
  };
  const auto quoted = [](const std::string& s) { return "\"" + s + "\""; };
  const size_t body = layers - 2;  // before the join and the loss
  for (size_t i = 0; i < body; ++i) {
    read.push_back(false);
    std::string entry = "{\"name\": " + quoted(name(i)) + ", ";
    const size_t kind = i == 0 ? 0 : rng.below(10);
    if (i >= 2 && kind >= 7) {
      size_t a = rng.below(i);
      size_t b = rng.below(i - 1);
      if (b >= a) ++b;
      read[a] = read[b] = true;
      entry += "\"type\": \"concat\", \"inputs\": [" + quoted(name(a)) + ", " + quoted(name(b)) + "]}";
    } else {
      std::string input = "input";
      if (i > 0) {
        // Mostly a recent layer, sometimes any earlier one.
        const size_t back = rng.below(3) == 0 ? rng.below(i) + 1 : 1;
        input = name(i - back);
        read[i - back] = true;
      }
      static constexpr const char* kWidths[] = {"32", "128", "512"};
      entry += kind >= 5 && i > 0
                   ? std::string("\"type\": \"relu\"")
                   : std::string("\"type\": \"fc\", \"out_features\": ") + kWidths[rng.below(3)];
      entry += ", \"inputs\": [" + quoted(input) + "]}";
    }
    entries.push_back(entry);
  }
  std::vector<std::string> open;
  for (size_t i = 0; i < body; ++i) {
    if (!read[i]) open.push_back(quoted(name(i)));
  }
  std::string join = "{\"name\": \"join\", \"type\": ";
  join += open.size() >= 2 ? "\"concat\"" : "\"fc\", \"out_features\": 10";
  join += ", \"inputs\": [";
  for (size_t i = 0; i < open.size(); ++i) join += (i ? ", " : "") + open[i];
  join += "]}";
  entries.push_back(join);
  entries.push_back(R"({"name": "loss", "type": "softmax_cross_entropy"})");
  std::string out = "[";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
  return out + "]";
}

// A scenario of `workers` workers (batch 64, cpu-core) on a 10 Gbps star with that model and
// one ralp strategy (cut "auto"), or those given: compute and traffic of the same order, so that
// the best head varies.
inline Scenario random_dag_scenario(uint64_t seed, size_t layers, int64_t workers = 2,
                                    const std::string& strategies = R"({"name": "ralp", "cut": "auto"})",
                                    int64_t parameter_servers = 1) {
  const std::string text = R"({"name": "dag", "model": {"name": "dag", "input": [256, 1, 1],
      "layers": )" + random_dag_layers(seed, layers) +
                           R"(}, "batch_per_worker": 64, "cluster": {"workers": )" +
                           std::to_string(workers) + R"(, "parameter_servers": )" +
                           std::to_string(parameter_servers) + R"(, "worker_device": "cpu-core",
      "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "50us"}},
      "network_model": "tcp", "steps": 2, "warmup_steps": 1, "strategies": [)" + strategies +
                           "]}";
  return parse_scenario(parse_json_text(text, "dag.json"), "dag.json", ".");
}

}  // namespace ralp::testing
