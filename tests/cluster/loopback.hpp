// Support for the tests that run `ralp cluster` under mpirun with every rank on loopback: the
// command line, a strategy's result in the run's JSON, and how far two parameter dumps differ.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../support/run_command.hpp"
#include "ralp/cluster/run_cluster.hpp"
#include "ralp/core/json_input.hpp"

namespace ralp::testing {

// `ralp COMMAND` (a subcommand and its arguments) on `ranks` ranks over loopback TCP, as root,
// killed after `timeout_s`; `fault` (RALP_CLUSTER_FAULT) is passed to every rank when given.
inline std::string loopback_mpirun_ralp(int ranks, const std::string& command, int timeout_s,
                                        const std::string& fault = "") {
  std::string env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
  std::string forward;
  if (!fault.empty()) {
    env += "RALP_CLUSTER_FAULT=" + fault + " ";
    forward = " -x RALP_CLUSTER_FAULT";
  }
  return env + "timeout -k 5 " + std::to_string(timeout_s) + " " RALP_MPIEXEC
         " --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo"
         " --mca oob_tcp_if_include lo --mca mpi_yield_when_idle 1" +
         forward + " -np " + std::to_string(ranks) + " " + ralp_binary() + " " + command;
}

// `ralp cluster ARGS` as above.
inline std::string loopback_mpirun(int ranks, const std::string& args, int timeout_s = 100,
                                   const std::string& fault = "") {
  return loopback_mpirun_ralp(ranks, "cluster " + args, timeout_s, fault);
}

// The result of the strategy labelled `label` in a run's JSON (a test failure when absent).
inline const Json& result_of(const Json& run, const std::string& label) {
  for (const Json& r : run["results"]) {
    if (r["strategy"] == label) return r;
  }
  ADD_FAILURE() << "no result for " << label;
  static const Json none;
  return none;
}

// Per parameter tensor of dump_layout(graph): max |a - b| / max |a| (max |a - b| where a is 0).
inline std::vector<double> relative_differences(const LayerGraph& graph,
                                                const std::vector<float>& a,
                                                const std::vector<float>& b) {
  std::vector<double> out;
  size_t offset = 0;
  for (const cluster::ParameterEntry& e : cluster::dump_layout(graph)) {
    double difference = 0.0, scale = 0.0;
    for (int64_t i = 0; i < e.elements; ++i) {
      const size_t k = offset + static_cast<size_t>(i);
      difference = std::max(difference, std::abs(double(a.at(k)) - double(b.at(k))));
      scale = std::max(scale, std::abs(double(a.at(k))));
    }
    out.push_back(scale > 0.0 ? difference / scale : difference);
    offset += static_cast<size_t>(e.elements);
  }
  EXPECT_EQ(offset, a.size());
  EXPECT_EQ(b.size(), a.size());
  return out;
}

}  // namespace ralp::testing
