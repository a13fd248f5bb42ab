// The processes a sweep is divided among: MPI's ranks when `ralp sweep` runs under mpirun and
// was built with MPI, else this process alone. Rank 0 gathers every result and alone writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace ralp::sweep {

class Ranks {
 public:
  // The world: initialises MPI on first use when the environment says mpirun started this
  // process (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE) and MPI is built in; MPI is finalised
  // at exit.
  static Ranks& world();

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

  // Rank 0's value, on every rank.
  int64_t broadcast(int64_t value);
  // From any other rank to rank 0: a point's outcome as JSON text.
  void send_result(size_t point, const std::string& text);
  // On rank 0: a result another rank sent, if one has arrived (wait: block until one does).
  std::optional<std::pair<size_t, std::string>> receive_result(bool wait);
  // Stops every rank with `code` (after rank 0 failed while others still work).
  [[noreturn]] void abort(int code);

  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;
  ~Ranks();

 private:
  Ranks();
  int rank_ = 0;
  int size_ = 1;
  bool mpi_ = false;
};

// Whether this build can divide a sweep among MPI ranks.
bool built_with_mpi();

}  // namespace ralp::sweep
