// Link calibration with the cluster's own transport: a ping-pong round trip and bulk transfers of
// growing size between rank 0 and rank 1, timed on rank 0, from which the network model's factors
// are fitted (validate/link_fit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ralp::cluster {

struct LinkProbeOptions {
  // Payload sizes of the bulk transfers, in bytes (each also pays the transport's 24-byte header).
  std::vector<int64_t> sizes = {65536, 262144, 1048576, 4194304, 16777216};
  int round_trips = 200;  // header-only ping-pongs for the round-trip time
  int repetitions = 5;    // transfers per size; the median is kept
  double timeout_s = 60;  // a silent peer fails the probe after this long
};

// One size's transfers: rank 0 sends `bytes` of payload to rank 1, which answers with a
// header-only acknowledgement as soon as all of it has arrived; `seconds` is the median over the
// repetitions of the time from posting the send to the acknowledgement's arrival.
struct LinkProbePoint {
  int64_t bytes = 0;
  double seconds = 0.0;
  friend bool operator==(const LinkProbePoint&, const LinkProbePoint&) = default;
};

struct LinkProbeResult {
  double rtt_median_s = 0.0;  // header-only round trip, median
  double rtt_min_s = 0.0;
  std::vector<LinkProbePoint> transfers;
  friend bool operator==(const LinkProbeResult&, const LinkProbeResult&) = default;
};

// Runs the probe inside an MPI job of exactly two ranks (call it on both). Returns the timings on
// rank 0; rank 1 returns an empty result. Throws std::runtime_error for a job of another size
// and ClusterFailure when the peer stops answering.
LinkProbeResult run_link_probe(const LinkProbeOptions& options);

// {"rtt_median_s", "rtt_min_s", "transfers": [{"bytes", "seconds"}]}, as `ralp link-probe
// --json` writes it.
std::string link_probe_to_json(const LinkProbeResult& result);

}  // namespace ralp::cluster
