// Candidate heads against brute force: on random DAGs of up to 16 layers every successor-closed
// set is enumerated once; the search's candidates hold them all without duplicates, suffixes
// first; each one's model order is topological with the head as its suffix; and a candidate's
// plan cut from the longest tail equals the plan of the reordered model. A hand-checkable model
// with two branches, whose best head is not a suffix.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "random_dags.hpp"
#include "ralp/model/model_file.hpp"
#include "ralp/model/model_zoo.hpp"
#include "ralp/placement/analytic.hpp"
#include "ralp/placement/heads.hpp"
#include "ralp/placement/plans.hpp"
#include "ralp/placement/search.hpp"
#include "ralp/spec/strategy_head.hpp"

namespace ralp {
namespace {

constexpr uint64_t kSeeds = 120;

// Every non-empty proper subset closed under successors, by checking all 2^n subsets.
std::set<std::vector<LayerId>> brute_force_heads(const LayerGraph& g) {
  const size_t n = g.size();
  std::vector<uint32_t> successors(n, 0);
  for (LayerId id = 0; id < n; ++id) {
    for (const LayerId s : g.successors(id)) successors[id] |= 1U << s;
  }
  std::set<std::vector<LayerId>> out;
  const uint32_t full = (1U << n) - 1;
  for (uint32_t set = 1; set < full; ++set) {
    bool closed = true;
    for (LayerId id = 0; id < n && closed; ++id) {
      if ((set >> id) & 1U) closed = (successors[id] & ~set) == 0;
    }
    if (!closed) continue;
    std::vector<LayerId> layers;
    for (LayerId id = 0; id < n; ++id) {
      if ((set >> id) & 1U) layers.push_back(id);
    }
    out.insert(layers);
  }
  return out;
}

size_t layers_for(uint64_t seed) { return 3 + static_cast<size_t>(seed % 14); }  // 3 to 16

TEST(Heads, EnumerationEqualsBruteForceOnRandomDags) {
  size_t most = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Scenario s = testing::random_dag_scenario(seed, layers_for(seed));
    const LayerGraph& g = s.model;
    const auto expected = brute_force_heads(g);
    const auto all = placement::all_heads(g);
    ASSERT_TRUE(all.has_value());
    std::set<std::vector<LayerId>> found;
    for (const Head& h : *all) EXPECT_TRUE(found.insert(h.layers()).second) << "a duplicate";
    EXPECT_EQ(found, expected);
    most = std::max(most, expected.size());

    // The search's candidates: the same sets but those without parameters (nothing to keep on the
    // PS), each once, the suffixes first in cut order.
    const auto candidates = placement::candidate_heads(g);
    std::set<std::vector<LayerId>> candidate_sets;
    for (const Head& h : candidates) {
      EXPECT_TRUE(candidate_sets.insert(h.layers()).second) << "a duplicate candidate";
      EXPECT_TRUE(placement::holds_parameters(g, h));
    }
    std::set<std::vector<LayerId>> with_parameters;
    for (const Head& h : *all) {
      if (placement::holds_parameters(g, h)) with_parameters.insert(h.layers());
    }
    EXPECT_EQ(candidate_sets, with_parameters);
    EXPECT_LT(with_parameters.size(), expected.size());  // the loss alone is a head, not a candidate
    size_t position = 0;
    for (LayerId cut = 1; cut < g.size(); ++cut) {
      const Head suffix = Head::suffix(g, cut);
      if (placement::holds_parameters(g, suffix)) {
        EXPECT_EQ(candidates[position++], suffix);
      }
    }

    // Each candidate's model order: topological, the head its suffix from head.cut().
    for (const Head& h : candidates) {
      const LayerGraph r = model_for_head(g, h);
      for (LayerId i = 0; i < r.size(); ++i) {
        for (const LayerId p : r.predecessors(i)) ASSERT_LT(p, i);
        EXPECT_EQ(i >= h.cut(), h.contains(*g.find(r.layer(i).name())));
      }
      EXPECT_EQ(parse_head(g, head_name(g, h)), h);
    }
  }
  // The DAGs are not all chains: some have many more heads than suffixes.
  EXPECT_GT(most, 30u);
}

TEST(Heads, EnumerationStopsAtItsLimit) {
  // Six independent branches (fc layers reading the input) joined by one add.
  std::string layers;
  for (int b = 0; b < 6; ++b) {
    layers += R"({"name": "b)" + std::to_string(b) +
              R"(", "type": "fc", "out_features": 4, "inputs": ["input"]}, )";
  }
  layers += R"({"name": "join", "type": "add", "inputs": ["b0", "b1", "b2", "b3", "b4", "b5"]},
               {"name": "loss", "type": "softmax_cross_entropy"})";
  const LayerGraph g = parse_model(
      parse_json_text(R"({"name": "fan", "input": [4, 1, 1], "layers": [)" + layers + "]}", "m"),
      "", "m");
  // Heads: {loss}, and {join, loss} with any proper subset of the 6 branches... every subset but
  // all six (that would be every layer): 1 + 63 = 64.
  ASSERT_TRUE(placement::all_heads(g, 64).has_value());
  EXPECT_EQ(placement::all_heads(g, 64)->size(), 64u);
  EXPECT_FALSE(placement::all_heads(g, 63).has_value());
}

// The zoo's DAGs: a ResNet's heads beyond its suffixes are the downsampling blocks' (the
// shortcut beside the main branch), few enough to be every candidate; GoogLeNet's are far too
// many, and its candidates are the families, twice its suffixes.
TEST(Heads, ZooModelsHeadCounts) {
  const LayerGraph resnet = *zoo_model("resnet50");
  const auto all = placement::all_heads(resnet);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(resnet.cut_points().size(), 175u);
  EXPECT_EQ(all->size(), 239u);
  // Every head but the loss alone, which holds no parameters.
  EXPECT_EQ(placement::candidate_heads(resnet).size(), 238u);
  const LayerGraph googlenet = *zoo_model("googlenet");
  EXPECT_FALSE(placement::all_heads(googlenet).has_value());
  EXPECT_EQ(googlenet.cut_points().size(), 197u);
  EXPECT_EQ(placement::candidate_heads(googlenet).size(), 403u);
  // A chain has only its suffixes.
  const LayerGraph vgg = *zoo_model("vgg16");
  EXPECT_EQ(placement::all_heads(vgg)->size(), vgg.cut_points().size());
}

// The plan the ranking builds for a head equals the reordered model's plan in what the analytic
// model reads: the same estimate, bit for bit (ralp on one and two shards, each sharding; hybrid).
TEST(Heads, CandidatePlansEqualTheReorderedModelsPlans) {
  const char* strategies[] = {R"({"name": "ralp", "cut": "auto"})",
                              R"({"name": "ralp", "cut": "auto", "sharding": "greedy"})",
                              R"({"name": "ralp", "cut": "auto", "sharding": "balanced"})",
                              R"({"name": "hybrid", "cut": "auto"})"};
  std::vector<std::pair<int64_t, const char*>> settings;
  for (const int64_t shards : {1, 2}) {
    for (const char* strategy : strategies) settings.emplace_back(shards, strategy);
  }
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    for (const auto& [shards, strategy] : settings) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(shards) + " shards, " +
                   strategy);
      const Scenario s = testing::random_dag_scenario(seed, layers_for(seed), 3, strategy, shards);
      const placement::CutPlans plans(s, s.strategies[0]);
      for (const Head& h : placement::candidate_heads(s.model)) {
        const schedule::StepPlan cut = plans.plan_at(h);
        const schedule::StepPlan full =
            schedule::make_step_plan(scenario_for_head(s, h), s.strategies[0], h.cut());
        EXPECT_EQ(cut.boundary_bytes, full.boundary_bytes);
        EXPECT_EQ(cut.activation_grad_bytes, full.activation_grad_bytes);
        EXPECT_EQ(cut.head_param_bytes, full.head_param_bytes);
        EXPECT_EQ(cut.tail_param_bytes, full.tail_param_bytes);
        EXPECT_EQ(cut.groups_by_layer, full.groups_by_layer);
        EXPECT_EQ(cut.layer_names, full.layer_names);
        EXPECT_EQ(cut.tensors, full.tensors);
        EXPECT_EQ(placement::estimate_step(s, cut).step_time_s,
                  placement::estimate_step(s, full).step_time_s);
      }
    }
  }
}

Scenario branches_scenario() {
  return load_scenario(std::string(RALP_TEST_DATA_DIR) + "/data/scenarios/branches-head.json");
}

// tests/data/models/branches.json on 4 workers, 1 Gbps, batch 32, cpu-core (99 GFLOP/s):
//   a_fc holds 1,049,600 parameters (4.2 MB): in the tail, each worker pushes and pulls it, 4 x
//   4.2 MB = 16.8 MB each way through the PS's link, 134 ms each way at 1 Gbps;
//   the b branch is the compute: b_conv1 and b_conv2 are 2 x 2.36 MFLOP per image, 151 MFLOP
//   forward per micro-batch, about 450 MFLOP with backward: in the head, the PS runs it for
//   the 4 micro-batches one after another.
// So the best head holds a_fc and not the b branch: {a_fc, join, fc, loss}, "a_fc+", not a
// suffix of the file order (b_conv1..b_pool sit between a_fc and join). Its boundary is stem
// (16 x 8 x 8 floats, 4 KiB per image) and b_pool (16 floats per image).
TEST(Heads, TheBestHeadOfTwoBranchesIsNotASuffix) {
  const Scenario s = branches_scenario();
  const auto heads = placement::candidate_heads(s.model);
  // 2 without join, 2 x 5 with it; {loss} holds no parameters and is no candidate.
  EXPECT_EQ(heads.size(), 11u);
  const auto ranked = placement::rank_cuts(s, s.strategies[1]);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked.front().candidate.name, "a_fc+");
  EXPECT_EQ(ranked.front().candidate.boundary_bytes, 32 * (16 * 8 * 8 * 4 + 16 * 4 + 4));
  EXPECT_EQ(ranked.front().candidate.head_param_bytes,
            (1024 * 1024 + 1024 + 1040 * 10 + 10) * 4);
}

}  // namespace
}  // namespace ralp
