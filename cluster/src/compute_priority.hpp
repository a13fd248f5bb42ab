// The scheduling class of a rank's computation on a CPU: below the threads that move its messages.
// Internal to cluster/.
#pragma once

#include <string>

namespace ralp::cluster {

// Puts the calling thread in Linux's SCHED_IDLE class, so that the rank's communication threads
// (its MPI thread and Open MPI's TCP progress thread), when they wake, take the core from it at
// once. At the same priority they wait for the computation's time slice to end, so a message
// between two computing ranks, and a ring all-reduce beside backward, move at the pace of time
// slices rather than the link's (`ralp cluster --trace` with and without --compute-yields shows
// it). The computation still gets the whole core whenever they sleep. Returns an empty string,
// or why the class could not be set (the thread then keeps its class).
std::string run_below_communication();

}  // namespace ralp::cluster
