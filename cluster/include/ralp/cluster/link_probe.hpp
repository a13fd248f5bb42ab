// Link calibration with the cluster's own transport: a ping-pong round trip and bulk transfers of
// growing size between rank 0 and rank 1, timed on rank 0, from which the network model's factors
// are fitted (validate/link_fit); then the same transfers again while a thread computes on each
// rank, to measure the CPU time that moving the bytes takes from computation on the sender's and
// the receiver's core (the MPI thread's copies and the kernel's network stack), and what waiting
// for a message takes from it (the transport's polling).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ralp::cluster {

struct LinkProbeOptions {
  // Payload sizes of the bulk transfers, in bytes (each also pays the transport's 24-byte header).
  std::vector<int64_t> sizes = {1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
  int round_trips = 200;  // header-only ping-pongs for the round-trip time
  int repetitions = 5;    // transfers per size; the median is kept
  double timeout_s = 60;  // a silent peer fails the probe after this long
  bool cpu = true;        // also measure the CPU time transfers take (LinkProbeResult::cpu)
  // The CPU series' computing thread runs as `ralp cluster --compute-yields` runs the kernels.
  bool compute_yields = false;
};

// One size's transfers: rank 0 sends `bytes` of payload to rank 1, which answers with a
// header-only acknowledgement as soon as all of it has arrived; `seconds` is the median over the
// repetitions of the time from posting the send to the acknowledgement's arrival.
struct LinkProbePoint {
  int64_t bytes = 0;
  double seconds = 0.0;
  friend bool operator==(const LinkProbePoint&, const LinkProbePoint&) = default;
};

// One size's CPU cost: while each rank runs a thread that computes without pause on the rank's
// core, and waits for messages the way a rank does while it computes (Transport::backoff), rank 0
// sends `messages` messages of `bytes` one at a time, each a moment after the previous one's send
// completed, as a step's pushes follow its layers (a train: more of the smaller sizes, so that
// what an exchange costs beyond its messages is spread over them), and rank 1 acknowledges them
// as above. `sender_s` and `receiver_s` are the medians over the repetitions of the computation time
// each rank's thread lost during one train, against its rate while the rank was idle just before,
// divided by `messages`: the cost of one message.
struct LinkProbeCpuPoint {
  int64_t bytes = 0;
  double sender_s = 0.0;
  double receiver_s = 0.0;
  int64_t messages = 1;
  friend bool operator==(const LinkProbeCpuPoint&, const LinkProbeCpuPoint&) = default;
};

struct LinkProbeResult {
  double rtt_median_s = 0.0;  // header-only round trip, median
  double rtt_min_s = 0.0;
  std::vector<LinkProbePoint> transfers;
  std::vector<LinkProbeCpuPoint> cpu;  // empty when not measured
  // With the CPU series, rank 0's and rank 1's: the share of its core that the rank, waiting for a
  // message the way a rank whose computation is blocked on one does, took from a thread computing
  // there (the transport's polling), median over repetitions; empty when not measured.
  std::vector<double> waiting_shares;
  friend bool operator==(const LinkProbeResult&, const LinkProbeResult&) = default;
};

// Runs the probe inside an MPI job of exactly two ranks (call it on both). Returns the timings on
// rank 0; rank 1 returns an empty result. Throws std::runtime_error for a job of another size
// and ClusterFailure when the peer stops answering.
LinkProbeResult run_link_probe(const LinkProbeOptions& options);

// {"rtt_median_s", "rtt_min_s", "transfers": [{"bytes", "seconds"}], "cpu": [{"bytes",
// "messages", "sender_s", "receiver_s"}], "waiting_shares": [rank 0's, rank 1's]}, as
// `ralp link-probe --json` writes it ("cpu" and "waiting_shares" only when measured).
std::string link_probe_to_json(const LinkProbeResult& result);

}  // namespace ralp::cluster
