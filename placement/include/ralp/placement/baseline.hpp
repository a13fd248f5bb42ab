// One worker device training alone: the reference scaling efficiency is measured against.
#pragma once

#include "ralp/results/training_plan.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::placement {

// The scenario's model on one of its worker devices at its batch per worker, as the analytic
// step model prices it: forward, backward and update, with no parameter server, no other worker
// and no host-device copies. The same device profile, batch and cost model as the scenario's
// workers, so that efficiency compares like with like.
SingleDeviceBaseline single_device_baseline(const Scenario& scenario);

}  // namespace ralp::placement
