// Ranks over MPI: point results travel to rank 0 as text messages tagged with the point index.
#include <mpi.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "ralp/sweep/ranks.hpp"

namespace ralp::sweep {
namespace {

constexpr int kResultTag = 1;

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace

bool built_with_mpi() { return true; }

Ranks& Ranks::world() {
  static Ranks ranks;
  return ranks;
}

Ranks::Ranks() {
  if (!launched_by_mpirun()) return;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  mpi_ = true;
}

Ranks::~Ranks() {
  if (!mpi_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised == 0) MPI_Finalize();
}

int64_t Ranks::broadcast(int64_t value) {
  if (!mpi_) return value;
  long long v = value;
  MPI_Bcast(&v, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return v;
}

void Ranks::send_result(size_t point, const std::string& text) {
  if (!mpi_) throw std::logic_error("send_result without MPI");
  // The index first, then the text, in one message.
  std::string message = std::to_string(point) + "\n" + text;
  MPI_Send(message.data(), static_cast<int>(message.size()), MPI_CHAR, 0, kResultTag,
           MPI_COMM_WORLD);
}

std::optional<std::pair<size_t, std::string>> Ranks::receive_result(bool wait) {
  if (!mpi_) return std::nullopt;
  MPI_Status status;
  if (wait) {
    MPI_Probe(MPI_ANY_SOURCE, kResultTag, MPI_COMM_WORLD, &status);
  } else {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, kResultTag, MPI_COMM_WORLD, &flag, &status);
    if (flag == 0) return std::nullopt;
  }
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::vector<char> buffer(static_cast<size_t>(count));
  MPI_Recv(buffer.data(), count, MPI_CHAR, status.MPI_SOURCE, kResultTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  const std::string message(buffer.begin(), buffer.end());
  const size_t nl = message.find('\n');
  return std::pair{static_cast<size_t>(std::stoull(message.substr(0, nl))), message.substr(nl + 1)};
}

void Ranks::abort(int code) {
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace ralp::sweep
