// The link probe over the cluster transport: header-only ping-pongs, then bulk sends answered by
// header-only acknowledgements. Includes <mpi.h> (through transport.hpp).
#include "ralp/cluster/link_probe.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "ralp/cluster/roles.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/results/step_result.hpp"
#include "compute_priority.hpp"
#include "transport.hpp"

namespace ralp::cluster {
namespace {

// The probe borrows two of the transport's message kinds (each is its own MPI tag): data and
// pings travel as `push` from rank 0 to rank 1, replies as `pull`. No strategy runs meanwhile.
constexpr MessageKind kForward = MessageKind::push;
constexpr MessageKind kReply = MessageKind::pull;
// Unmeasured exchanges before each series, so that connections are open and buffers touched.
constexpr int kWarmUpExchanges = 3;

// Each transfer of the CPU series follows an idle window on each rank, as long as the size's
// previous transfer took (within these bounds), over which the share of the core that other work
// takes while the rank is idle (timer ticks, the system) is measured, to be left out.
constexpr double kMinIdleWindowS = 0.02;
constexpr double kMaxIdleWindowS = 0.5;
// The losses are small, so short transfers repeat beyond the options' repetitions until the
// size's transfers took this long, up to kMaxCpuRepetitions. The smallest sizes decide the cost
// per message (ralp validate's fit): with fewer repetitions it wandered from probe to probe
// (repeated `ralp link-probe` runs show the spread), and these cost a few seconds more per rate.
constexpr double kCpuSeriesSeconds = 1.0;
constexpr int kMaxCpuRepetitions = 100;
// Each transfer of the CPU series is a train of messages of the size, up to kTrainBytes in all
// and at most kMaxTrain of them, and its cost is divided among them: what one exchange costs
// beyond its messages (the reply, the waits for it) is not a message's. The sender posts them one
// at a time, each kMessageSpacing after the previous one's send completed, as a step's pushes
// follow the layers that produce them, so that each message wakes both ranks' message threads on
// its own, which is most of what a message costs a computing core. A train posted at once shares
// its wake-ups among its messages and costs each far less than a step's messages cost one at a
// time (the gaps a push leaves between a ps step's kernels in `ralp cluster --trace`).
constexpr int64_t kTrainBytes = int64_t{4} << 20;
constexpr int64_t kMaxTrain = 8;
constexpr std::chrono::microseconds kMessageSpacing{2000};
// The messages of the CPU series' train of `bytes`-sized messages.
int64_t train_length(int64_t bytes) {
  return std::clamp(kTrainBytes / std::max<int64_t>(bytes, 1), int64_t{1}, kMaxTrain);
}
// The waiting series: each rank in turn waits this long for a message (after an idle window as
// long), this many times; the median share is kept.
constexpr double kWaitingWindowS = 0.1;
constexpr int kWaitingRepetitions = 8;

// One exchange: rank 0 posts each of `payloads` as a message of its own (any may be empty), all at
// once or, with `spacing`, one at a time, each once the previous one's send completed and
// `spacing` passed; it then waits for the reply. Rank 1 receives them, each into its buffer, and
// replies with a header only once all have arrived. Returns the elapsed time on this rank: on
// rank 0 from posting to the reply's arrival, on rank 1 from posting the receives to the reply's
// departure.
double exchange(Transport& t, std::vector<std::vector<char>>& payloads, int64_t item,
                const Transport::Pause& pause = {},
                std::chrono::microseconds spacing = std::chrono::microseconds(0)) {
  std::vector<Transport::Handle> messages;
  const auto all_done = [&] {
    return std::all_of(messages.begin(), messages.end(),
                       [&](Transport::Handle h) { return t.done(h); });
  };
  const auto release_all = [&] {
    for (const Transport::Handle h : messages) t.release(h);
    messages.clear();
  };
  const auto pieces = [](std::vector<char>& payload) {
    std::vector<Piece> p;
    if (!payload.empty()) p.push_back({payload.data(), payload.size()});
    return p;
  };
  const double start = monotonic_seconds();
  if (t.rank() == 0) {
    const Transport::Handle reply = t.receive(1, kReply, -1, {});
    for (size_t i = 0; i < payloads.size(); ++i) {
      if (spacing.count() > 0 && i > 0) {
        t.wait_until(all_done, 0.0, pause);
        release_all();
        std::this_thread::sleep_for(spacing);
      }
      messages.push_back(t.send(1, kForward, -1, item, pieces(payloads[i])));
    }
    t.wait_until(all_done, 0.0, pause);
    release_all();
    t.wait(reply, 0.0, pause);
    return monotonic_seconds() - start;
  }
  for (auto& payload : payloads) messages.push_back(t.receive(0, kForward, -1, pieces(payload)));
  t.wait_until(all_done, 0.0, pause);
  release_all();
  const Transport::Handle reply = t.send(0, kReply, -1, item, {});
  t.wait(reply, 0.0, pause);
  return monotonic_seconds() - start;
}

// A thread that computes without pause on the rank's core (it inherits the rank's binding),
// counting the rounds of work it has done. The time a transfer takes from computation there is
// its elapsed time less the computation done meanwhile: the rounds over the thread's rate per
// second of its CPU time, measured in an idle window just before. Its CPU time alone would miss
// part: on a kernel without IRQ_TIME_ACCOUNTING, Linux charges the network's softirq work (tc's
// token buckets release packets from a timer, wherever it fires) to the thread it interrupts. A
// rate per second of CPU time, not of elapsed time, leaves out what the hypervisor took (steal,
// which the CPU clock excludes), which wanders within seconds on a shared machine.
class Spinner {
 public:
  explicit Spinner(bool yields) : yields_(yields), thread_([this] { spin(); }) {
    if (pthread_getcpuclockid(thread_.native_handle(), &clock_) != 0) {
      stop_.store(true, std::memory_order_relaxed);
      thread_.join();
      throw std::runtime_error("the link probe cannot read its computing thread's CPU clock");
    }
  }
  ~Spinner() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }
  Spinner(const Spinner&) = delete;
  Spinner& operator=(const Spinner&) = delete;

  // The CPU time the thread has used, in seconds.
  [[nodiscard]] double cpu_seconds() const { return cluster::cpu_seconds(clock_); }
  // The rounds of work it has done.
  [[nodiscard]] uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }

 private:
  // With `yields`, it runs as a rank's compute thread does with ClusterOptions::compute_yields
  // (compute_priority.hpp), so that the probe measures what a message costs such a rank.
  void spin() {
    if (yields_) (void)run_below_communication();
    constexpr int kStepsPerRound = 4096;
    double x = 1.0;
    while (!stop_.load(std::memory_order_relaxed)) {
      for (int i = 0; i < kStepsPerRound; ++i) x = x * 0.999999 + 1e-6;
      sink_ = x;
      rounds_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  bool yields_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  volatile double sink_ = 0.0;
  clockid_t clock_{};
  std::thread thread_;
};

// Rank 0's `more` agreed by both ranks: a header-only message from rank 0 to rank 1 whose item
// says whether another repetition follows.
bool continue_series(Transport& t, bool more) {
  if (t.rank() == 0) {
    t.wait(t.send(1, kForward, -1, more ? 1 : 0, {}));
    return more;
  }
  const Transport::Handle h = t.receive(0, kForward, -1, {});
  t.wait_until([&] { return t.done(h); });
  const bool go = t.header(h).item != 0;
  t.release(h);
  return go;
}

// What a spinner did over an idle window: the share of the core that went elsewhere while
// nothing moved (timer ticks, the system), and the thread's rate.
struct IdleRate {
  double baseline = 0.0;
  double cpu_s = 0.0;   // the thread's CPU time in the window
  double rounds = 0.0;  // and its rounds of work
};

// Sleeps `window` seconds and measures the spinner meanwhile.
IdleRate measure_idle(const Spinner& spinner, double window) {
  const double start = monotonic_seconds();
  const double cpu = spinner.cpu_seconds();
  const uint64_t rounds = spinner.rounds();
  std::this_thread::sleep_for(std::chrono::duration<double>(window));
  const double wall = monotonic_seconds() - start;
  IdleRate idle;
  idle.cpu_s = spinner.cpu_seconds() - cpu;
  idle.rounds = static_cast<double>(spinner.rounds() - rounds);
  idle.baseline = std::clamp(1.0 - idle.cpu_s / wall, 0.0, 1.0);
  return idle;
}

// The time of `elapsed` seconds that the core did not compute, from the spinner's rounds since
// `rounds_before` at its idle rate, less the idle baseline's share. Where the idle window gave the
// thread no time to measure its rate, its CPU time since `cpu_before` stands in.
double lost_seconds(const Spinner& spinner, const IdleRate& idle, uint64_t rounds_before,
                    double cpu_before, double elapsed) {
  const double computed =
      idle.cpu_s > 0.0 && idle.rounds > 0.0
          ? static_cast<double>(spinner.rounds() - rounds_before) * idle.cpu_s / idle.rounds
          : spinner.cpu_seconds() - cpu_before;
  return elapsed - computed - idle.baseline * elapsed;
}

// The CPU series: for each size, the time per message that this rank's core did not compute.
std::vector<double> cpu_series(Transport& t, const Spinner& spinner,
                               const LinkProbeOptions& options) {
  const Transport::Pause computing = [](int round) {
    std::this_thread::sleep_for(Transport::backoff(round, true));
  };
  std::vector<double> lost;
  for (const int64_t bytes : options.sizes) {
    const int64_t messages = train_length(bytes);
    std::vector<std::vector<char>> train(static_cast<size_t>(messages),
                                         std::vector<char>(static_cast<size_t>(bytes), 1));
    double previous = exchange(t, train, -1, computing, kMessageSpacing);
    // Rank 0 decides how many repetitions, and tells rank 1 in each exchange's item (-1: stop).
    std::vector<double> times;
    double spent = 0.0;
    for (int i = 0;; ++i) {
      const bool more = i < options.repetitions ||
                        (spent < kCpuSeriesSeconds && i < kMaxCpuRepetitions);
      if (!continue_series(t, more)) break;
      const IdleRate idle =
          measure_idle(spinner, std::clamp(previous, kMinIdleWindowS, kMaxIdleWindowS));
      const uint64_t rounds_before = spinner.rounds();
      const double cpu_before = spinner.cpu_seconds();
      const double elapsed = exchange(t, train, i, computing, kMessageSpacing);
      times.push_back(lost_seconds(spinner, idle, rounds_before, cpu_before, elapsed) /
                      static_cast<double>(messages));
      previous = elapsed;
      spent += elapsed;
    }
    lost.push_back(median(times));
  }
  return lost;
}

// The waiting series: the share of its core that a rank waiting for a message takes from a thread
// computing there (the transport's polling: each check wakes the waiting thread, which preempts
// the computation and evicts some of its data). In each repetition each rank in turn is the
// waiter: after an idle window, in which its computing thread's rate is measured, it waits the way
// a rank whose computation is blocked on a message does (Transport::backoff, not computing) for a
// header-only message that its peer sends one window later. Returns this rank's median share.
double waiting_series(Transport& t, const Spinner& spinner) {
  const Transport::Pause waiting = [](int round) {
    std::this_thread::sleep_for(Transport::backoff(round, false));
  };
  const int peer = 1 - t.rank();
  const MessageKind to_rank0 = kReply;  // rank 1 -> rank 0, as exchange() pairs them
  const MessageKind to_rank1 = kForward;
  std::vector<double> shares;
  std::vector<std::vector<char>> empty(1);
  for (int i = 0; i < kWaitingRepetitions; ++i) {
    for (int waiter = 0; waiter < 2; ++waiter) {
      exchange(t, empty, i);  // both start together
      if (t.rank() != waiter) {
        std::this_thread::sleep_for(std::chrono::duration<double>(2 * kWaitingWindowS));
        t.wait(t.send(peer, t.rank() == 0 ? to_rank1 : to_rank0, -1, 0, {}));
        continue;
      }
      const IdleRate idle = measure_idle(spinner, kWaitingWindowS);
      const uint64_t rounds_before = spinner.rounds();
      const double cpu_before = spinner.cpu_seconds();
      const double start = monotonic_seconds();
      t.wait(t.receive(peer, t.rank() == 0 ? to_rank0 : to_rank1, -1, {}), 0.0, waiting);
      const double elapsed = monotonic_seconds() - start;
      shares.push_back(std::clamp(
          lost_seconds(spinner, idle, rounds_before, cpu_before, elapsed) / elapsed, 0.0, 1.0));
    }
  }
  return median(shares);
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
  std::vector<std::vector<char>> empty(1);
  for (int i = 0; i < kWarmUpExchanges; ++i) exchange(transport, empty, i);
  std::vector<double> rtts;
  for (int i = 0; i < options.round_trips; ++i) rtts.push_back(exchange(transport, empty, i));
  if (transport.rank() == 0 && !rtts.empty()) {
    result.rtt_median_s = median(rtts);
    result.rtt_min_s = *std::min_element(rtts.begin(), rtts.end());
  }
  for (const int64_t bytes : options.sizes) {
    std::vector<std::vector<char>> payload(1, std::vector<char>(static_cast<size_t>(bytes), 1));
    exchange(transport, payload, -1);
    std::vector<double> times;
    for (int i = 0; i < options.repetitions; ++i) times.push_back(exchange(transport, payload, i));
    if (transport.rank() == 0) result.transfers.push_back({bytes, median(times)});
  }
  if (!options.cpu) return result;
  const Spinner spinner(options.compute_yields);
  std::vector<double> lost = cpu_series(transport, spinner, options);
  lost.push_back(waiting_series(transport, spinner));
  // Rank 1 sends its losses and its waiting share to rank 0, which reports both.
  const Piece piece{lost.data(), lost.size() * sizeof(double)};
  if (transport.rank() == 1) {
    transport.wait(transport.send(0, kReply, -1, 0, {piece}));
    return result;
  }
  std::vector<double> receiver(lost.size());
  transport.wait(
      transport.receive(1, kReply, -1, {{receiver.data(), receiver.size() * sizeof(double)}}));
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    result.cpu.push_back({options.sizes[i], lost[i], receiver[i], train_length(options.sizes[i])});
  }
  result.waiting_shares = {lost.back(), receiver.back()};
  return result;
}

std::string link_probe_to_json(const LinkProbeResult& result) {
  Json transfers = Json::array();
  for (const auto& p : result.transfers) {
    transfers.push_back({{"bytes", p.bytes}, {"seconds", p.seconds}});
  }
  Json doc = {{"rtt_median_s", result.rtt_median_s},
              {"rtt_min_s", result.rtt_min_s},
              {"transfers", transfers}};
  if (!result.cpu.empty()) {
    Json cpu = Json::array();
    for (const auto& p : result.cpu) {
      cpu.push_back({{"bytes", p.bytes},
                     {"messages", p.messages},
                     {"sender_s", p.sender_s},
                     {"receiver_s", p.receiver_s}});
    }
    doc["cpu"] = cpu;
    doc["waiting_shares"] = result.waiting_shares;
  }
  return doc.dump(2) + "\n";
}

}  // namespace ralp::cluster
