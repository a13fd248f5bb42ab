// The analytic step model: each strategy's step as recurrences over the layers, mirroring the
// schedule's streams for one representative worker and pricing transfers by link shares.
#include "ralp/placement/analytic.hpp"

#include "ralp/core/json_input.hpp"
#include "ralp/spec/nodes.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include "ralp/schedule/schedule.hpp"
#include "ralp/spec/nccl_plan.hpp"

namespace ralp::placement {
namespace {

// SimGrid LV08 (the tcp model): latency x 13.01, bandwidth x 0.97, a window of gamma bytes.
constexpr double kTcpLatencyFactor = 13.01;
constexpr double kTcpBandwidthFactor = 0.97;
constexpr double kTcpGamma = 4194304.0;
constexpr double kTcpCrossTraffic = 0.05;

constexpr double kHeader = static_cast<double>(schedule::kHeaderBytes);

// The fluid model of staggered pushes runs when workers^2 x pushes is at most this (about a
// second of arithmetic); larger clusters take the sharing-count approximation.
constexpr double kFluidWork = 1e8;
// Events of the fluid model this close (relative to the clock) happen together.
constexpr double kTimeTie = 1e-12;

double seconds_for(double bytes, const std::optional<BytesPerSecond>& rate) {
  return rate ? bytes / rate->value() : 0.0;
}

// Messages as fluid flows over links: each connection sends its messages one after another, a
// message once it is ready and the previous one has arrived, its transfer after the route's
// latency; the flows in transfer share the links as SimGrid's max-min system does (progressive
// filling: a flow loads each link by its weight there, and every flow through a saturated link
// stops growing, whatever its weight), each capped at `window` bytes per second. A message may
// also wait for another connection's message to arrive. Returns each message's arrival, indexed
// like `queues`. Cost O(messages x flows in transfer x links per flow).
struct FluidMessage {
  double ready = 0.0;  // when it may leave; with `after`, how long after that message arrives
  double bytes = 0.0;  // on the wire, header included
  std::optional<std::pair<size_t, size_t>> after;  // (connection, position) it waits for
};
struct FluidLoad {
  size_t link = 0;
  double weight = 1.0;  // bytes on the link per byte of the flow
};
std::vector<std::vector<double>> fluid_arrivals(
    const std::vector<std::vector<FluidMessage>>& queues,
    const std::vector<std::vector<FluidLoad>>& links_of,  // per connection: the links it loads
    const std::vector<double>& capacity, double latency, double window) {
  std::vector<std::vector<double>> arrival(queues.size());
  std::vector<std::vector<char>> arrived(queues.size());
  for (size_t c = 0; c < queues.size(); ++c) {
    arrival[c].assign(queues[c].size(), 0.0);
    arrived[c].assign(queues[c].size(), 0);
  }
  struct Flow {
    size_t connection = 0;
    size_t position = 0;
    double remaining = 0.0;
    double rate = 0.0;
    double end = 0.0;
  };
  // Messages in their latency: (time the transfer starts, connection, position).
  using Start = std::tuple<double, size_t, size_t>;
  std::priority_queue<Start, std::vector<Start>, std::greater<>> pending;
  // Messages whose connection is free but whose `after` has not arrived: (connection, position,
  // when the connection became free), by the message they wait for.
  std::multimap<std::pair<size_t, size_t>, std::tuple<size_t, size_t, double>> waiting;
  const auto post = [&](size_t c, size_t position, double free) {
    if (position >= queues[c].size()) return;
    const FluidMessage& m = queues[c][position];
    double ready = m.ready;
    if (m.after) {
      const auto [ac, ap] = *m.after;
      if (!arrived[ac][ap]) {
        waiting.emplace(*m.after, std::make_tuple(c, position, free));
        return;
      }
      ready += arrival[ac][ap];
    }
    pending.emplace(std::max(free, ready) + latency, c, position);
  };
  for (size_t c = 0; c < queues.size(); ++c) post(c, 0, 0.0);

  std::vector<Flow> active;
  std::vector<double> left(capacity.size());
  std::vector<double> usage(capacity.size());
  std::vector<char> frozen;
  constexpr double kFull = 1e-9;
  const auto share = [&]() {
    for (const Flow& f : active) {
      for (const FluidLoad& l : links_of[f.connection]) left[l.link] = capacity[l.link];
    }
    frozen.assign(active.size(), 0);
    for (Flow& f : active) f.rate = 0.0;
    size_t unfrozen = active.size();
    while (unfrozen > 0) {
      for (const Flow& f : active) {
        for (const FluidLoad& l : links_of[f.connection]) usage[l.link] = 0.0;
      }
      double step = std::numeric_limits<double>::infinity();
      for (size_t k = 0; k < active.size(); ++k) {
        if (frozen[k]) continue;
        for (const FluidLoad& l : links_of[active[k].connection]) usage[l.link] += l.weight;
        step = std::min(step, window - active[k].rate);
      }
      for (size_t k = 0; k < active.size(); ++k) {
        if (frozen[k]) continue;
        for (const FluidLoad& l : links_of[active[k].connection]) {
          step = std::min(step, left[l.link] / usage[l.link]);
        }
      }
      step = std::max(step, 0.0);
      for (size_t k = 0; k < active.size(); ++k) {
        if (frozen[k]) continue;
        active[k].rate += step;
        for (const FluidLoad& l : links_of[active[k].connection]) left[l.link] -= step * l.weight;
      }
      for (size_t k = 0; k < active.size(); ++k) {
        if (frozen[k]) continue;
        bool full = active[k].rate >= window * (1.0 - kFull);
        for (const FluidLoad& l : links_of[active[k].connection]) {
          full = full || left[l.link] <= kFull * capacity[l.link];
        }
        if (full) {
          frozen[k] = 1;
          --unfrozen;
        }
      }
    }
  };

  double now = 0.0;
  while (!active.empty() || !pending.empty()) {
    double next = pending.empty() ? std::numeric_limits<double>::infinity()
                                  : std::get<0>(pending.top());
    for (Flow& f : active) {
      f.end = now + f.remaining / f.rate;
      next = std::min(next, f.end);
    }
    for (Flow& f : active) f.remaining -= f.rate * (next - now);
    now = next;
    // Transfers that end now (within rounding) arrive; their connection posts its next message.
    const double tie = kTimeTie * std::max(1.0, now);
    for (size_t k = 0; k < active.size();) {
      const Flow& f = active[k];
      if (f.end > now + tie) {
        ++k;
        continue;
      }
      const size_t c = f.connection;
      const size_t position = f.position;
      arrival[c][position] = now;
      arrived[c][position] = 1;
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(k));
      post(c, position + 1, now);
      const auto [first, last] = waiting.equal_range({c, position});
      std::vector<std::tuple<size_t, size_t, double>> released;
      for (auto it = first; it != last; ++it) released.push_back(it->second);
      waiting.erase(first, last);
      for (const auto& [wc, wp, free] : released) post(wc, wp, free);
    }
    while (!pending.empty() && std::get<0>(pending.top()) <= now + tie) {
      const auto [t, c, position] = pending.top();
      pending.pop();
      active.push_back({c, position, queues[c][position].bytes, 0.0, 0.0});
    }
    share();
  }
  return arrival;
}

// Transfers between roles: the route's latency and a flow's rate given how many flows share the
// PS end's link, the worker end's link and (when there is one) the backbone.
struct Links {
  const AnalyticNetwork& net;

  [[nodiscard]] double backbone_latency() const {
    return net.backbone ? net.backbone->latency.value() : 0.0;
  }
  // Inside a node, a route to the NIC crosses the device's PCIe link and its host link.
  [[nodiscard]] double node_latency() const {
    return net.devices_per_node > 1 ? 2.0 * net.interconnect_latency : 0.0;
  }
  [[nodiscard]] double worker_ps_latency() const {
    // Co-located on one node: a device's link and host link, and the server's link.
    if (net.colocated && net.nodes == 1) return 3.0 * net.interconnect_latency;
    return net.worker_nic.latency.value() + net.ps_nic.latency.value() + backbone_latency() +
           node_latency();
  }
  [[nodiscard]] double worker_worker_latency() const {
    return 2.0 * net.worker_nic.latency.value() + backbone_latency();
  }
  [[nodiscard]] double ps_ps_latency() const {
    return 2.0 * net.ps_nic.latency.value() + backbone_latency();
  }
  [[nodiscard]] double cap(double rate, double route_latency, double total_flows) const {
    if (net.backbone) {
      rate = std::min(rate, net.bandwidth_factor * net.backbone->bandwidth.value() / total_flows);
    }
    if (net.tcp_window && route_latency > 0.0) rate = std::min(rate, kTcpGamma / (2.0 * route_latency));
    return rate;
  }
  // A worker <-> co-located PS flow, `at_ps` at the shard and `at_worker` at the worker: every
  // flow of a shard crosses its link; on one node the devices' flows share their host links;
  // across nodes the share of flows that leave a node, (N - 1) / N, crosses the NICs.
  [[nodiscard]] double colocated_rate(double at_ps, double at_worker) const {
    const double f = net.bandwidth_factor;
    double rate = f * net.ps_link / at_ps;
    if (net.device_link > 0.0) rate = std::min(rate, f * net.device_link / at_worker);
    const auto nodes = static_cast<double>(net.nodes);
    if (nodes <= 1.0) {
      // The devices talking split among the host links (at_ps of them, one per flow).
      const double per_root = std::max(1.0, at_ps / static_cast<double>(net.host_links));
      rate = std::min(rate, f * net.device_link / (per_root * at_worker));
      return cap(rate, worker_ps_latency(), at_ps * at_worker);
    }
    const double remote = (nodes - 1.0) / nodes;
    rate = std::min({rate, f * net.ps_nic.bandwidth.value() / (remote * at_ps),
                     f * net.worker_nic.bandwidth.value() / (remote * at_worker * net.nic_sharers)});
    return cap(rate, worker_ps_latency(), at_ps * at_worker);
  }
  // A worker <-> PS flow among `at_ps` on the PS's link and `at_worker` on the worker's.
  [[nodiscard]] double ps_rate(double at_ps, double at_worker) const {
    if (net.colocated) return colocated_rate(at_ps, at_worker);
    double rate = std::min(net.bandwidth_factor * net.ps_nic.bandwidth.value() / at_ps,
                           net.bandwidth_factor * net.worker_nic.bandwidth.value() /
                               (at_worker * net.nic_sharers));
    if (net.device_link > 0.0) {
      rate = std::min(rate, net.bandwidth_factor * net.device_link / at_worker);
    }
    return cap(rate, worker_ps_latency(), at_ps * at_worker);
  }
  // One message of `payload` bytes (plus its header) at `rate`.
  [[nodiscard]] double ps_message(double payload, double rate) const {
    return net.latency_factor * worker_ps_latency() + (payload + kHeader) / rate;
  }
  [[nodiscard]] double worker_message(double payload, double sharers) const {
    double rate = net.bandwidth_factor * net.worker_nic.bandwidth.value() / sharers;
    rate = cap(rate, worker_worker_latency(), sharers);
    return net.latency_factor * worker_worker_latency() + (payload + kHeader) / rate;
  }
  [[nodiscard]] double ps_ps_message() const {
    const double rate = cap(net.bandwidth_factor * net.ps_nic.bandwidth.value(), ps_ps_latency(), 1.0);
    return net.latency_factor * ps_ps_latency() + kHeader / rate;
  }
};

struct Model {
  const Scenario& scenario;
  const schedule::StepPlan& plan;
  Links links;
  double workers = 1.0;
  double shards = 1.0;
  AnalyticDetail detail = AnalyticDetail::fluid;
  // Local aggregation (ps on nodes): `workers` counts the nodes' first devices, which pass each
  // group's values on to the node's other `members` and sum their gradients, each message over
  // the peer links (the first device's link shared by the members).
  double members = 0.0;

  // One group's values passed on to, or its gradients gathered from, every member at once: as
  // many flows as members share the first device's link.
  [[nodiscard]] double gather(double bytes) const { return over_peer_link(members, bytes); }
  // `others` messages of `bytes` each at once over the first device's peer link.
  [[nodiscard]] double over_peer_link(double others, double bytes) const {
    if (others <= 0.0) return 0.0;
    return others * (bytes + kHeader) / (links.net.bandwidth_factor * links.net.peer_link);
  }

  // The head's boundaries gathered on nodes (StepPlan::gathers_boundaries): the other devices'
  // boundaries reach the node's first device at once over its peer link, and their parts of the
  // activation gradient go back the same way.
  [[nodiscard]] double head_devices() const {
    return static_cast<double>(plan.micro_batch_devices);
  }
  [[nodiscard]] double head_gather(int64_t bytes_per_device) const {
    return over_peer_link(head_devices() - 1.0, static_cast<double>(bytes_per_device));
  }
  // A micro-batch's activation gradient from the head: bytes, and the time from its arrival to
  // the start of the backward of every device it serves (its copy, and the parts passed on).
  [[nodiscard]] double reply_bytes() const {
    return static_cast<double>(plan.activation_grad_bytes) * head_devices();
  }
  [[nodiscard]] double reply_to_backward() const {
    return seconds_for(reply_bytes(), plan.worker_pcie) + head_gather(plan.activation_grad_bytes);
  }

  [[nodiscard]] double backward_of(LayerId l) const {
    return plan.worker[l].backward_data.value() + plan.worker[l].backward_weight.value();
  }
  [[nodiscard]] double wire(int64_t bytes) const { return static_cast<double>(plan.compressed(bytes)); }

  // Pulls (ps, ralp): every shard sends its groups in forward order, to every worker at once;
  // returns when each tail layer may run its forward on a worker (after its copy to the device).
  [[nodiscard]] std::vector<double> pulls_ready() const {
    std::vector<double> ready(plan.tail_end, 0.0);
    if (!plan.uses_shards()) return ready;
    std::vector<double> shard_copy(plan.shards, 0.0);
    std::vector<double> shard_send(plan.shards, 0.0);
    const double rate = links.ps_rate(workers, shards);
    double worker_copy = 0.0;
    for (LayerId l = 0; l < plan.tail_end; ++l) {
      for (const VariableGroup& g : plan.groups_by_layer[l]) {
        const double bytes = static_cast<double>(g.bytes);
        double& copied = shard_copy[static_cast<size_t>(g.shard)];
        copied += seconds_for(bytes, plan.ps_pcie);
        double& sent = shard_send[static_cast<size_t>(g.shard)];
        sent = std::max(sent, copied) + links.ps_message(bytes, rate);
        worker_copy = std::max(worker_copy, sent) + seconds_for(bytes, plan.worker_pcie);
        ready[l] = std::max(ready[l], worker_copy + gather(bytes));
      }
    }
    return ready;
  }

  // A worker's tail backward from `start`: when each group's push is ready to leave (after its
  // encode and copy), in backward order, and when the backward ends.
  struct Push {
    LayerId layer = 0;
    int64_t shard = 0;
    double bytes = 0.0;  // raw
    double wire = 0.0;
    double ready = 0.0;  // relative to the backward's start
  };
  struct Backward {
    std::vector<Push> pushes;
    std::vector<double> layer_done;  // relative, by layer
    double end = 0.0;
  };
  [[nodiscard]] Backward backward() const {
    Backward out;
    out.layer_done.assign(plan.tail_end, 0.0);
    double device = 0.0;
    double copy = 0.0;
    for (LayerId l = plan.tail_end; l-- > 0;) {
      device += backward_of(l);
      out.layer_done[l] = device;
      for (const VariableGroup& g : plan.groups_by_layer[l]) {
        const double bytes = static_cast<double>(g.bytes);
        if (members > 0.0) {
          device = std::max(device, out.layer_done[l] + gather(bytes)) +
                   members * bytes / plan.worker_sum_rate.value();
        }
        if (plan.compression != CompressionKind::none) {
          device += bytes / plan.worker_encode_rate.value();
        }
        copy = std::max(copy, device) + seconds_for(wire(g.bytes), plan.worker_pcie);
        out.pushes.push_back({l, g.shard, bytes, wire(g.bytes), copy});
      }
    }
    out.end = device;
    return out;
  }

  // Push arrival times at their shards for one worker whose backward starts at `start`, with
  // `sharing` workers pushing at once (and, unless `alone`, a layer's pushes to several shards
  // sharing the worker's link).
  [[nodiscard]] std::vector<double> push_arrivals(const Backward& b, double start, double sharing,
                                                  bool alone = false) const {
    std::vector<double> connection(plan.shards, 0.0);
    std::vector<double> out;
    out.reserve(b.pushes.size());
    for (size_t i = 0; i < b.pushes.size(); ++i) {
      const Push& p = b.pushes[i];
      // Pushes of one layer to different shards leave together and share the worker's link.
      double same_layer = 0.0;
      for (const Push& q : b.pushes) same_layer += q.layer == p.layer ? 1.0 : 0.0;
      if (alone) same_layer = 1.0;
      double& c = connection[static_cast<size_t>(p.shard)];
      c = std::max(c, start + p.ready) + links.ps_message(p.wire, links.ps_rate(sharing, same_layer));
      out.push_back(c);
    }
    return out;
  }

  // The staggered workers' pushes as fluid flows (ralp: the head releases workers one after
  // another, so their pushes overlap only in part): one connection per worker and shard, over
  // the worker's uplink, the shard's downlink and the backbone. With `replies` (when each
  // worker's head reply may leave ps-0), the replies are flows too, sharing the links with the
  // pushes, and `starts` is set to when each worker's backward starts after its reply; else
  // `starts` gives them. Returns arrival[i][w], when push i of worker w has reached its shard.
  [[nodiscard]] std::vector<std::vector<double>> fluid_push_arrivals(
      const Backward& b, std::vector<double>& starts, const std::vector<double>* replies) const {
    const size_t w_count = replies ? replies->size() : starts.size();
    const size_t s_count = static_cast<size_t>(std::max<int64_t>(plan.shards, 1));
    const double grad = reply_bytes();
    const double grad_copy = reply_to_backward();
    // Each shard's pushes in backward order.
    std::vector<std::vector<size_t>> order(s_count);
    for (size_t i = 0; i < b.pushes.size(); ++i) order[static_cast<size_t>(b.pushes[i].shard)].push_back(i);
    FluidNetwork f = fluid_network(w_count, s_count);
    std::vector<std::vector<FluidMessage>> queues;
    std::vector<std::vector<FluidLoad>> links_of;
    const size_t first_reply = w_count * s_count;
    for (size_t w = 0; w < w_count; ++w) {
      for (size_t shard = 0; shard < s_count; ++shard) {
        std::vector<FluidMessage> q;
        for (const size_t i : order[shard]) {
          if (replies) {
            q.push_back({grad_copy + b.pushes[i].ready, b.pushes[i].wire + kHeader,
                         std::make_pair(first_reply + w, size_t{0})});
          } else {
            q.push_back({starts[w] + b.pushes[i].ready, b.pushes[i].wire + kHeader, std::nullopt});
          }
        }
        queues.push_back(std::move(q));
        links_of.push_back(f.worker_to_ps(w, shard));
      }
    }
    if (replies) {
      for (size_t w = 0; w < w_count; ++w) {
        queues.push_back({{(*replies)[w], grad + kHeader, std::nullopt}});
        links_of.push_back(f.ps_to_worker(0, w));
      }
    }
    const std::vector<std::vector<double>> got =
        fluid_arrivals(queues, links_of, f.capacity, f.latency, f.window);
    if (replies) {
      starts.resize(w_count);
      for (size_t w = 0; w < w_count; ++w) starts[w] = got[first_reply + w][0] + grad_copy;
    }
    std::vector<std::vector<double>> arrival(b.pushes.size(), std::vector<double>(w_count, 0.0));
    for (size_t w = 0; w < w_count; ++w) {
      for (size_t shard = 0; shard < s_count; ++shard) {
        const std::vector<double>& a = got[w * s_count + shard];
        for (size_t k = 0; k < order[shard].size(); ++k) arrival[order[shard][k]][w] = a[k];
      }
    }
    return arrival;
  }

  // The star's links for the fluid model: each PS's downlink and uplink, each worker's uplink and
  // downlink, and the backbone (shared by both directions).
  struct FluidNetwork {
    size_t workers = 0;
    size_t shards = 0;
    bool backbone = false;
    double cross_traffic = 0.0;
    std::vector<double> capacity;
    double latency = 0.0;
    double window = 0.0;
    [[nodiscard]] size_t ps_down(size_t s) const { return s; }
    [[nodiscard]] size_t ps_up(size_t s) const { return shards + s; }
    [[nodiscard]] size_t worker_up(size_t w) const { return 2 * shards + w; }
    [[nodiscard]] size_t worker_down(size_t w) const { return 2 * shards + workers + w; }
    [[nodiscard]] size_t backbone_link() const { return 2 * shards + 2 * workers; }
    // A flow up `from_up`, down `to_down` (and across the backbone), with its cross-traffic on
    // the reverse route's `reverse_up` and `reverse_down`.
    [[nodiscard]] std::vector<FluidLoad> route(size_t from_up, size_t to_down, size_t reverse_up,
                                               size_t reverse_down) const {
      std::vector<FluidLoad> out{{from_up, 1.0}, {to_down, 1.0}};
      if (cross_traffic > 0.0) {
        out.push_back({reverse_up, cross_traffic});
        out.push_back({reverse_down, cross_traffic});
      }
      if (backbone) out.push_back({backbone_link(), 1.0 + cross_traffic});
      return out;
    }
    [[nodiscard]] std::vector<FluidLoad> worker_to_ps(size_t w, size_t s) const {
      return route(worker_up(w), ps_down(s), ps_up(s), worker_down(w));
    }
    [[nodiscard]] std::vector<FluidLoad> ps_to_worker(size_t s, size_t w) const {
      return route(ps_up(s), worker_down(w), worker_up(w), ps_down(s));
    }
  };
  [[nodiscard]] FluidNetwork fluid_network(size_t w_count, size_t s_count) const {
    const AnalyticNetwork& net = links.net;
    FluidNetwork f;
    f.workers = w_count;
    f.shards = s_count;
    f.backbone = net.backbone.has_value();
    f.cross_traffic = net.cross_traffic;
    f.capacity.assign(2 * s_count, net.bandwidth_factor * net.ps_nic.bandwidth.value());
    f.capacity.resize(2 * s_count + 2 * w_count,
                      net.bandwidth_factor * net.worker_nic.bandwidth.value());
    if (net.backbone) f.capacity.push_back(net.bandwidth_factor * net.backbone->bandwidth.value());
    f.latency = net.latency_factor * links.worker_ps_latency();
    f.window = net.tcp_window && links.worker_ps_latency() > 0.0
                   ? kTcpGamma / (2.0 * links.worker_ps_latency())
                   : std::numeric_limits<double>::infinity();
    return f;
  }

  // A shard's sums and updates (backward order, W pushes each), from `device_free`; `arrivals`
  // gives the push of group i from worker w. Returns when its last update ends.
  template <typename Arrival>
  [[nodiscard]] double shard_end(int64_t shard, const Backward& b, double device_free,
                                 bool lockstep, const Arrival& arrival) const {
    double device = device_free;
    double copy = 0.0;
    for (size_t i = 0; i < b.pushes.size(); ++i) {
      const Push& p = b.pushes[i];
      if (p.shard != shard) continue;
      const double c = seconds_for(p.wire, plan.ps_pcie);
      double d = p.bytes / plan.ps_sum_rate.value();
      if (plan.compression != CompressionKind::none) d += p.bytes / plan.ps_encode_rate.value();
      if (lockstep) {
        // W identical copies then sums, as a two-stage flow shop.
        const double start = std::max(copy, arrival(i, 0));
        const double first = std::max(device, start + c);
        device = d >= c ? first + workers * d : std::max(first + workers * d, start + workers * c + d);
        copy = start + workers * c;
      } else {
        for (int64_t w = 0; w < static_cast<int64_t>(workers); ++w) {
          copy = std::max(copy, arrival(i, w)) + c;
          device = std::max(device, copy) + d;
        }
      }
      device += p.bytes / plan.ps_update_rate.value();
    }
    return device;
  }

  // ps and ralp (the head's part on ps-0 when there is one).
  [[nodiscard]] AnalyticEstimate shards_step() const {
    AnalyticEstimate e;
    const std::vector<double> ready = pulls_ready();
    double forward = 0.0;
    for (LayerId l = 0; l < plan.tail_end; ++l) {
      forward = std::max(forward, ready[l]) + plan.worker[l].forward.value();
    }
    e.forward_end_s = forward;
    const Backward b = backward();
    std::vector<double> starts(1, forward);
    double head_update = 0.0;
    // Workers in lockstep push alike, W sharing each link; staggered workers' pushes overlap
    // only in part: a fluid model of the links over them (and over the head's replies, which
    // share the links with them) where it is affordable, else as many sharing as start within
    // one worker's push phase.
    const double fluid_work = workers * workers * static_cast<double>(b.pushes.size());
    const bool fluid_affordable =
        detail == AnalyticDetail::fluid && !b.pushes.empty() && fluid_work <= kFluidWork;
    bool fluid = false;
    std::vector<std::vector<double>> fluid_arrival;
    const bool bound = detail == AnalyticDetail::lower_bound;
    if (plan.has_head()) {
      const std::vector<double> leaves = reply_leaves(forward, head_update);
      if (bound) {
        starts = replies_alone(leaves);
      } else if (fluid_affordable) {
        fluid_arrival = fluid_push_arrivals(b, starts, &leaves);
        fluid = true;
      } else {
        starts = reply_arrivals(leaves);
      }
    }
    const double first = *std::min_element(starts.begin(), starts.end());
    const double last = *std::max_element(starts.begin(), starts.end());
    const bool lockstep = !fluid && last - first <= 0.0;
    if (!fluid && !lockstep && fluid_affordable) {
      fluid_arrival = fluid_push_arrivals(b, starts, nullptr);
      fluid = true;
    }
    std::vector<double> relative;
    if (bound && !lockstep) {
      relative = push_arrivals(b, 0.0, 1.0, true);
    } else if (!fluid) {
      double sharing = workers;
      if (!lockstep && !b.pushes.empty()) {
        const std::vector<double> alone = push_arrivals(b, 0.0, 1.0);
        const double phase = alone.back() - b.pushes.front().ready;
        const double spacing = (last - first) / std::max(1.0, workers - 1.0);
        sharing = std::clamp(std::ceil(phase / spacing), 1.0, workers);
      }
      relative = push_arrivals(b, 0.0, sharing);
    }
    double end = head_update;
    double last_shard_end = 0.0;
    for (int64_t s = 0; s < plan.shards; ++s) {
      const double free = s == 0 ? head_update : 0.0;
      const double t = shard_end(s, b, free, lockstep, [&](size_t i, int64_t w) {
        if (fluid) return fluid_arrival[i][static_cast<size_t>(w)];
        return starts[lockstep ? 0 : static_cast<size_t>(w)] + relative[i];
      });
      if (s == 0) {
        end = std::max(end, t);
      } else {
        last_shard_end = std::max(last_shard_end, t);
      }
    }
    if (bound && !lockstep) {
      // Every push to a shard crosses its downlink, from the earliest start on.
      for (int64_t s = 0; s < plan.shards; ++s) {
        double bytes = 0.0;
        double earliest = std::numeric_limits<double>::infinity();
        for (const Push& p : b.pushes) {
          if (p.shard != s) continue;
          bytes += workers * (p.wire + kHeader);
          earliest = std::min(earliest, first + p.ready);
        }
        if (bytes <= 0.0) continue;
        const double t = earliest + links.net.latency_factor * links.worker_ps_latency() +
                         bytes / (links.net.bandwidth_factor * links.net.ps_nic.bandwidth.value());
        (s == 0 ? end : last_shard_end) = std::max(s == 0 ? end : last_shard_end, t);
      }
    }
    e.backward_end_s = last + b.end;
    if (plan.shards > 1) {
      // Shards 1.. report to ps-0, which releases them once it is done too.
      end = std::max(end, last_shard_end + links.ps_ps_message()) + links.ps_ps_message();
    }
    e.step_time_s = std::max(end, e.backward_end_s);
    return e;
  }

  // The boundary's trip to the head PS and the head's passes: returns when each worker's reply
  // may leave ps-0 (its pass and its copy done), and sets when the head's update ends.
  // With the boundaries gathered on nodes, a micro-batch is a node's, sent by its first device.
  std::vector<double> reply_leaves(double forward_end, double& head_update) const {
    const double boundary = static_cast<double>(plan.boundary_bytes) * head_devices();
    const double grad = reply_bytes();
    const int64_t senders = plan.micro_batches();
    const double sent =
        forward_end + head_gather(plan.boundary_bytes) + seconds_for(boundary, plan.worker_pcie);
    const double arrived = sent + links.ps_message(
                                      boundary, links.ps_rate(static_cast<double>(senders), 1.0));
    const double copy_in = seconds_for(boundary, plan.ps_pcie);
    const double copy_out = seconds_for(grad, plan.ps_pcie);
    std::vector<double> leaves(static_cast<size_t>(senders));
    double device = 0.0;
    // The boundary copies come first on the stream.
    double copy = arrived + static_cast<double>(senders) * copy_in;
    const bool per_worker = plan.strategy.head_mode == HeadMode::per_worker;
    if (!per_worker) device = copy + plan.head_full_batch.value();
    for (int64_t k = 0; k < senders; ++k) {
      if (per_worker) {
        device = std::max(device, arrived + static_cast<double>(k + 1) * copy_in) +
                 plan.head_pass_seconds(k);
      }
      copy = std::max(copy, device) + copy_out;
      leaves[static_cast<size_t>(k)] = copy;
    }
    head_update = device + static_cast<double>(plan.head_param_bytes) / plan.ps_update_rate.value();
    return leaves;
  }

  // When each worker's backward could start at the earliest, its reply having left at `leaves`
  // and crossed the links alone.
  [[nodiscard]] std::vector<double> replies_alone(const std::vector<double>& leaves) const {
    const double grad = reply_bytes();
    std::vector<double> starts(leaves.size());
    for (size_t w = 0; w < leaves.size(); ++w) {
      starts[w] = leaves[w] + links.ps_message(grad, links.ps_rate(1.0, 1.0)) + reply_to_backward();
    }
    return starts;
  }

  // When each worker's backward may start, its reply having left at `leaves`: the replies as
  // fluid flows sharing the PS's uplink where affordable, else one after another at the link's
  // full rate.
  [[nodiscard]] std::vector<double> reply_arrivals(const std::vector<double>& leaves) const {
    const double grad = reply_bytes();
    const size_t w_count = leaves.size();
    std::vector<double> starts(w_count);
    if (detail == AnalyticDetail::fluid && workers * workers <= kFluidWork) {
      const FluidNetwork f = fluid_network(w_count, 1);
      std::vector<std::vector<FluidMessage>> replies;
      std::vector<std::vector<FluidLoad>> links_of;
      for (size_t w = 0; w < w_count; ++w) {
        replies.push_back({{leaves[w], grad + kHeader, std::nullopt}});
        links_of.push_back(f.ps_to_worker(0, w));
      }
      const auto got = fluid_arrivals(replies, links_of, f.capacity, f.latency, f.window);
      for (size_t w = 0; w < w_count; ++w) starts[w] = got[w][0] + reply_to_backward();
      return starts;
    }
    const double reply_alone = (grad + kHeader) / links.ps_rate(1.0, 1.0);
    const double reply_latency = links.net.latency_factor * links.worker_ps_latency();
    double uplink = 0.0;
    for (size_t w = 0; w < w_count; ++w) {
      uplink = std::max(uplink, leaves[w]) + reply_alone;
      starts[w] = uplink + reply_latency + reply_to_backward();
    }
    return starts;
  }

  // The ring's slowest hop: the workers' NICs; on nodes, NCCL's ring in node order, whose hops
  // between nodes cross each end's device link and NIC (every NIC carries one hop each way) and
  // whose hops inside a node cross the devices' peer links.
  struct RingHop {
    double bandwidth = 0.0;
    double latency = 0.0;
  };
  [[nodiscard]] RingHop ring_hop() const {
    const AnalyticNetwork& n = links.net;
    if (n.devices_per_node <= 1) return {n.worker_nic.bandwidth.value(), links.worker_worker_latency()};
    const double inside = (n.pcie_roots ? 4.0 : 2.0) * n.interconnect_latency;
    RingHop hop{n.ring_peer_link, inside};
    if (n.nodes > 1) {
      hop.bandwidth = std::min({hop.bandwidth, n.device_link, n.worker_nic.bandwidth.value()});
      hop.latency = std::max(inside, links.worker_worker_latency() + 2.0 * links.node_latency());
    }
    return hop;
  }

  // allreduce and hybrid.
  [[nodiscard]] AnalyticEstimate ring_step() const {
    AnalyticEstimate e;
    double forward = 0.0;
    for (LayerId l = 0; l < plan.tail_end; ++l) forward += plan.worker[l].forward.value();
    e.forward_end_s = forward;
    double start = forward;
    double head_update = 0.0;
    if (plan.has_head()) {
      const std::vector<double> leaves = reply_leaves(forward, head_update);
      const std::vector<double> starts = detail == AnalyticDetail::lower_bound
                                             ? replies_alone(leaves)
                                             : reply_arrivals(leaves);
      start = *std::max_element(starts.begin(), starts.end());
    }
    const Backward b = backward();
    double ring = 0.0;
    // Hierarchical: the ring joins the nodes' first devices, each of which first gathers and sums
    // its node's buffers over the peer links and afterwards sends the result back.
    const bool hierarchical = plan.hierarchical();
    const double per_node = static_cast<double>(plan.devices_per_node);
    const double members = hierarchical ? workers / per_node : workers;
    const double peer = links.net.bandwidth_factor * links.net.peer_link;
    double sums = 0.0;       // the first device's sums so far (hierarchical)
    double summed = 0.0;     // when its last sum ended
    double sent_back = 0.0;  // when its last buffer reached the node's other devices
    if (plan.workers > 1) {
      // Each worker tells worker-0 the buffer is ready; worker-0 answers every one with a go.
      const double negotiate = members > 1.0 ? 2.0 * links.worker_message(0.0, members - 1.0) : 0.0;
      const double phases = 2.0 * (members - 1.0);
      const RingHop hop = ring_hop();
      const double latency = links.net.latency_factor * hop.latency;
      const double nccl_per_byte =
          plan.nccl ? nccl_seconds_per_byte(scenario, links.net.bandwidth_factor) : 0.0;
      // Each ring link carries one flow forward and the previous member's reverse load.
      double rate = links.net.bandwidth_factor * hop.bandwidth / (1.0 + links.net.cross_traffic);
      rate = links.cap(rate, hop.latency, members);
      for (const schedule::FusionBuffer& buffer : schedule::fusion_buffers(plan)) {
        const double produced = start + b.layer_done[buffer.last_layer];
        double ready = produced + sums;
        const double bytes = static_cast<double>(buffer.bytes);
        if (hierarchical) {
          // The node's buffers arrive over the first device's peer link; its sums take its
          // device between backward layers, delaying the layers after them.
          const double gathered = produced + (per_node - 1.0) * (bytes + kHeader) / peer;
          const double sum = (per_node - 1.0) * bytes / plan.worker_sum_rate.value();
          summed = std::max({summed, ready, gathered}) + sum;
          sums += sum;
          ready = summed;
        }
        double t = std::max(ring, ready + negotiate);
        if (plan.compression != CompressionKind::none) {
          t += 2.0 * static_cast<double>(buffer.bytes) / plan.worker_encode_rate.value();
        }
        const double chunk = static_cast<double>(buffer.wire_bytes) / members;
        if (members > 1.0 && plan.nccl) {
          // NCCL's tuning model (spec/nccl_plan.hpp): its latency, then the channels' flows at
          // the chosen protocol's share of their busiest link.
          const int64_t sent = plan.compressed(buffer.bytes);
          const NcclCost cost = nccl_allreduce_choice(*plan.nccl, sent, plan.nccl_forced);
          t += cost.time(0).value() +
               phases * (chunk + kHeader) * nccl_per_byte / nccl_efficiency(*plan.nccl, cost, sent) +
               (members - 1.0) * chunk / plan.worker_sum_rate.value();
        } else if (members > 1.0) {
          t += phases * latency + phases * (chunk + kHeader) / rate +
               (members - 1.0) * chunk / plan.worker_sum_rate.value();
        }
        ring = t;
        // The sums go back while the next buffer's ring runs.
        if (hierarchical) sent_back = std::max(sent_back, t) + (per_node - 1.0) * (bytes + kHeader) / peer;
      }
    }
    e.backward_end_s = start + b.end + sums;
    const double update = std::max({ring, sent_back, e.backward_end_s}) +
                          static_cast<double>(plan.tail_param_bytes) / plan.worker_update_rate.value();
    e.step_time_s = std::max(update, head_update);
    return e;
  }
};

// The slowest hop of the ring in node order inside a node: a pair's NVLink links on the
// cube-mesh (or PCIe where the pair has none), NVSwitch's per-device bandwidth, else PCIe.
double ring_peer_bandwidth(const Scenario& scenario, double device_link) {
  const auto& link = scenario.nodes.interconnect;
  if (!link || link->kind != InterconnectKind::nvlink) return peer_link_bandwidth(scenario).value();
  const int64_t d = scenario.nodes.devices_per_node;
  const bool closes = scenario.workers == d;  // one node: the ring returns to its first device
  double slowest = peer_link_bandwidth(scenario).value();
  for (int64_t a = 0; a + 1 < d || (closes && a + 1 == d && d > 2); ++a) {
    const int64_t b = (a + 1) % d;
    const auto direct = direct_peer_bandwidth(scenario, a, b);
    slowest = std::min(slowest, direct ? direct->value() : device_link);
  }
  return slowest;
}

// The node's other devices sending to its first one at once, as one link of the bandwidth that
// gives their time: on the cube-mesh, NVLink pairs each on their own and the others sharing the
// first device's PCIe link; elsewhere the per-device peer bandwidth.
double leader_peer_bandwidth(const Scenario& scenario, double device_link) {
  const auto& link = scenario.nodes.interconnect;
  const int64_t d = scenario.nodes.devices_per_node;
  if (!link || link->kind != InterconnectKind::nvlink || d < 2) {
    return peer_link_bandwidth(scenario).value();
  }
  double seconds_per_byte = 0.0;
  double over_pcie = 0.0;
  for (int64_t member = 1; member < d; ++member) {
    const auto direct = direct_peer_bandwidth(scenario, member, 0);
    if (direct) {
      seconds_per_byte = std::max(seconds_per_byte, 1.0 / direct->value());
    } else {
      over_pcie += 1.0;
    }
  }
  seconds_per_byte = std::max(seconds_per_byte, over_pcie / device_link);
  return static_cast<double>(d - 1) / seconds_per_byte;
}

// Bytes through the busiest PS or worker link in one step over its bandwidth: a lower bound that
// the outputs quote as the network's share.
double network_bound(const schedule::StepPlan& plan, const AnalyticNetwork& net) {
  const double w = static_cast<double>(plan.workers);
  double ps_in = 0.0;
  double ps_out = 0.0;
  for (const auto& layer_groups : plan.groups_by_layer) {
    for (const VariableGroup& g : layer_groups) {
      if (g.shard != 0) continue;
      ps_out += w * (static_cast<double>(g.bytes) + kHeader);
      ps_in += w * (static_cast<double>(plan.compressed(g.bytes)) + kHeader);
    }
  }
  if (plan.has_head()) {
    const auto senders = static_cast<double>(plan.micro_batches());
    ps_in += w * static_cast<double>(plan.boundary_bytes) + senders * kHeader;
    ps_out += w * static_cast<double>(plan.activation_grad_bytes) + senders * kHeader;
  }
  double worker = 0.0;
  if (plan.uses_ring() && plan.workers > 1) {
    worker = 2.0 * (w - 1.0) / w * static_cast<double>(plan.compressed(plan.tail_param_bytes));
  }
  return std::max(std::max(ps_in, ps_out) / (net.bandwidth_factor * net.ps_nic.bandwidth.value()),
                  worker / (net.bandwidth_factor * net.worker_nic.bandwidth.value()));
}

}  // namespace

AnalyticNetwork analytic_network(const Scenario& scenario) {
  AnalyticNetwork net;
  const PlatformSpec& p = scenario.platform;
  net.ps_nic = p.ps_nic.value_or(p.nic);
  net.worker_nic = p.worker_nic.value_or(p.nic);
  net.backbone = p.backbone;
  net.devices_per_node = scenario.nodes.devices_per_node;
  net.nodes = scenario.workers / scenario.nodes.devices_per_node;
  if (net.devices_per_node > 1) {
    net.device_link = device_link_bandwidth(scenario, scenario.worker_device).value();
    net.peer_link = leader_peer_bandwidth(scenario, net.device_link);
    net.ring_peer_link = ring_peer_bandwidth(scenario, net.device_link);
    net.interconnect_latency = interconnect_latency(scenario).value();
    const auto& link = scenario.nodes.interconnect;
    net.pcie_roots = link && link->kind == InterconnectKind::pcie && link->host_links > 1;
  }
  if (scenario.nodes.ps_placement == PsPlacement::colocated) {
    net.colocated = true;
    net.ps_nic = net.worker_nic;  // a shard leaves by its node's NIC
    net.ps_link = device_link_bandwidth(scenario, scenario.ps_device).value();
    net.device_link = device_link_bandwidth(scenario, scenario.worker_device).value();
    const auto& link = scenario.nodes.interconnect;
    net.host_links = link ? link->host_links : 1;
  }
  switch (scenario.network_model.kind) {
    case NetworkModelKind::tcp:
      net.latency_factor = kTcpLatencyFactor;
      net.bandwidth_factor = kTcpBandwidthFactor;
      net.tcp_window = true;
      net.cross_traffic = kTcpCrossTraffic;
      break;
    case NetworkModelKind::ideal:
      break;
    case NetworkModelKind::factors:
      net.latency_factor = scenario.network_model.latency_factor;
      net.bandwidth_factor = scenario.network_model.bandwidth_factor;
      break;
  }
  return net;
}

bool analytic_covers(const Scenario& scenario) {
  return scenario.platform.kind != PlatformKind::file &&
         scenario.platform.kind != PlatformKind::rails;
}

AnalyticEstimate estimate_step(const Scenario& scenario, const schedule::StepPlan& plan,
                               AnalyticDetail detail) {
  if (plan.strategy.token_queues) {
    size_t index = 0;
    while (index + 1 < scenario.strategies.size() &&
           scenario.strategies[index].label != plan.strategy.label) {
      ++index;
    }
    throw InputError(scenario.file, json_path("/strategies", index) + "/sync",
                     "is \"token_queues\", whose per-server updates and barriers only the event "
                     "simulation models; expected \"sum\" with --fidelity analytic");
  }
  AnalyticNetwork net = analytic_network(scenario);
  const int64_t per_node = scenario.nodes.devices_per_node;
  const bool local = plan.aggregates_locally();
  // Devices that each talk to the servers share their node's NIC; with local aggregation, or
  // hybrid's boundaries gathered, only the node's first device does.
  if (per_node > 1 && scenario.nodes.nics_per_node == 1 && !local && !plan.gathers_boundaries()) {
    net.nic_sharers = static_cast<double>(per_node);
  }
  Model m{scenario, plan, Links{net}, static_cast<double>(plan.workers),
          static_cast<double>(std::max<int64_t>(plan.shards, 1)), detail};
  if (local) {
    m.workers = static_cast<double>(plan.workers / per_node);
    m.members = static_cast<double>(per_node - 1);
  }
  AnalyticEstimate e = plan.uses_shards() ? m.shards_step() : m.ring_step();
  e.network_s = network_bound(plan, net);
  return e;
}

AnalyticEstimate estimate_strategy(const Scenario& scenario, const StrategySpec& strategy,
                                   std::optional<LayerId> cut) {
  return estimate_step(scenario, schedule::make_step_plan(scenario, strategy, cut));
}

}  // namespace ralp::placement
