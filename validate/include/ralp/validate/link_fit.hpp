// The network model's factors fitted to a link probe (ralp link-probe): what SimGrid needs so that
// a message between two hosts of a star takes as long as the probe measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"

namespace ralp::validate {

// One probe's timings: header-only round trips, and for each payload size the time from posting
// it to the arrival of the peer's header-only acknowledgement (median).
struct ProbeTransfer {
  double bytes = 0.0;  // payload plus the transport's header
  double seconds = 0.0;
};
// For one payload size, the computation time a transfer took from a thread computing on the
// sender's and on the receiver's core (medians).
struct ProbeCpu {
  double bytes = 0.0;  // payload plus the transport's header
  double sender_s = 0.0;
  double receiver_s = 0.0;
};
struct LinkProbe {
  double rtt_s = 0.0;  // header-only round trip, median
  std::vector<ProbeTransfer> transfers;
  std::vector<ProbeCpu> cpu;  // empty when the probe did not measure it
  // Each rank's share of its core that waiting for a message took from a computation there; empty
  // when the probe did not measure it.
  std::vector<double> waiting_shares;
};

// Bytes of the cluster transport's header in front of every payload.
inline constexpr double kTransportHeaderBytes = 24.0;

// Reads `ralp link-probe --json` output; throws InputError naming `label` and the JSON path.
LinkProbe parse_link_probe(const Json& json, const std::string& label);

// The fit. On a star, a message from one host to another crosses two links (the sender's NIC up,
// the receiver's NIC down), each with the scenario's latency L and bandwidth B (the tbf rate), and
// SimGrid with factors takes latency_factor x 2L + S / (bandwidth_factor x B).
//
// The probe's transfer times are a + S / g by least squares over the sizes: g is the goodput and
// a - rtt/2 (the acknowledgement's way back) the one-way fixed cost of a bulk message (the MPI
// rendezvous included), but never less than rtt / 2, the one-way time of a header-only message.
// With L = rtt / 2 written into the scenario:
//   bandwidth_factor = g / B,   latency_factor = max(a - rtt/2, rtt/2) / (2 L)  (>= 0.5).
// The CPU time a transfer takes from computation on each end is c + S x s, fitted over the sizes
// (the probe's cpu series) by least squares on relative residuals, since the sizes span orders of
// magnitude and absolute residuals would leave the intercept to the largest transfer alone; c and
// s, each at least 0 (the other refitted where one would be negative), are the scenario's
// message_cpu per message and per byte, sent (the sender's) and received (the receiver's).
// Without a cpu series all are 0. The waiting share is the mean of the ranks' (at most
// kMaxWaitingShare, as the scenario accepts), the scenario's message_cpu.waiting_share.
inline constexpr double kMaxWaitingShare = 0.5;
struct NetworkFit {
  double rate_bytes_per_s = 0.0;  // B
  double rtt_s = 0.0;
  double latency_s = 0.0;         // L = rtt / 2, the scenario's per-link latency
  double goodput_bytes_per_s = 0.0;
  double fixed_cost_s = 0.0;      // max(a - rtt / 2, rtt / 2)
  double bandwidth_factor = 0.0;
  double latency_factor = 0.0;
  double residual_max = 0.0;      // largest |measured - fitted| / measured over the sizes
  double send_cpu_s_per_byte = 0.0;
  double receive_cpu_s_per_byte = 0.0;
  double send_cpu_s_per_message = 0.0;
  double receive_cpu_s_per_message = 0.0;
  double waiting_share = 0.0;
};

// Throws std::runtime_error when the probe has fewer than two sizes or the fit is not physical
// (goodput <= 0).
NetworkFit fit_network(const LinkProbe& probe, double rate_bytes_per_s);

// What moving a message costs its sender's and its receiver's core whatever its size (a
// NetworkFit's send_cpu_s_per_message and receive_cpu_s_per_message).
struct MessageCosts {
  double send_s = 0.0;
  double receive_s = 0.0;
};
// The same fit with the CPU times per message given: only the times per byte are fitted to the
// cpu series, by the same relative least squares around the given intercepts (at least 0). The
// threads' wake-ups for a message do not depend on the link's rate, while a shaped link's bytes
// cost more the slower it releases them; ralp validate fits the per-message costs at its fastest
// rate, where they weigh most beside the bytes', and keeps them at the others.
NetworkFit fit_network(const LinkProbe& probe, double rate_bytes_per_s,
                       const MessageCosts& per_message);

// {"rate_bytes_per_s", "rtt_s", "latency_s", "goodput_bytes_per_s", "fixed_cost_s",
//  "bandwidth_factor", "latency_factor", "residual_max", "send_cpu_ns_per_byte",
//  "receive_cpu_ns_per_byte", "send_cpu_us_per_message", "receive_cpu_us_per_message",
//  "waiting_share"}
Json to_json(const NetworkFit& fit);

}  // namespace ralp::validate
