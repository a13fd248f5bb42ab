// Heads that are any successor-closed set of layers: closure, checks, names, the head's model
// order, and the scenario's "head" key, on a small model with two branches.
#include <gtest/gtest.h>

#include "ralp/model/model_file.hpp"
#include "ralp/spec/head.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/scenario_overrides.hpp"
#include "ralp/spec/strategy_head.hpp"

namespace ralp {
namespace {

// stem -> a_fc -----------------------------> join -> fc -> loss
//      -> b_conv1 -> b_relu -> b_conv2 -> b_pool ->
// ids:  stem 0, a_fc 1, b_conv1 2, b_relu 3, b_conv2 4, b_pool 5, join 6, fc 7, loss 8.
LayerGraph branches() {
  return load_model_file(std::string(RALP_TEST_DATA_DIR) + "/data/models/branches.json");
}

std::vector<std::string> names(const LayerGraph& g, const std::vector<LayerId>& ids) {
  std::vector<std::string> out;
  for (const LayerId id : ids) out.push_back(g.layer(id).name());
  return out;
}

TEST(Head, SuffixIsTheClassicCut) {
  const LayerGraph g = branches();
  const Head h = Head::suffix(g, 6);
  EXPECT_TRUE(h.is_suffix());
  EXPECT_EQ(h.cut(), 6u);
  EXPECT_EQ(h.layers(), (std::vector<LayerId>{6, 7, 8}));
  EXPECT_EQ(head_name(g, h), "join");
  EXPECT_TRUE(head_layer_names(g, h).empty());
  EXPECT_EQ(head_order(h), (std::vector<LayerId>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(Head::suffix(g, 0), std::invalid_argument);
  EXPECT_THROW(Head::suffix(g, 9), std::invalid_argument);
}

TEST(Head, ABranchWithItsDescendantsIsNotASuffix) {
  const LayerGraph g = branches();
  const Head h = Head::closure(g, {1});
  EXPECT_EQ(h.layers(), (std::vector<LayerId>{1, 6, 7, 8}));
  EXPECT_FALSE(h.is_suffix());
  // Five tail layers, then the head: its first layer has id 5 in the head's order.
  EXPECT_EQ(h.cut(), 5u);
  EXPECT_EQ(head_order(h), (std::vector<LayerId>{0, 2, 3, 4, 5, 1, 6, 7, 8}));
  // One minimal layer: a trailing '+' keeps it apart from the suffix from a_fc.
  EXPECT_EQ(head_name(g, h), "a_fc+");
  EXPECT_EQ(head_layer_names(g, h), (std::vector<std::string>{"a_fc", "join", "fc", "loss"}));
  EXPECT_EQ(parse_head(g, "a_fc+"), h);
  EXPECT_EQ(parse_head(g, "a_fc"), Head::suffix(g, 1));
}

TEST(Head, TwoMinimalLayersAreJoinedWithPlus) {
  const LayerGraph g = branches();
  const Head h = parse_head(g, "a_fc+b_conv2");
  EXPECT_EQ(h.layers(), (std::vector<LayerId>{1, 4, 5, 6, 7, 8}));
  EXPECT_EQ(names(g, minimal_layers(g, h)), (std::vector<std::string>{"a_fc", "b_conv2"}));
  EXPECT_EQ(head_name(g, h), "a_fc+b_conv2");
  EXPECT_EQ(parse_head(g, head_name(g, h)), h);
  // A closure that is a suffix is named as the suffix.
  EXPECT_EQ(head_name(g, parse_head(g, "a_fc+b_conv1")), "a_fc");
}

TEST(Head, BadSetsAreRefused) {
  const LayerGraph g = branches();
  EXPECT_THROW(Head::closure(g, {}), std::invalid_argument);
  EXPECT_THROW(Head::closure(g, {0}), std::invalid_argument);  // every layer
  EXPECT_THROW(Head::of_layers(g, {1, 7, 8}), std::invalid_argument);  // join reads a_fc
  EXPECT_THROW(Head::of_layers(g, {7, 7, 8}), std::invalid_argument);
  EXPECT_NO_THROW(Head::of_layers(g, {8, 1, 7, 6}));
  EXPECT_THROW(parse_head(g, "stem"), std::invalid_argument);
  EXPECT_THROW(parse_head(g, "a_fc+nope"), std::invalid_argument);
  EXPECT_THROW(parse_head(g, "+"), std::invalid_argument);
}

TEST(Head, TheHeadsOrderKeepsNamesInputsAndShapes) {
  const LayerGraph g = branches();
  const Head h = Head::closure(g, {1});
  const LayerGraph r = model_for_head(g, h);
  ASSERT_EQ(r.size(), g.size());
  const std::vector<LayerId> order = head_order(h);
  for (LayerId i = 0; i < r.size(); ++i) {
    const Layer& a = r.layer(i);
    const Layer& b = g.layer(order[i]);
    EXPECT_EQ(a.name(), b.name());
    EXPECT_EQ(a.spec.inputs, b.spec.inputs);
    EXPECT_EQ(a.output, b.output);
    EXPECT_EQ(a.params(), b.params());
    for (const LayerId p : r.predecessors(i)) EXPECT_LT(p, i);
  }
  // The head is the suffix [5, 9): a_fc, join, fc, loss; its boundary is stem and b_pool.
  const CutInfo info = r.describe_cut(h.cut());
  EXPECT_EQ(names(r, info.boundary), (std::vector<std::string>{"stem", "b_pool"}));
  EXPECT_EQ(info.head_params, g.layer(1).params() + g.layer(7).params());
  // Not a topological order: b_relu before b_conv1.
  EXPECT_THROW(g.reordered({0, 1, 3, 2, 4, 5, 6, 7, 8}), std::invalid_argument);
  EXPECT_THROW(g.reordered({0, 1, 2}), std::invalid_argument);
}

Scenario with_strategy(const std::string& strategy) {
  const std::string text = R"({"name": "t", "model": {"file": "data/models/branches.json"},
      "batch_per_worker": 4, "cluster": {"workers": 2, "worker_device": "cpu-core",
      "platform": {"kind": "star", "nic_bandwidth": "1Gbps"}}, "strategies": [)" +
                           strategy + "]}";
  return parse_scenario(parse_json_text(text, "t.json"), "t.json", RALP_TEST_DATA_DIR);
}

std::string error_of(const std::string& strategy) {
  try {
    with_strategy(strategy);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScenarioHead, AHeadKeyNamesTheSetAndItsDescendants) {
  const Scenario s = with_strategy(R"({"name": "ralp", "head": ["a_fc"]},
      {"name": "hybrid", "head": ["a_fc", "b_conv2"]}, {"name": "ralp", "head": ["join"]})");
  EXPECT_EQ(s.strategies[0].cut, "a_fc+");
  EXPECT_EQ(s.strategies[0].label, "ralp@a_fc+");
  EXPECT_EQ(s.strategies[1].cut, "a_fc+b_conv2");
  // A head that is a suffix is the cut at its first layer.
  EXPECT_EQ(s.strategies[2].cut, "join");
  EXPECT_EQ(strategy_head(s.model, s.strategies[1]), parse_head(s.model, "a_fc+b_conv2"));
  // Echoed as a head (its minimal layers) or, for a suffix, as a cut.
  const Json j = scenario_to_json(s);
  EXPECT_EQ(j["strategies"][0]["head"], Json::array({"a_fc"}));
  EXPECT_FALSE(j["strategies"][0].contains("cut"));
  EXPECT_EQ(j["strategies"][1]["head"], Json::array({"a_fc", "b_conv2"}));
  EXPECT_EQ(j["strategies"][2]["cut"], "join");
}

TEST(ScenarioHead, BadHeadsNameFilePathAndExpectation) {
  EXPECT_EQ(error_of(R"({"name": "ralp", "head": ["a_fc"], "cut": "fc"})"),
            "t.json: /strategies/0/head is given together with \"cut\", expected one of them "
            "(\"cut\": the first head layer of the file's order, \"head\": layers that start the "
            "head)");
  EXPECT_EQ(error_of(R"({"name": "ralp", "head": []})"),
            "t.json: /strategies/0/head is an empty array, expected a non-empty array of layer names of "
            "branches (the head: them and every layer after them)");
  EXPECT_EQ(error_of(R"({"name": "ralp", "head": ["a_fc", "b_cnv1"]})"),
            "t.json: /strategies/0/head/1 is \"b_cnv1\", expected the name of a layer of "
            "branches (did you mean \"b_conv1\"?)");
  EXPECT_EQ(error_of(R"({"name": "ralp", "head": ["stem"]})"),
            "t.json: /strategies/0/head takes every layer of branches (with their "
            "descendants), expected layers that leave a tail before the head");
  EXPECT_NE(error_of(R"({"name": "ps", "head": ["a_fc"]})"), "no error");
}

// --cut A+B sets every ralp and hybrid strategy's head; a bad part names the option.
TEST(ScenarioHead, CutOptionTakesAPlusJoinedHead) {
  const std::string file = std::string(RALP_TEST_DATA_DIR) + "/data/scenarios/branches-head.json";
  const Scenario s = load_scenario(file, {{"cut", "a_fc+b_conv2"}});
  for (const StrategySpec& spec : s.strategies) {
    if (spec.kind == StrategyKind::ps) continue;
    EXPECT_EQ(spec.cut, "a_fc+b_conv2") << spec.label;
  }
  EXPECT_EQ(load_scenario(file, {{"cut", "fc"}}).strategies[1].cut, "fc");
  // --strategy finds a strategy by the label its head gives it.
  const std::string cluster =
      std::string(RALP_TEST_DATA_DIR) + "/data/scenarios/cluster-branches.json";
  for (const char* label : {"ralp@a_fc+", "hybrid@a_relu+b_conv2"}) {
    const Scenario one = load_scenario(cluster, {{"strategy", label}});
    ASSERT_EQ(one.strategies.size(), 1u);
    EXPECT_EQ(one.strategies[0].label, label);
  }
  try {
    load_scenario(file, {{"cut", "a_fc+nope"}});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--cut is \"nope\", expected the name of a layer of branches");
  }
}

}  // namespace
}  // namespace ralp
