// Parsing and firing injected faults.
#include "ralp/cluster/fault_injection.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "ralp/core/json_input.hpp"

namespace ralp::cluster {
namespace {

[[noreturn]] void bad(const std::string& problem) { throw InputError(kFaultVariable, "", problem); }

template <class T>
T number(std::string_view key, std::string_view value) {
  T out{};
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (error != std::errc() || end != value.data() + value.size() || out < 0) {
    bad(std::string(key) + " is '" + std::string(value) + "', expected an integer >= 0");
  }
  return out;
}

}  // namespace

const std::vector<std::string>& fault_phases() {
  static const std::vector<std::string> phases = {
      "pull", "forward", "activations", "head", "backward", "push", "aggregate", "ring", "update"};
  return phases;
}

FaultSpec parse_fault_spec(std::string_view text) {
  FaultSpec spec;
  bool has_rank = false, has_step = false, has_phase = false, has_kind = false;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      bad("'" + std::string(item) + "' is not KEY=VALUE (expected rank=R,step=K,phase=P,kind=K)");
    }
    const std::string_view key = item.substr(0, equals);
    const std::string_view value = item.substr(equals + 1);
    if (key == "rank") {
      spec.rank = number<int>(key, value);
      has_rank = true;
    } else if (key == "step") {
      spec.step = number<int64_t>(key, value);
      has_step = true;
    } else if (key == "phase") {
      const auto& phases = fault_phases();
      if (std::find(phases.begin(), phases.end(), value) == phases.end()) {
        std::string list;
        for (const auto& p : phases) list += (list.empty() ? "" : ", ") + p;
        bad("phase is '" + std::string(value) + "', expected one of " + list);
      }
      spec.phase = value;
      has_phase = true;
    } else if (key == "kind") {
      if (value == "exit") {
        spec.kind = FaultKind::exit;
      } else if (value == "hang") {
        spec.kind = FaultKind::hang;
      } else {
        bad("kind is '" + std::string(value) + "', expected exit or hang");
      }
      has_kind = true;
    } else if (key == "strategy") {
      spec.strategy = value;
    } else {
      bad("unknown key '" + std::string(key) + "' (expected rank, step, phase, kind, strategy)");
    }
  }
  if (!has_rank || !has_step || !has_phase || !has_kind) {
    bad("needs rank=R,step=K,phase=P,kind=exit|hang");
  }
  return spec;
}

std::optional<FaultSpec> fault_from_environment() {
  const char* value = std::getenv(kFaultVariable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_fault_spec(value);
}

FaultInjector::FaultInjector(std::optional<FaultSpec> spec, int rank, std::string role_name)
    : spec_(std::move(spec)), rank_(rank), role_name_(std::move(role_name)) {}

void FaultInjector::at(std::string_view phase, int64_t step) const {
  if (!spec_ || spec_->rank != rank_ || spec_->step != step || spec_->phase != phase) return;
  if (!spec_->strategy.empty() && spec_->strategy != strategy_) return;
  const std::string where = "rank " + std::to_string(rank_) + " (" + role_name_ + ") during " +
                            std::string(phase) + " of step " + std::to_string(step);
  if (spec_->kind == FaultKind::exit) {
    std::cerr << "ralp cluster: injected fault: " << where << ": exiting" << std::endl;
    // A crash, not an orderly exit: no destructors, no MPI_Finalize.
    std::_Exit(kFaultExitStatus);
  }
  std::cerr << "ralp cluster: injected fault: " << where << ": no longer answering" << std::endl;
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace ralp::cluster
