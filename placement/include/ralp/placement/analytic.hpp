// The analytic step model: a closed-form estimate of one synchronous step's time for every
// strategy, from the step plan (compute times, variable groups, boundary bytes) and the
// platform's links under the network model's factors. It follows the schedule's streams (device,
// copy, one connection per peer, ring) for one representative worker, with every worker alike,
// and prices each transfer by its share of the busiest link it crosses; ralp's staggered replies
// and pushes play out together as fluid flows over the links. Cost: O(layers) per strategy and cut
// (O(messages x flows in transfer) for ralp's fluid flows, O(workers x groups) past their limit),
// independent of the event simulation. Pure: no SimGrid.
#pragma once

#include <cstdint>
#include <optional>

#include "ralp/schedule/step_plan.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::placement {

// The links the analytic model sees: every host's NIC by role (per-role overrides of the
// platform's nic), an optional backbone every flow crosses, and the network model's factors.
// Other platform kinds are read as a star of their per-role NICs.
struct AnalyticNetwork {
  LinkSpec ps_nic;
  LinkSpec worker_nic;
  std::optional<LinkSpec> backbone;
  double latency_factor = 1.0;    // tcp: SimGrid LV08's 13.01
  double bandwidth_factor = 1.0;  // tcp: 0.97
  bool tcp_window = false;        // tcp: a flow's rate is capped at gamma / (2 x route latency)
  // tcp: 0.05. Each flow loads the links of its reverse route by this share of its rate (SimGrid's
  // cross-traffic); where such a link is saturated, the flow's rate is fixed with the others there.
  double cross_traffic = 0.0;
  // Nodes of several devices (spec/nodes.hpp): a route that leaves a node crosses the device's
  // link to the host side; devices of one node reach each other over their peer links; each link
  // inside a node has `interconnect_latency`. `nic_sharers`: the devices whose traffic to the
  // parameter servers shares one NIC (D with one NIC per node and no local aggregation).
  int64_t devices_per_node = 1;
  int64_t nodes = 1;
  double nic_sharers = 1.0;
  double device_link = 0.0;  // bytes per second; 0 without nodes
  // The node's other devices to or from its first one at once, as one link: members x bytes over
  // it is their time (NVLink pairs and PCIe on the cube-mesh; a port each elsewhere).
  double peer_link = 0.0;
  double ring_peer_link = 0.0;  // the slowest hop of the ring in node order inside a node
  double interconnect_latency = 0.0;
  bool pcie_roots = false;  // pcie with several host links: peers may cross two of them
  // Co-located parameter servers (spec/nodes.hpp): each shard on a node, behind its own link to
  // the node's host side (`ps_link`); a flow to a shard on another node crosses both nodes' NICs,
  // one to a shard on its own node the devices' links and the node's host links instead.
  bool colocated = false;
  double ps_link = 0.0;
  int64_t host_links = 1;
};
AnalyticNetwork analytic_network(const Scenario& scenario);
// Whether the analytic model prices the scenario's network: a generated platform; a platform
// file's links and routes are SimGrid's alone.
[[nodiscard]] bool analytic_covers(const Scenario& scenario);

// What the estimate is made of (seconds from the step's start, for the representative worker).
struct AnalyticEstimate {
  double step_time_s = 0.0;
  double forward_end_s = 0.0;   // the tail's forward ends
  double backward_end_s = 0.0;  // the tail's backward ends on the last worker
  double network_s = 0.0;       // bytes of the busiest PS or worker link / its bandwidth
};

// How ralp's staggered replies and pushes are priced: by the fluid model of the links (the event
// simulation's max-min sharing, cross-traffic included; its cost grows with workers squared, and
// past 10^8 workers^2 x pushes it gives way to closed-form approximations), or as a lower bound
// of it (every transfer at the rate it would have alone, and no PS link carrying more than its
// bandwidth; microseconds), which lets the cut ranking skip the fluid model where it cannot
// change the best.
enum class AnalyticDetail { fluid, lower_bound };

// The step time of `plan` (built for `scenario` by schedule::make_step_plan).
AnalyticEstimate estimate_step(const Scenario& scenario, const schedule::StepPlan& plan,
                               AnalyticDetail detail = AnalyticDetail::fluid);

// make_step_plan then estimate_step.
AnalyticEstimate estimate_strategy(const Scenario& scenario, const StrategySpec& strategy,
                                   std::optional<LayerId> cut);

}  // namespace ralp::placement
