// World: recording what the actors do and turning it into a StrategyResult.
#include "world.hpp"

#include <algorithm>
#include <stdexcept>

namespace sg4 = simgrid::s4u;

namespace ralp::sim {
namespace {

// Every message carries this token: the simulator moves sizes, not data.
int g_payload_token = 0;

// Total length of the union of [start, end) intervals.
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0.0;
  double open_start = 0.0;
  double open_end = -1.0;
  for (const auto& [start, end] : spans) {
    if (start > open_end) {
      if (open_end > open_start) total += open_end - open_start;
      open_start = start;
      open_end = end;
    } else {
      open_end = std::max(open_end, end);
    }
  }
  if (open_end > open_start) total += open_end - open_start;
  return total;
}

}  // namespace

World::World(const Scenario& s, const StepPlan& p, Platform platform)
    : scenario(s),
      plan(p),
      steps(s.steps + s.warmup_steps),
      warmup(s.warmup_steps),
      workers(s.workers),
      ps_hosts(s.parameter_servers),
      step_mutex_(sg4::Mutex::create()),
      step_done_(sg4::ConditionVariable::create()) {
  for (auto* h : platform.ps) hosts_.push_back(h);
  for (auto* h : platform.workers) hosts_.push_back(h);
  for (int64_t i = 0; i < ps_hosts; ++i) names_.push_back("ps-" + std::to_string(i));
  for (int64_t i = 0; i < workers; ++i) names_.push_back("worker-" + std::to_string(i));
  host_in_.assign(hosts_.size(), 0.0);
  host_out_.assign(hosts_.size(), 0.0);
  busy_.resize(static_cast<size_t>(workers));
  boundary_.assign(static_cast<size_t>(steps), -1.0);
  ps_device_free_.assign(static_cast<size_t>(ps_hosts), 0.0);
}

sg4::Mailbox* World::mailbox(const std::string& kind, int32_t src, int32_t dst) {
  const std::string name = kind + ":" + std::to_string(src) + ">" + std::to_string(dst);
  if (const auto it = mailboxes_.find(name); it != mailboxes_.end()) return it->second;
  // by_name is a simcall: other actors may run meanwhile, so insert only the finished pointer.
  sg4::Mailbox* box = sg4::Mailbox::by_name(name);
  return mailboxes_.emplace(name, box).first->second;
}

void World::add_activity(int32_t host, int32_t peer, ActivityKind kind, int64_t step,
                         const std::string& label, double start, double end, double bytes) {
  if (!measured(step)) return;
  if (host == 0 && ps_hosts > 0 && kind != ActivityKind::send && kind != ActivityKind::receive &&
      kind != ActivityKind::copy) {
    ps_busy_ += end - start;
  }
  if (host >= ps_hosts) {
    const bool is_compute = kind == ActivityKind::compute || kind == ActivityKind::update ||
                            kind == ActivityKind::encode || kind == ActivityKind::aggregate;
    busy_[static_cast<size_t>(host - ps_hosts)].push_back(
        {start, end, static_cast<int32_t>(step), is_compute});
  }
  if (traced(step)) {
    timeline_.push_back(
        {host, peer, kind, static_cast<int32_t>(step), label, start, end, bytes});
  }
}

void World::record_busy(int32_t host, int64_t step, double start, double end, bool compute) {
  if (!measured(step) || host < ps_hosts) return;
  busy_[static_cast<size_t>(host - ps_hosts)].push_back(
      {start, end, static_cast<int32_t>(step), compute});
}

void World::record_work(int32_t host, int64_t step, const std::vector<Work>& work,
                        double start) {
  double at = start;
  for (const Work& piece : work) {
    if (piece.seconds <= 0.0) continue;
    add_activity(host, -1, piece.kind, step, piece.label, at, at + piece.seconds, 0.0);
    at += piece.seconds;
  }
}

void World::run_on_worker(int32_t host, int64_t step, const std::vector<Work>& work) {
  double total = 0.0;
  for (const Work& piece : work) total += std::max(piece.seconds, 0.0);
  if (total <= 0.0) return;
  const double start = sg4::Engine::get_clock();
  // A sleep rather than an execution: the host runs nothing else, and sleeps cost SimGrid a
  // fifth of what executions do.
  sg4::this_actor::sleep_for(total);
  record_work(host, step, work, start);
}

void World::run_on_ps(int64_t shard, int64_t step, const std::vector<Work>& work) {
  double total = 0.0;
  for (const Work& piece : work) total += std::max(piece.seconds, 0.0);
  if (total <= 0.0) return;
  double& free_at = ps_device_free_[static_cast<size_t>(shard)];
  const double start = std::max(sg4::Engine::get_clock(), free_at);
  const double end = start + total;
  free_at = end;
  sg4::this_actor::sleep_until(end);
  record_work(ps_index(shard), step, work, start);
}

void World::busy_wait(int32_t host, int32_t peer, ActivityKind kind, int64_t step,
                      const std::string& label, double seconds) {
  if (seconds <= 0.0) return;
  const double start = sg4::Engine::get_clock();
  sg4::this_actor::sleep_for(seconds);
  add_activity(host, peer, kind, step, label, start, sg4::Engine::get_clock(), 0.0);
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
      }
      it->second.push_back(found->second);
    }
  }
  return it->second;
}

void World::record_transfer(int32_t src, int32_t dst, int64_t bytes, int64_t step,
                            const std::string& label, double start) {
  const double end = sg4::Engine::get_clock();
  const double b = static_cast<double>(bytes);
  if (measured(step)) {
    host_out_[src] += b;
    host_in_[dst] += b;
    for (const int32_t link : route(src, dst)) link_bytes_[link] += b;
  }
  add_activity(src, dst, ActivityKind::send, step, label, start, end, b);
  add_activity(dst, src, ActivityKind::receive, step, label, start, end, b);
}

void World::send(sg4::Mailbox* box, int32_t src, int32_t dst, int64_t bytes, int64_t step,
                 const std::string& label) {
  const double start = sg4::Engine::get_clock();
  box->put(&g_payload_token, static_cast<uint64_t>(bytes));
  record_transfer(src, dst, bytes, step, label, start);
}

void World::set_parts_per_step(int64_t parts) {
  pending_parts_.assign(static_cast<size_t>(steps), parts);
}

void World::complete_part(int64_t step) {
  if (--pending_parts_[static_cast<size_t>(step)] > 0) return;
  std::unique_lock lock(*step_mutex_);
  boundary_[static_cast<size_t>(step)] = sg4::Engine::get_clock();
  // A step is complete once it and every earlier step have no parts left.
  while (completed_step_ + 1 < steps && pending_parts_[static_cast<size_t>(completed_step_ + 1)] == 0) {
    ++completed_step_;
  }
  step_done_->notify_all();
}

void World::wait_step_complete(int64_t step) {
  std::unique_lock lock(*step_mutex_);
  while (completed_step_ < step) step_done_->wait(lock);
}

StrategyResult World::collect() const {
  if (completed_step_ != steps - 1 || finished_workers_ != workers) {
    throw std::runtime_error(
        "the simulation stopped early (deadlock): " + std::to_string(completed_step_ + 1) +
        " of " + std::to_string(steps) + " steps completed, " +
        std::to_string(finished_workers_) + " of " + std::to_string(workers) + " workers finished");
  }
  StrategyResult r;
  r.label = plan.strategy.label;
  r.kind = plan.strategy.kind;
  if (plan.cut) r.cut = scenario.model.layer(*plan.cut).name();
  r.warmup_steps = warmup;
  double previous = 0.0;
  for (const double boundary : boundary_) {
    r.step_times.push_back(boundary - previous);
    previous = boundary;
  }
  const double measured_steps = static_cast<double>(steps - warmup);
  double sum = 0.0;
  for (int64_t k = warmup; k < steps; ++k) sum += r.step_times[static_cast<size_t>(k)];
  r.step_time_s = sum / measured_steps;
  r.images_per_s =
      static_cast<double>(workers * scenario.batch_per_worker) / r.step_time_s;

  for (size_t i = 0; i < hosts_.size(); ++i) {
    r.hosts.push_back({names_[i], host_in_[i] / measured_steps, host_out_[i] / measured_steps});
  }
  for (size_t i = 0; i < links_.size(); ++i) {
    if (link_bytes_[i] <= 0.0) continue;
    const double bytes = link_bytes_[i] / measured_steps;
    const double bandwidth = links_[i]->get_bandwidth();
    r.links.push_back({links_[i]->get_name(), bytes, bandwidth,
                       bytes / (bandwidth * r.step_time_s)});
  }
  std::sort(r.links.begin(), r.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
  });

  for (int64_t w = 0; w < workers; ++w) {
    TimeSplit split;
    for (int64_t k = warmup; k < steps; ++k) {
      const double begin = k == 0 ? 0.0 : boundary_[static_cast<size_t>(k - 1)];
      const double end = boundary_[static_cast<size_t>(k)];
      std::vector<std::pair<double, double>> compute;
      std::vector<std::pair<double, double>> any;
      for (const auto& b : busy_[static_cast<size_t>(w)]) {
        if (b.step != k) continue;
        const double s = std::max(b.start, begin);
        const double e = std::min(b.end, end);
        if (e <= s) continue;
        any.emplace_back(s, e);
        if (b.compute) compute.emplace_back(s, e);
      }
      const double c = union_length(compute);
      const double busy = union_length(any);
      split.compute += c;
      split.communication += busy - c;
      split.waiting += (end - begin) - busy;
    }
    split.compute /= measured_steps;
    split.communication /= measured_steps;
    split.waiting /= measured_steps;
    r.workers.push_back(split);
    r.worker_mean.compute += split.compute / static_cast<double>(workers);
    r.worker_mean.communication += split.communication / static_cast<double>(workers);
    r.worker_mean.waiting += split.waiting / static_cast<double>(workers);
  }
  r.ps_busy_s = ps_busy_ / measured_steps;
  r.worker_sources = plan.worker_sources;
  r.ps_sources = plan.ps_sources;
  r.timeline = timeline_;
  return r;
}

}  // namespace ralp::sim
