// Rank roles: parameter servers first, then workers, named as the simulator names its hosts.
#include <gtest/gtest.h>

#include "ralp/cluster/roles.hpp"

namespace ralp::cluster {
namespace {

TEST(Roles, PsFirstThenWorkers) {
  const Roles roles(2, 3);
  EXPECT_EQ(roles.ranks(), 5);
  EXPECT_EQ(roles.of(0), (Role{Role::Kind::ps, 0}));
  EXPECT_EQ(roles.of(1), (Role{Role::Kind::ps, 1}));
  EXPECT_EQ(roles.of(2), (Role{Role::Kind::worker, 0}));
  EXPECT_EQ(roles.of(4), (Role{Role::Kind::worker, 2}));
  EXPECT_EQ(roles.worker_rank(1), 3);
  EXPECT_EQ(roles.ps_rank(1), 1);
  EXPECT_EQ(roles.describe(3), "rank 3 (worker-1)");
  EXPECT_EQ(roles.describe(0), "rank 0 (ps-0)");
  EXPECT_THROW((void)roles.of(5), std::out_of_range);
  EXPECT_THROW(Roles(1, 0), std::invalid_argument);
  // A pure all-reduce cluster has no parameter server: worker-0 is rank 0.
  const Roles workers_only(0, 2);
  EXPECT_EQ(workers_only.ranks(), 2);
  EXPECT_EQ(workers_only.of(0), (Role{Role::Kind::worker, 0}));
}

}  // namespace
}  // namespace ralp::cluster
