// Variable placement on PS shards: the documented rule worked by hand on cifar_alexnet.
#include <gtest/gtest.h>

#include "ralp/model/model_zoo.hpp"
#include "ralp/spec/sharding.hpp"

namespace ralp {
namespace {

// cifar_alexnet's variables in model order, with their element counts:
//   conv1.w 2400, conv1.b 32, conv2.w 51200, conv2.b 64, fc3.w 4194304, fc3.b 1024,
//   fc4.w 524288, fc4.b 512, fc5.w 5120, fc5.b 10.
LayerGraph alexnet() { return *zoo_model("cifar_alexnet"); }

TEST(Sharding, RoundRobinAlternates) {
  const LayerGraph g = alexnet();
  EXPECT_EQ(assign_shards(g, g.size(), 2, ShardPlacement::round_robin),
            (std::vector<int64_t>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(assign_shards(g, g.size(), 3, ShardPlacement::round_robin),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}));
}

TEST(Sharding, GreedyGoesToTheLightestShard) {
  const LayerGraph g = alexnet();
  // Bytes so far (shard 0 / shard 1): conv1.w -> 0 (9600 / 0); conv1.b -> 1 (9600 / 128);
  // conv2.w -> 1 (9600 / 204928); conv2.b -> 0 (9856 / 204928); fc3.w -> 0 (16787072 / 204928);
  // then shard 1 stays lighter for every remaining variable.
  EXPECT_EQ(assign_shards(g, g.size(), 2, ShardPlacement::greedy),
            (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 1, 1, 1, 1}));
}

TEST(Sharding, TailOnlyAndOneShardPerMessage) {
  const LayerGraph g = alexnet();
  const LayerId fc3 = *g.find("fc3");
  const ShardPlan plan = make_shard_plan(g, fc3, 2, ShardPlacement::round_robin);
  ASSERT_EQ(plan.variables.size(), 4u);  // conv1 and conv2 only
  // Round robin puts each layer's weight on shard 0 and bias on shard 1: two messages per layer.
  ASSERT_EQ(plan.groups.size(), 4u);
  EXPECT_EQ(plan.groups[0].layer, 0u);
  EXPECT_EQ(plan.groups[0].shard, 0);
  EXPECT_EQ(plan.groups[0].bytes, 2400 * 4);
  EXPECT_EQ(plan.groups[1].shard, 1);
  EXPECT_EQ(plan.groups[1].bytes, 32 * 4);
  EXPECT_EQ(plan.groups_of_shard(1).size(), 2u);

  // One shard: one message per layer, weight and bias together.
  const ShardPlan one = make_shard_plan(g, g.size(), 1, ShardPlacement::round_robin);
  ASSERT_EQ(one.groups.size(), 5u);
  EXPECT_EQ(one.groups_of_layer(fc3).front()->bytes, (4194304 + 1024) * 4);
  EXPECT_EQ(one.groups_of_layer(fc3).front()->variables, (std::vector<size_t>{4, 5}));
}

}  // namespace
}  // namespace ralp
