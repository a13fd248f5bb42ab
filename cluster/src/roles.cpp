// Rank roles and their names.
#include "ralp/cluster/roles.hpp"

#include <stdexcept>

namespace ralp::cluster {

std::string Role::name() const {
  return (kind == Kind::ps ? "ps-" : "worker-") + std::to_string(index);
}

Roles::Roles(int64_t parameter_servers, int64_t workers)
    : parameter_servers_(parameter_servers), workers_(workers) {
  if (parameter_servers < 0 || workers < 1) {
    throw std::invalid_argument("a cluster needs at least one worker and no negative count");
  }
}

Role Roles::of(int rank) const {
  if (rank < 0 || rank >= ranks()) {
    throw std::out_of_range("rank " + std::to_string(rank) + " outside a cluster of " +
                            std::to_string(ranks()) + " ranks");
  }
  if (rank < parameter_servers_) return {Role::Kind::ps, rank};
  return {Role::Kind::worker, rank - parameter_servers_};
}

std::string Roles::describe(int rank) const {
  return "rank " + std::to_string(rank) + " (" + of(rank).name() + ")";
}

}  // namespace ralp::cluster
