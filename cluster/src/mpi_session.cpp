// MPI start-up and shut-down. Includes <mpi.h>.
#include "ralp/cluster/mpi_session.hpp"

#include <mpi.h>

#include <cstdlib>
#include <stdexcept>

namespace ralp::cluster {

MpiSession::MpiSession() {
  // Open MPI's TCP transport moves bytes only when the rank drives MPI's progress, and reads its
  // sockets on only one progress call in eight, so a transfer waited for the MPI thread's checks.
  // With the transport's own progress thread, which sleeps in epoll until a socket is ready, bytes
  // move as soon as the network allows (`ralp link-probe`'s round trip, under mpirun with and
  // without --mca btl_tcp_progress_thread 0, shows the difference).
  // A --mca btl_tcp_progress_thread on mpirun's command line (an environment variable by the
  // time it gets here) still decides.
  setenv("OMPI_MCA_btl_tcp_progress_thread", "1", /*overwrite=*/0);
  // The transport sends everything to a peer, data and the rendezvous' control messages alike,
  // over one socket, and Linux lets a socket's send buffer grow to 4 MB: a control message
  // queued behind megabytes of data waited for them to drain. In a ring all-reduce between two
  // workers, one worker's go-ahead for the other's chunk waited behind its own chunk, and some
  // steps stalled; with this buffer the steps are even, at the same goodput (bench/cluster_steps
  // prints each strategy's step times and their spread). The kernel doubles it: a sender keeps
  // up to 256 KiB on its way, enough for 10 Gbit/s at 200 us of round trip. mpirun's --mca
  // btl_tcp_sndbuf still decides.
  setenv("OMPI_MCA_btl_tcp_sndbuf", "131072", /*overwrite=*/0);
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
