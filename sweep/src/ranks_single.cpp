// Ranks without MPI in the build: this process is the only rank.
#include <cstdlib>
#include <stdexcept>

#include "ralp/sweep/ranks.hpp"

namespace ralp::sweep {

bool built_with_mpi() { return false; }

Ranks& Ranks::world() {
  static Ranks ranks;
  return ranks;
}

Ranks::Ranks() = default;
Ranks::~Ranks() = default;

int64_t Ranks::broadcast(int64_t value) { return value; }

void Ranks::send_result(size_t, const std::string&) {
  throw std::logic_error("send_result with a single rank");
}

std::optional<std::pair<size_t, std::string>> Ranks::receive_result(bool) { return std::nullopt; }

void Ranks::abort(int code) { std::exit(code); }

}  // namespace ralp::sweep
