// A testing aid: RALP_CLUSTER_FAULT="rank=2,step=1,phase=push,kind=hang" makes one rank fail on
// purpose when it reaches a phase of a step, so that tests can check how the others react.
//   kind=exit  the rank ends at once with status kFaultExitStatus, as a crashed process would
//              (no MPI_Finalize): mpirun then ends the whole job, naming the rank.
//   kind=hang  the rank stops answering (it sleeps and never calls MPI again): the others' waits
//              time out with a message naming it and the phase.
// Phases: pull, forward, activations, head, backward, push, aggregate, ring, update. A phase the
// rank's role or strategy never reaches never fires; with several strategies in one run, the first
// one to reach it does. An optional strategy=LABEL restricts it to one strategy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralp::cluster {

inline constexpr const char* kFaultVariable = "RALP_CLUSTER_FAULT";
inline constexpr int kFaultExitStatus = 3;

enum class FaultKind { exit, hang };

struct FaultSpec {
  int rank = 0;
  int64_t step = 0;
  std::string phase;
  FaultKind kind = FaultKind::exit;
  std::string strategy;  // empty: any
  friend bool operator==(const FaultSpec&, const FaultSpec&) = default;
};

// The phases a fault may name.
const std::vector<std::string>& fault_phases();

// Parses the variable's value. Throws InputError (file "RALP_CLUSTER_FAULT") naming the bad key
// or value; every key but strategy is required.
FaultSpec parse_fault_spec(std::string_view text);

// Reads the environment; nullopt when the variable is unset or empty.
std::optional<FaultSpec> fault_from_environment();

class FaultInjector {
 public:
  FaultInjector(std::optional<FaultSpec> spec, int rank, std::string role_name);

  void set_strategy(std::string label) { strategy_ = std::move(label); }
  // Called as the rank enters `phase` of `step`: fires the fault when it matches (never returns
  // then). `phase` must be one of fault_phases().
  void at(std::string_view phase, int64_t step) const;

 private:
  std::optional<FaultSpec> spec_;
  int rank_;
  std::string role_name_;
  std::string strategy_;
};

}  // namespace ralp::cluster
