// Point-to-point messages over MPI with headers, byte counts, phase accounting and deadlines.
#include "transport.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <set>
#include <thread>

namespace ralp::cluster {
namespace {

// A wait first re-checks at once (a message is often just arriving), then pauses between
// checks (Transport::Pause), so that waiting ranks leave the CPU to computing ones.
constexpr int kSpinChecks = 16;
// Each check is one MPI progress call. Without the TCP transport's own progress thread (which
// MpiSession asks for), Open MPI reads its TCP sockets on only one call in eight, so a message
// that arrived during a pause could wait several checks, and the link probe's header-only round
// trip changed from run to run (with the thread it is steady: `ralp link-probe`'s rtt). Eight
// calls per check read the sockets every time, but cost a rank that waits a large share of its
// core, which a rank sharing that core loses (the waiting share `ralp link-probe` measures).
// MPI counts in int: larger pieces travel as several blocks of one message.
constexpr size_t kMaxBlock = size_t{1} << 30;
constexpr int kClockRounds = 8;

std::string mpi_error_string(int error) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(error, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// The header and pieces of one message as one MPI datatype of absolute addresses, so that a
// message leaves from (and lands in) tensors' own memory without packing.
MPI_Datatype message_type(MessageHeader* header, const std::vector<Piece>& pieces) {
  std::vector<int> lengths;
  std::vector<MPI_Aint> addresses;
  const auto add = [&](void* data, size_t bytes) {
    auto* base = static_cast<char*>(data);
    for (size_t offset = 0; offset < bytes; offset += kMaxBlock) {
      MPI_Aint address = 0;
      MPI_Get_address(base + offset, &address);
      lengths.push_back(static_cast<int>(std::min(kMaxBlock, bytes - offset)));
      addresses.push_back(address);
    }
  };
  add(header, sizeof(MessageHeader));
  for (const Piece& p : pieces) {
    if (p.bytes > 0) add(p.data, p.bytes);
  }
  const std::vector<MPI_Datatype> types(lengths.size(), MPI_BYTE);
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Type_create_struct(static_cast<int>(lengths.size()), lengths.data(), addresses.data(),
                         types.data(), &type);
  MPI_Type_commit(&type);
  return type;
}

size_t payload_of(const std::vector<Piece>& pieces) {
  size_t total = 0;
  for (const Piece& p : pieces) total += p.bytes;
  return total;
}

}  // namespace

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string_view describe(MessageKind kind) {
  switch (kind) {
    case MessageKind::clock:
      return "clock synchronisation";
    case MessageKind::start:
    case MessageKind::begin:
      return "the start of a strategy";
    case MessageKind::results:
      return "result gathering";
    default:  // a step's messages are named where the schedule defines them
      return schedule::to_string(static_cast<schedule::MessageKind>(kind));
  }
}

Transport::Transport(const Roles& roles, double timeout_s)
    : comm_(MPI_COMM_NULL), roles_(roles), timeout_(timeout_s) {
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
}

Transport::~Transport() {
  // Outstanding requests only remain after a failure, when the job is being aborted anyway.
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

ClusterFailure Transport::failure(const std::string& what) const {
  return ClusterFailure(roles_.describe(rank_) + ": " + what);
}

void Transport::check(int error, const Slot& slot, const char* call) const {
  if (error == MPI_SUCCESS) return;
  throw failure(std::string(call) + " failed " +
                (slot.is_send ? "sending to " : "receiving from ") + describe_peer(slot.peer) +
                " during " + std::string(describe(slot.kind)) +
                (slot.step >= 0 ? " of step " + std::to_string(slot.step) : "") + ": " +
                mpi_error_string(error));
}

Transport::Handle Transport::allocate() {
  if (!free_.empty()) {
    const Handle h = free_.back();
    free_.pop_back();
    slots_[h] = Slot{};
    return h;
  }
  slots_.emplace_back();
  return slots_.size() - 1;
}

void Transport::begin_strategy(int64_t steps) {
  bytes_in_.assign(static_cast<size_t>(steps), 0.0);
  bytes_out_.assign(static_cast<size_t>(steps), 0.0);
  bytes_to_.assign(static_cast<size_t>(steps), {});
}

void Transport::count_to(int64_t step, int peer, double bytes) {
  if (step < 0 || step >= static_cast<int64_t>(bytes_to_.size()) || peer < 0) return;
  std::vector<double>& row = bytes_to_[static_cast<size_t>(step)];
  if (row.size() <= static_cast<size_t>(peer)) row.resize(static_cast<size_t>(peer) + 1, 0.0);
  row[static_cast<size_t>(peer)] += bytes;
}

Transport::Handle Transport::send(int peer, MessageKind kind, int64_t step, int64_t item,
                                  std::vector<Piece> pieces) {
  const Handle h = allocate();
  Slot& s = slots_[h];
  s.peer = peer;
  s.kind = kind;
  s.step = step;
  s.is_send = true;
  s.open = true;
  s.payload_bytes = payload_of(pieces);
  s.posted_local = monotonic_seconds();
  s.header = {to_reference(s.posted_local), step, item};
  MPI_Datatype type = message_type(&s.header, pieces);
  const int error = MPI_Isend(MPI_BOTTOM, 1, type, peer, static_cast<int>(kind), comm_, &s.request);
  MPI_Type_free(&type);
  check(error, s, "MPI_Isend");
  if (step >= 0 && step < static_cast<int64_t>(bytes_out_.size())) {
    bytes_out_[static_cast<size_t>(step)] +=
        static_cast<double>(s.payload_bytes + sizeof(MessageHeader));
  }
  count_to(step, peer, static_cast<double>(s.payload_bytes + sizeof(MessageHeader)));
  pending_.push_back(h);
  return h;
}

Transport::Handle Transport::receive(int peer, MessageKind kind, int64_t step,
                                     std::vector<Piece> pieces) {
  const Handle h = allocate();
  Slot& s = slots_[h];
  s.peer = peer;
  s.kind = kind;
  s.step = step;
  s.open = true;
  s.payload_bytes = payload_of(pieces);
  s.posted_local = monotonic_seconds();
  MPI_Datatype type = message_type(&s.header, pieces);
  const int error = MPI_Irecv(MPI_BOTTOM, 1, type, peer, static_cast<int>(kind), comm_, &s.request);
  MPI_Type_free(&type);
  check(error, s, "MPI_Irecv");
  pending_.push_back(h);
  return h;
}

std::string Transport::describe_peer(int peer) const {
  return peer < 0 ? std::string("the other workers") : roles_.describe(peer);
}

Transport::Handle Transport::track(MPI_Request request, MessageKind kind, int64_t step) {
  const Handle h = allocate();
  Slot& s = slots_[h];
  s.request = request;
  s.kind = kind;
  s.step = step;
  s.tracked = true;
  s.open = true;
  s.posted_local = monotonic_seconds();
  pending_.push_back(h);
  return h;
}

void Transport::count(int64_t step, double in, double out, int to) {
  if (step < 0 || step >= static_cast<int64_t>(bytes_in_.size())) return;
  bytes_in_[static_cast<size_t>(step)] += in;
  bytes_out_[static_cast<size_t>(step)] += out;
  count_to(step, to, out);
}

void Transport::complete(Slot& s, const MPI_Status& status) {
  s.done = true;
  if (s.is_send || s.tracked) return;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  const size_t expected = s.payload_bytes + sizeof(MessageHeader);
  if (bytes != MPI_UNDEFINED && static_cast<size_t>(bytes) != expected) {
    throw failure("a " + std::string(describe(s.kind)) + " message from " +
                  roles_.describe(s.peer) + " has " + std::to_string(bytes) + " bytes, expected " +
                  std::to_string(expected) +
                  " (do all ranks run the same ralp on the same scenario?)");
  }
  if (s.header.step != s.step && s.step >= 0) {
    throw failure("a " + std::string(describe(s.kind)) + " message from " +
                  roles_.describe(s.peer) + " belongs to step " + std::to_string(s.header.step) +
                  ", expected step " + std::to_string(s.step));
  }
  if (s.step >= 0 && s.step < static_cast<int64_t>(bytes_in_.size())) {
    bytes_in_[static_cast<size_t>(s.step)] += static_cast<double>(expected);
  }
}

bool Transport::progress() {
  if (pending_.empty()) return false;
  std::vector<MPI_Request> requests;
  requests.reserve(pending_.size());
  for (const Handle h : pending_) requests.push_back(slots_[h].request);
  std::vector<int> indices(pending_.size());
  std::vector<MPI_Status> statuses(pending_.size());
  int count = 0;
  const int error = MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count,
                                 indices.data(), statuses.data());
  if (error == MPI_ERR_IN_STATUS) {
    // Statuses follow the completed requests' order, as indices does.
    for (int i = 0; i < count; ++i) {
      const int e = statuses[static_cast<size_t>(i)].MPI_ERROR;
      const auto index = static_cast<size_t>(indices[static_cast<size_t>(i)]);
      if (e != MPI_SUCCESS) check(e, slots_[pending_[index]], "MPI_Testsome");
    }
  }
  if (error != MPI_SUCCESS) check(error, slots_[pending_.front()], "MPI_Testsome");
  if (count == MPI_UNDEFINED || count == 0) return false;
  std::vector<bool> finished(pending_.size(), false);
  for (int i = 0; i < count; ++i) {
    const auto index = static_cast<size_t>(indices[static_cast<size_t>(i)]);
    Slot& s = slots_[pending_[index]];
    s.request = MPI_REQUEST_NULL;
    finished[index] = true;
    complete(s, statuses[static_cast<size_t>(i)]);
  }
  std::vector<Handle> still;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!finished[i]) still.push_back(pending_[i]);
  }
  pending_ = std::move(still);
  return true;
}

bool Transport::done(Handle h) const { return slots_.at(h).done; }

const MessageHeader& Transport::header(Handle h) const { return slots_.at(h).header; }

void Transport::release(Handle h) {
  Slot& s = slots_.at(h);
  if (!s.open || !s.done) throw std::logic_error("transport: releasing an unfinished message");
  s.open = false;
  free_.push_back(h);
}

double Transport::patience() const {
  if (!roles_.of(rank_).is_worker()) return 1.0;
  bool any = false;
  for (const Handle h : pending_) {
    const Slot& s = slots_[h];
    if (s.is_send) continue;
    any = true;
    if (s.peer < 0 || !roles_.of(s.peer).is_ps()) return 1.0;
  }
  return any ? kPsPatience : 1.0;
}

void Transport::time_out(double waited) const {
  // Blame the receives still outstanding (or, when none, the sends): the earliest posted one
  // names the phase and step.
  std::vector<const Slot*> blamed;
  for (const bool sends : {false, true}) {
    for (const Handle h : pending_) {
      if (slots_[h].is_send == sends) blamed.push_back(&slots_[h]);
    }
    if (!blamed.empty()) break;
  }
  if (blamed.empty()) {
    throw failure("no progress within " + std::to_string(waited) + " s with no message pending");
  }
  std::sort(blamed.begin(), blamed.end(),
            [](const Slot* a, const Slot* b) { return a->posted_local < b->posted_local; });
  std::set<int> peers;
  std::string names;
  for (const Slot* s : blamed) {
    if (peers.insert(s->peer).second) names += (names.empty() ? "" : ", ") + describe_peer(s->peer);
  }
  const Slot& first = *blamed.front();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", waited);
  const std::string during = " during " + std::string(describe(first.kind)) +
                             (first.step >= 0 ? " of step " + std::to_string(first.step) : "");
  if (first.is_send) {
    throw failure(names + " took no message" + during + " within " + seconds + " s");
  }
  throw failure("no message from " + names + during + " within " + seconds + " s");
}

void Transport::wait_until(const std::function<bool()>& ready, double timeout_s,
                           const Pause& pause) {
  const double start = monotonic_seconds();
  for (int checks = 0;; ++checks) {
    progress();
    if (ready()) return;
    const double limit = timeout_s > 0.0 ? timeout_s : timeout_ * patience();
    if (monotonic_seconds() - start > limit) time_out(limit);
    if (checks < kSpinChecks) continue;
    if (pause) {
      pause(checks - kSpinChecks);
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

std::chrono::microseconds Transport::backoff(int round, bool computing) {
  constexpr int kMaxDoublings = 8;
  return std::min(kPollInterval * (int64_t{1} << std::clamp(round, 0, kMaxDoublings)),
                  std::chrono::microseconds(computing ? kComputingPoll : kIdlePoll));
}

void Transport::wait(Handle h, double timeout_s, const Pause& pause) {
  wait_until([&] { return done(h); }, timeout_s, pause);
  release(h);
}

void Transport::wait_all(std::vector<Handle>& hs, double timeout_s) {
  wait_until([&] { return std::all_of(hs.begin(), hs.end(), [&](Handle h) { return done(h); }); },
             timeout_s);
  for (const Handle h : hs) release(h);
  hs.clear();
}

void Transport::synchronise_clocks() {
  const int ranks = roles_.ranks();
  if (rank_ == 0) {
    for (int peer = 1; peer < ranks; ++peer) {
      for (int round = 0; round < kClockRounds; ++round) {
        double ping = 0.0;
        const Handle in = receive(peer, MessageKind::clock, -1, {{&ping, sizeof ping}});
        wait(in);
        double pong = monotonic_seconds();
        const Handle out = send(peer, MessageKind::clock, -1, round, {{&pong, sizeof pong}});
        wait(out);
      }
    }
    offset_ = 0.0;
    return;
  }
  double best_delay = 0.0;
  for (int round = 0; round < kClockRounds; ++round) {
    double t1 = monotonic_seconds();
    double reference = 0.0;
    const Handle in = receive(0, MessageKind::clock, -1, {{&reference, sizeof reference}});
    const Handle out = send(0, MessageKind::clock, -1, round, {{&t1, sizeof t1}});
    wait(out);
    wait(in);
    const double t2 = monotonic_seconds();
    if (round == 0 || t2 - t1 < best_delay) {
      best_delay = t2 - t1;
      offset_ = reference - (t1 + t2) / 2.0;
    }
  }
}

}  // namespace ralp::cluster
