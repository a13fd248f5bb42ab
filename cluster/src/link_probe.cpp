// The link probe over the cluster transport: header-only ping-pongs, then bulk sends answered by
// header-only acknowledgements. Includes <mpi.h> (through transport.hpp).
#include "ralp/cluster/link_probe.hpp"

#include <algorithm>
#include <stdexcept>

#include "ralp/core/json_input.hpp"
#include "ralp/cluster/roles.hpp"
#include "transport.hpp"

namespace ralp::cluster {
namespace {

// The probe borrows two of the transport's message kinds (each is its own MPI tag): data and
// pings travel as `push` from rank 0 to rank 1, replies as `pull`. No strategy runs meanwhile.
constexpr MessageKind kForward = MessageKind::push;
constexpr MessageKind kReply = MessageKind::pull;
// Unmeasured exchanges before each series, so that connections are open and buffers touched.
constexpr int kWarmUpExchanges = 3;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// One exchange: rank 0 posts `payload` (may be empty) and waits for the reply; rank 1 receives it
// and replies with a header only. Returns rank 0's elapsed time.
double exchange(Transport& t, std::vector<char>& payload, int64_t item) {
  std::vector<Piece> pieces;
  if (!payload.empty()) pieces.push_back({payload.data(), payload.size()});
  if (t.rank() == 0) {
    const double start = monotonic_seconds();
    const Transport::Handle reply = t.receive(1, kReply, -1, {});
    const Transport::Handle out = t.send(1, kForward, -1, item, pieces);
    t.wait(out);
    t.wait(reply);
    return monotonic_seconds() - start;
  }
  const Transport::Handle in = t.receive(0, kForward, -1, pieces);
  t.wait(in);
  const Transport::Handle reply = t.send(0, kReply, -1, item, {});
  t.wait(reply);
  return 0.0;
}

}  // namespace

LinkProbeResult run_link_probe(const LinkProbeOptions& options) {
  const Roles roles(1, 1);
  Transport transport(roles, options.timeout_s);
  int size = 0;
  MPI_Comm_size(transport.comm(), &size);
  if (size != roles.ranks()) {
    throw std::runtime_error("the link probe runs on exactly 2 ranks, not " +
                             std::to_string(size));
  }
  LinkProbeResult result;
  std::vector<char> empty;
  for (int i = 0; i < kWarmUpExchanges; ++i) exchange(transport, empty, i);
  std::vector<double> rtts;
  for (int i = 0; i < options.round_trips; ++i) rtts.push_back(exchange(transport, empty, i));
  if (transport.rank() == 0 && !rtts.empty()) {
    result.rtt_median_s = median(rtts);
    result.rtt_min_s = *std::min_element(rtts.begin(), rtts.end());
  }
  for (const int64_t bytes : options.sizes) {
    std::vector<char> payload(static_cast<size_t>(bytes), 1);
    exchange(transport, payload, -1);
    std::vector<double> times;
    for (int i = 0; i < options.repetitions; ++i) times.push_back(exchange(transport, payload, i));
    if (transport.rank() == 0) result.transfers.push_back({bytes, median(times)});
  }
  return result;
}

std::string link_probe_to_json(const LinkProbeResult& result) {
  Json transfers = Json::array();
  for (const auto& p : result.transfers) {
    transfers.push_back({{"bytes", p.bytes}, {"seconds", p.seconds}});
  }
  const Json doc = {{"rtt_median_s", result.rtt_median_s},
                    {"rtt_min_s", result.rtt_min_s},
                    {"transfers", transfers}};
  return doc.dump(2) + "\n";
}

}  // namespace ralp::cluster
