// MPI start-up and shut-down. Includes <mpi.h>.
#include "ralp/cluster/mpi_session.hpp"

#include <mpi.h>

#include <cstdlib>
#include <stdexcept>

namespace ralp::cluster {

MpiSession::MpiSession() {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    throw std::runtime_error("MPI_Init_thread failed");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

bool MpiSession::all_ranks_ready(bool ready) {
  int mine = ready ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

void MpiSession::abort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; this keeps [[noreturn]] honest if it did
}

}  // namespace ralp::cluster
