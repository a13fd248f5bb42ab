// The process's MPI session: initialisation, the agreement that every rank is ready before any
// training message, orderly finalisation, and aborting the whole job when a rank detects a
// failure. The only public cluster type that stands for MPI; <mpi.h> stays in src/.
#pragma once

#include <stdexcept>

namespace ralp::cluster {

// A failure one rank detected and the others may not see: a peer that stopped answering, an MPI
// error, ranks that disagree about a message. The job must be aborted; what() starts with the
// detecting rank ("rank 0 (ps-0): no message from ...").
class ClusterFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MpiSession {
 public:
  // Initialises MPI (one thread makes MPI calls; kernels may use their own threads). Throws
  // std::runtime_error when MPI cannot start.
  MpiSession();
  // Finalises MPI unless the job was aborted. Every rank must get here for the job to end.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

  // One small all-reduce: true when every rank passed true. Used once, after each rank has read
  // the scenario on its own, so that a problem on any rank stops all of them the same way.
  bool all_ranks_ready(bool ready);

  // Ends every rank of the job with `status` (MPI_Abort). For failures the other ranks cannot see:
  // a peer that stopped answering, an MPI error.
  [[noreturn]] void abort(int status);

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace ralp::cluster
