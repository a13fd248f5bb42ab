#include "compute_priority.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace ralp::cluster {

std::string run_below_communication() {
  const sched_param param{};
  const int error = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
  if (error == 0) return {};
  return std::string("cannot put the compute thread in SCHED_IDLE: ") + std::strerror(error);
}

}  // namespace ralp::cluster
