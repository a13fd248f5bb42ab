// World: recording what the actors do and turning it into a StrategyResult.
#include "world.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <xbt/config.hpp>

namespace sg4 = simgrid::s4u;

namespace ralp::sim {

World::World(const Scenario& s, const schedule::Schedule& sch, Platform platform,
             RunOptions options)
    : scenario(s),
      schedule(sch),
      steps(s.steps + s.warmup_steps),
      warmup(s.warmup_steps),
      options_(options) {
  for (auto* h : platform.ps) hosts_.push_back(h);
  for (auto* h : platform.workers) hosts_.push_back(h);
  for (const auto& role : sch.roles) names_.push_back(role.name);
  host_in_.assign(hosts_.size(), 0.0);
  host_out_.assign(hosts_.size(), 0.0);
  layout_ = node_layout(s);
  on_nodes_ = layout_.devices_per_node > 1 || layout_.colocated;
  if (on_nodes_) node_traffic_.resize(static_cast<size_t>(layout_.nodes));
  busy_.resize(hosts_.size());
  if (options_.messages) messages_.resize(hosts_.size());
  boundary_.assign(static_cast<size_t>(steps), -1.0);
  pending_parts_.assign(static_cast<size_t>(steps), sch.parts_per_step);
}

sg4::Mailbox* World::mailbox(const std::string& kind, int32_t src, int32_t dst) {
  const std::string name = kind + ":" + std::to_string(src) + ">" + std::to_string(dst);
  if (const auto it = mailboxes_.find(name); it != mailboxes_.end()) return it->second;
  // by_name is a simcall: other actors may run meanwhile, so insert only the finished pointer.
  sg4::Mailbox* box = sg4::Mailbox::by_name(name);
  return mailboxes_.emplace(name, box).first->second;
}

void World::record_work(int32_t host, int32_t peer, ActivityKind kind, int64_t step,
                        const std::string& label, double start, double end) {
  if (!measured(step) || end <= start) return;
  const bool is_compute = kind != ActivityKind::copy;
  if (host == 0 && schedule.parameter_servers > 0 && is_compute) ps_busy_ += end - start;
  busy_[static_cast<size_t>(host)].push_back({start, end, step, is_compute});
  if (traced(step)) {
    timeline_.push_back({host, peer, kind, static_cast<int32_t>(step), label, start, end, 0.0});
  }
}

void World::record_busy(int32_t host, int64_t step, double start, double end, bool compute) {
  if (!measured(step) || end <= start) return;
  busy_[static_cast<size_t>(host)].push_back({start, end, step, compute});
}

// A star NIC's token bucket, full at the start; in payload bytes, as the network model's
// bandwidth factor turns the link's rate into a flow's.
World::Bucket World::bucket_of(const sg4::Link& link) const {
  const double burst = scenario.platform.nic_burst.value();
  const std::string& name = link.get_name();
  const bool nic = name.ends_with("-nic_UP") || name.ends_with("-nic_DOWN");
  if (burst <= 0.0 || !nic) return {};
  const double factor = simgrid::config::get_value<double>("network/bandwidth-factor");
  return {burst * factor, link.get_bandwidth() * factor, burst * factor, 0.0, 0};
}

// What a bucket holds at `now`: while flows cross it, what the flows before let pass left (a
// flow it could not pass whole took everything, and the flows drain it as fast as it refills);
// idle, what it kept plus what it refilled since, up to its size.
double World::Bucket::held(double now) const {
  if (flows > 0) return tokens;
  return std::min(capacity, tokens + rate * (now - idle_since));
}

int64_t World::start_flow(int32_t src, int32_t dst, int64_t bytes, double now) {
  if (scenario.platform.nic_burst.value() <= 0.0) return bytes;
  const std::vector<int32_t>& links = route(src, dst);
  double free = std::numeric_limits<double>::infinity();
  for (const int32_t l : links) {
    const Bucket& b = buckets_[static_cast<size_t>(l)];
    if (b.capacity > 0.0) free = std::min(free, b.held(now));
  }
  if (std::isinf(free)) return bytes;  // no bucket on the route
  const int64_t passed = std::min(bytes, static_cast<int64_t>(std::floor(free)));
  for (const int32_t l : links) {
    Bucket& b = buckets_[static_cast<size_t>(l)];
    if (b.capacity <= 0.0) continue;
    // The rest of the message then drains the bucket as fast as it refills.
    b.tokens = passed < bytes ? 0.0 : b.held(now) - static_cast<double>(passed);
    ++b.flows;
  }
  return bytes - passed;
}

void World::end_flow(int32_t src, int32_t dst, double now) {
  if (scenario.platform.nic_burst.value() <= 0.0) return;
  for (const int32_t l : route(src, dst)) {
    Bucket& b = buckets_[static_cast<size_t>(l)];
    if (b.capacity <= 0.0) continue;
    if (--b.flows == 0) b.idle_since = now;
  }
}

const std::vector<int32_t>& World::route(int32_t src, int32_t dst) {
  auto [it, inserted] = routes_.try_emplace({src, dst});
  if (inserted) {
    std::vector<sg4::Link*> links;
    double latency = 0.0;
    hosts_[src]->route_to(hosts_[dst], links, &latency);
    for (const sg4::Link* link : links) {
      auto [found, added] = link_index_.try_emplace(link, static_cast<int32_t>(links_.size()));
      if (added) {
        links_.push_back(const_cast<sg4::Link*>(link));
        link_bytes_.push_back(0.0);
        buckets_.push_back(bucket_of(*link));
      }
      it->second.push_back(found->second);
    }
  }
  return it->second;
}

void World::record_transfer(int32_t src, int32_t dst, int64_t bytes, int64_t step,
                            const std::string& label, double start, double end) {
  if (!measured(step)) return;
  const double b = static_cast<double>(bytes);
  host_out_[src] += b;
  host_in_[dst] += b;
  if (on_nodes_) count_node_traffic(layout_, src, dst, b, node_traffic_);
  for (const int32_t link : route(src, dst)) link_bytes_[link] += b;
  record_busy(src, step, start, end, false);
  record_busy(dst, step, start, end, false);
  if (traced(step)) {
    timeline_.push_back(
        {src, dst, ActivityKind::send, static_cast<int32_t>(step), label, start, end, b});
    timeline_.push_back(
        {dst, src, ActivityKind::receive, static_cast<int32_t>(step), label, start, end, b});
  }
}

void World::log_message(int32_t host, int64_t step, const schedule::Message& m) {
  if (!logs_messages(step)) return;
  messages_[static_cast<size_t>(host)].push_back(
      {std::string(schedule::to_string(m.kind)), names_[static_cast<size_t>(m.peer)], m.item,
       m.payload_bytes});
}

double World::idle_transfer_seconds(int32_t src, int32_t dst, int64_t bytes) const {
  auto [it, added] = idle_paths_.try_emplace({src, dst});
  IdlePath& path = it->second;
  if (added) {
    std::vector<sg4::Link*> links;
    double latency = 0.0;
    hosts_[src]->route_to(hosts_[dst], links, &latency);
    double bandwidth = std::numeric_limits<double>::infinity();
    for (const sg4::Link* link : links) bandwidth = std::min(bandwidth, link->get_bandwidth());
    double rate = simgrid::config::get_value<double>("network/bandwidth-factor") * bandwidth;
    const double gamma = simgrid::config::get_value<double>("network/TCP-gamma");
    if (gamma > 0.0 && latency > 0.0) rate = std::min(rate, gamma / (2.0 * latency));
    path = {simgrid::config::get_value<double>("network/latency-factor") * latency, rate};
  }
  return path.latency_s + static_cast<double>(bytes) / path.bytes_per_s;
}

void World::complete_part(int64_t step, double at) {
  double& boundary = boundary_[static_cast<size_t>(step)];
  boundary = std::max(boundary, at);
  if (--pending_parts_[static_cast<size_t>(step)] > 0) return;
  // A step is complete once it and every earlier step have no parts left.
  while (completed_step_ + 1 < steps &&
         pending_parts_[static_cast<size_t>(completed_step_ + 1)] == 0) {
    ++completed_step_;
  }
}

StrategyResult World::collect() const {
  if (completed_step_ != steps - 1 || finished_roles_ != schedule.roles.size()) {
    throw std::runtime_error("the simulation stopped early (deadlock): " +
                             std::to_string(completed_step_ + 1) + " of " +
                             std::to_string(steps) + " steps completed, " +
                             std::to_string(finished_roles_) + " of " +
                             std::to_string(schedule.roles.size()) + " hosts finished");
  }
  StrategyResult r;
  const StepPlan& plan = schedule.plan;
  r.label = plan.strategy.label;
  r.kind = plan.strategy.kind;
  if (plan.cut) r.cut = scenario.model.layer(*plan.cut).name();
  std::vector<double> times;
  double previous = 0.0;
  for (const double boundary : boundary_) {
    times.push_back(boundary - previous);
    previous = boundary;
  }
  set_step_times(r, std::move(times), warmup, schedule.workers * scenario.batch_per_worker);

  const double measured_steps = static_cast<double>(steps - warmup);
  for (size_t i = 0; i < hosts_.size(); ++i) {
    r.hosts.push_back({names_[i], host_in_[i] / measured_steps, host_out_[i] / measured_steps});
    r.splits.push_back(time_split(busy_[i], boundary_, 0.0, warmup));
  }
  for (size_t n = 0; n < node_traffic_.size(); ++n) {
    const NodeTraffic& t = node_traffic_[n];
    r.nodes.push_back({node_name(static_cast<int64_t>(n)), t.nic_in / measured_steps,
                       t.nic_out / measured_steps, t.interconnect / measured_steps});
  }
  for (size_t i = 0; i < links_.size(); ++i) {
    if (link_bytes_[i] <= 0.0) continue;
    const double bytes = link_bytes_[i] / measured_steps;
    const double bandwidth = links_[i]->get_bandwidth();
    r.links.push_back(
        {links_[i]->get_name(), bytes, bandwidth, bytes / (bandwidth * r.step_time_mean_s)});
  }
  std::sort(r.links.begin(), r.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
  });
  const auto workers = static_cast<double>(schedule.workers);
  for (int64_t w = 0; w < schedule.workers; ++w) {
    const TimeSplit& split = r.splits[static_cast<size_t>(schedule.worker_host(w))];
    r.worker_mean.compute += split.compute / workers;
    r.worker_mean.communication += split.communication / workers;
    r.worker_mean.waiting += split.waiting / workers;
  }
  r.ps_busy_s = ps_busy_ / measured_steps;
  r.worker_sources = plan.worker_sources;
  r.ps_sources = plan.ps_sources;
  r.timeline = timeline_;
  r.messages = messages_;
  return r;
}

}  // namespace ralp::sim
