// The MPI transport under every strategy: non-blocking point-to-point messages with a small header
// (the step and the sender's posting time on the reference clock), bytes counted per step, and
// waits that keep MPI progressing, charge their time to the right phase and give up with a message
// naming the silent rank after the step timeout. Internal to cluster/; includes <mpi.h>.
#pragma once

#include <time.h>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/cluster/mpi_session.hpp"
#include "ralp/cluster/roles.hpp"
#include "ralp/schedule/schedule.hpp"

namespace ralp::cluster {

// Message kinds; each is its own MPI tag, so messages of one kind between two ranks match in the
// order they were posted (MPI's non-overtaking rule), which every protocol here relies on. The
// kinds of a step's messages are the schedule's (schedule.hpp), with the same numbers.
enum class MessageKind : int {
  clock = 1,  // clock synchronisation
  start,      // everyone is ready for the next strategy
  begin,      // rank 0: start it
  pull = static_cast<int>(schedule::MessageKind::pull),
  push = static_cast<int>(schedule::MessageKind::push),
  activations = static_cast<int>(schedule::MessageKind::activations),
  activation_gradient = static_cast<int>(schedule::MessageKind::activation_gradient),
  ready = static_cast<int>(schedule::MessageKind::ready),
  go = static_cast<int>(schedule::MessageKind::go),
  ring = static_cast<int>(schedule::MessageKind::ring),
  step_done = static_cast<int>(schedule::MessageKind::step_done),
  step_complete = static_cast<int>(schedule::MessageKind::step_complete),
  reduce = static_cast<int>(schedule::MessageKind::reduce),
  broadcast = static_cast<int>(schedule::MessageKind::broadcast),
  results,  // measurements and final parameters, -> rank 0
};
inline MessageKind transport_kind(schedule::MessageKind kind) {
  return static_cast<MessageKind>(static_cast<int>(kind));
}
// How messages of a kind are named in failure messages: a step's messages as the schedule names
// them ("pull", "ring all-reduce"), and the transport's own ("clock synchronisation").
std::string_view describe(MessageKind kind);

// Seconds on a monotonic clock shared by the processes of one machine (CLOCK_MONOTONIC).
double monotonic_seconds();
// Seconds of CPU time on a CPU-time clock: the calling thread's by default, or another thread's
// (pthread_getcpuclockid).
double cpu_seconds(clockid_t clock = CLOCK_THREAD_CPUTIME_ID);

// A contiguous piece of a message's payload; a message is its header plus pieces, in order.
struct Piece {
  void* data = nullptr;
  size_t bytes = 0;
};

struct MessageHeader {
  double posted_at = 0.0;  // sender's posting time on the reference clock
  int64_t step = 0;
  int64_t item = 0;  // the layer, variable or chunk the message carries, for checks
};
static_assert(sizeof(MessageHeader) == schedule::kHeaderBytes,
              "the schedule counts the header the transport sends");

class Transport {
 public:
  using Handle = size_t;

  // Works on its own duplicate of MPI_COMM_WORLD, whose errors are returned, not fatal.
  // `timeout_s` bounds every wait; waits of a worker for a parameter server allow kPsPatience times
  // as much, so that when a worker stops answering the PS (which waits on it directly) reports it
  // before the other workers (which wait on the PS) report the PS.
  static constexpr double kPsPatience = 1.5;
  Transport(const Roles& roles, double timeout_s);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] const Roles& roles() const { return roles_; }
  [[nodiscard]] MPI_Comm comm() const { return comm_; }
  [[nodiscard]] double timeout() const { return timeout_; }

  // Estimates this rank's clock offset to rank 0 by ping-pong (the round trip with the least
  // delay wins). Collective. On one machine the offset is about 0.
  void synchronise_clocks();
  [[nodiscard]] double to_reference(double local) const { return local + offset_; }
  [[nodiscard]] double from_reference(double reference) const { return reference - offset_; }
  [[nodiscard]] double now_reference() const { return to_reference(monotonic_seconds()); }

  // Starts a strategy of `steps` steps: byte counters restart.
  void begin_strategy(int64_t steps);
  [[nodiscard]] const std::vector<double>& bytes_in() const { return bytes_in_; }
  [[nodiscard]] const std::vector<double>& bytes_out() const { return bytes_out_; }
  // Per step, the bytes sent to each rank (indexed by rank, as long as the highest one sent to).
  [[nodiscard]] const std::vector<std::vector<double>>& bytes_to() const { return bytes_to_; }

  // Posts a message. Its bytes (header included) count against `step` when 0 <= step < steps;
  // other steps (-1: set-up and results) are not counted. The pieces must stay valid and
  // unchanged until the send is done.
  Handle send(int peer, MessageKind kind, int64_t step, int64_t item, std::vector<Piece> pieces);
  // Posts a receive into `pieces`, which must add up to exactly the sender's payload (a
  // mismatch is a ClusterFailure when the message arrives).
  Handle receive(int peer, MessageKind kind, int64_t step, std::vector<Piece> pieces);

  // Tracks a request MPI made elsewhere (a non-blocking collective among the workers): waits
  // and timeouts treat it as a message to and from "the other workers".
  Handle track(MPI_Request request, MessageKind kind, int64_t step);
  // Counts bytes that moved outside send() and receive() (inside a collective) against `step`.
  void count(int64_t step, double in, double out, int to = -1);

  // Drives MPI's progress engine and notes completed messages. Cheap; returns whether a message
  // completed.
  bool progress();
  [[nodiscard]] bool done(Handle h) const;
  [[nodiscard]] const MessageHeader& header(Handle h) const;  // of a completed receive
  // Forgets a completed message.
  void release(Handle h);

  // How a wait passes the time between two checks once its first checks found nothing:
  // `pause(round)` returns after at most the time it chooses for its `round`-th pause (0, 1, ...).
  // The default sleeps kPollInterval; the step executor wakes as soon as its compute thread
  // finishes an operation, and pauses longer while that thread computes.
  using Pause = std::function<void(int round)>;
  static constexpr std::chrono::microseconds kPollInterval{50};
  // The longest pause between checks while the rank's compute thread runs, and while it only
  // waits (a rank that only waits still shares its core with others on a shared machine). Each
  // wake-up slows the kernels on the core, while a longer pause only notices a message up to a
  // pause later, little beside a step's transfers (bench/cluster_steps times the steps).
  static constexpr std::chrono::microseconds kComputingPoll{2000};
  static constexpr std::chrono::microseconds kIdlePoll{200};
  // The `round`-th pause of a rank that computes meanwhile or not: from kPollInterval, doubling
  // up to kComputingPoll or kIdlePoll.
  static std::chrono::microseconds backoff(int round, bool computing);

  // Waits, driving progress(), until `ready()` is true; `ready` only looks (the work it unblocks
  // is done after the wait). Throws ClusterFailure naming the ranks of the outstanding messages
  // when nothing made `ready()` true within the timeout (`timeout_s` overrides it).
  void wait_until(const std::function<bool()>& ready, double timeout_s = 0.0,
                  const Pause& pause = {});
  void wait(Handle h, double timeout_s = 0.0, const Pause& pause = {});  // then release it
  void wait_all(std::vector<Handle>& hs, double timeout_s = 0.0);  // then release, clear hs

  // A failure at this rank, for errors found outside the transport.
  [[nodiscard]] ClusterFailure failure(const std::string& what) const;
  // Throws the failure a wait gives after `waited` seconds without progress: it names the peers
  // of the outstanding receives (or, when none, sends) and the earliest one's phase and step.
  [[noreturn]] void time_out(double waited) const;
  // How much longer than the timeout this rank waits for what it waits for now.
  [[nodiscard]] double patience() const;
  // When the send or receive `h` was posted, on the local clock; for a completed receive, the
  // sender's posting time is header(h).posted_at on the reference clock.
  [[nodiscard]] double posted_at(Handle h) const { return slots_.at(h).posted_local; }

 private:
  struct Slot {
    MPI_Request request = MPI_REQUEST_NULL;
    MessageHeader header;
    int peer = -1;
    MessageKind kind = MessageKind::clock;
    int64_t step = -1;
    size_t payload_bytes = 0;
    double posted_local = 0.0;
    bool is_send = false;
    bool tracked = false;  // a collective: no header, no size check
    bool open = false;     // posted and not released
    bool done = false;
  };

  Handle allocate();
  void check(int error, const Slot& slot, const char* call) const;
  void complete(Slot& slot, const MPI_Status& status);
  [[nodiscard]] std::string describe_peer(int peer) const;

  MPI_Comm comm_;
  const Roles& roles_;
  int rank_ = 0;
  double timeout_;
  double offset_ = 0.0;
  std::deque<Slot> slots_;
  std::vector<Handle> free_;
  std::vector<Handle> pending_;  // posted, not yet complete
  std::vector<double> bytes_in_, bytes_out_;
  std::vector<std::vector<double>> bytes_to_;
  void count_to(int64_t step, int peer, double bytes);
};

}  // namespace ralp::cluster
