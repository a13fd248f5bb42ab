// Which MPI rank plays which role: parameter-server shards first (ps-0 is also the head PS of ralp
// and hybrid), then the workers, as the simulator names its hosts.
#pragma once

#include <cstdint>
#include <string>

namespace ralp::cluster {

struct Role {
  enum class Kind { ps, worker };
  Kind kind = Kind::ps;
  int64_t index = 0;  // shard or worker number

  [[nodiscard]] bool is_ps() const { return kind == Kind::ps; }
  [[nodiscard]] bool is_worker() const { return kind == Kind::worker; }
  [[nodiscard]] std::string name() const;  // "ps-0", "worker-1"
  friend bool operator==(const Role&, const Role&) = default;
};

class Roles {
 public:
  // Precondition: parameter_servers >= 1, workers >= 1.
  Roles(int64_t parameter_servers, int64_t workers);

  [[nodiscard]] int64_t parameter_servers() const { return parameter_servers_; }
  [[nodiscard]] int64_t workers() const { return workers_; }
  [[nodiscard]] int ranks() const { return static_cast<int>(parameter_servers_ + workers_); }
  [[nodiscard]] int ps_rank(int64_t shard) const { return static_cast<int>(shard); }
  [[nodiscard]] int worker_rank(int64_t worker) const {
    return static_cast<int>(parameter_servers_ + worker);
  }
  // Throws std::out_of_range for a rank outside [0, ranks()).
  [[nodiscard]] Role of(int rank) const;
  // "rank 2 (worker-1)", as every message about a rank says it.
  [[nodiscard]] std::string describe(int rank) const;

 private:
  int64_t parameter_servers_;
  int64_t workers_;
};

}  // namespace ralp::cluster
