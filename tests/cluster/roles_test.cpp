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
  EXPECT_THROW(Roles(0, 2), std::invalid_argument);
}

}  // namespace
}  // namespace ralp::cluster
