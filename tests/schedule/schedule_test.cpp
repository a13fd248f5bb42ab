// The step schedule on cases small enough to list by hand: one FC layer of S bytes, two workers,
// each strategy's messages, their bytes, and what waits for what.
#include <gtest/gtest.h>

#include <algorithm>

#include "ralp/schedule/fusion.hpp"
#include "ralp/schedule/schedule.hpp"

namespace ralp::schedule {
namespace {

// input [1000] -> fc (1000 -> 10, no bias) -> softmax: S = 40,000 bytes of weights.
constexpr int64_t kWeightBytes = 1000 * 10 * 4;
constexpr int64_t kBatch = 8;

Scenario scenario(const std::string& strategies, int workers = 2, int parameter_servers = 1) {
  const std::string text = R"({"name": "t", "model": {"name": "fc", "input": [1000, 1, 1],
      "layers": [{"name": "fc", "type": "fc", "out_features": 10, "bias": false},
                 {"name": "loss", "type": "softmax_cross_entropy"}]},
      "batch_per_worker": 8, "cluster": {"workers": )" +
                           std::to_string(workers) + R"(, "parameter_servers": )" +
                           std::to_string(parameter_servers) + R"(, "worker_device": "v100",
      "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
      "strategies": )" + strategies + R"(, "pcie_copies": false})";
  return parse_scenario(parse_json_text(text, "t.json"), "t.json", ".");
}

Schedule schedule_of(const Scenario& s, std::optional<LayerId> cut = std::nullopt) {
  return build_schedule(make_step_plan(s, s.strategies[0], cut), s.parameter_servers);
}

std::vector<Message> receives_of(const RoleSchedule& role) {
  std::vector<Message> out;
  for (const Op& op : role.ops) {
    if (op.kind == OpKind::receive) out.push_back(op.message);
  }
  return out;
}

TEST(Schedule, PsPullsThenPushesOneMessagePerWorker) {
  const Schedule s = schedule_of(scenario(R"(["ps"])"));
  ASSERT_EQ(s.roles.size(), 3u);
  // ps-0 (host 0) sends each worker (hosts 1, 2) the layer's weights, and receives its gradient.
  EXPECT_EQ(sends_of(s.roles[0]), (std::vector<Message>{{MessageKind::pull, 1, 0, kWeightBytes},
                                                       {MessageKind::pull, 2, 0, kWeightBytes}}));
  EXPECT_EQ(receives_of(s.roles[0]),
            (std::vector<Message>{{MessageKind::push, 1, 0, kWeightBytes},
                                  {MessageKind::push, 2, 0, kWeightBytes}}));
  EXPECT_EQ(sends_of(s.roles[1]), (std::vector<Message>{{MessageKind::push, 0, 0, kWeightBytes}}));
  EXPECT_EQ(receives_of(s.roles[2]),
            (std::vector<Message>{{MessageKind::pull, 0, 0, kWeightBytes}}));
  // Two pulls and two pushes, each with its 24-byte header.
  const auto bytes = bytes_per_host(s);
  EXPECT_EQ(bytes[0], (HostBytes{2 * (kWeightBytes + kHeaderBytes), 2 * (kWeightBytes + kHeaderBytes)}));
  EXPECT_EQ(bytes[1], (HostBytes{kWeightBytes + kHeaderBytes, kWeightBytes + kHeaderBytes}));
  // One update of the one variable group ends the step.
  EXPECT_EQ(s.parts_per_step, 1);
}

TEST(Schedule, RingEstimateTakesTheTransportsSlowerHop) {
  // 4 workers all-reduce 4,000 bytes: 2 x 3 hops of a 1,000-byte chunk. The fusion cycles plan
  // with this estimate, so that a transport's costs fuse more, as Horovod's cycles do.
  const Scenario sc = scenario(R"(["allreduce"])", 4, 0);
  StepPlan plan = make_step_plan(sc, sc.strategies[0], std::nullopt);
  const double latency = plan.ring_hop_latency.value();
  const double bandwidth = plan.ring_bandwidth.value();
  EXPECT_DOUBLE_EQ(plan.ring_seconds(4000), 6 * (latency + 1000 / bandwidth));
  // A member's CPU sends a message and receives one per hop: 2 x (1 ms + 1,000 x 1 us).
  plan.strategy.transport.message_s = 1e-3;
  plan.strategy.transport.s_per_byte = 1e-6;
  EXPECT_DOUBLE_EQ(plan.ring_seconds(4000), 6 * 2 * (1e-3 + 1000 * 1e-6));
  // Half the link between nodes; inside one node of 4 devices the share does not apply.
  plan.strategy.transport = ideal_transport();
  plan.strategy.transport.link_share = 0.5;
  EXPECT_DOUBLE_EQ(plan.ring_seconds(4000), 6 * (latency + 1000 / (0.5 * bandwidth)));
  plan.devices_per_node = 4;
  EXPECT_DOUBLE_EQ(plan.ring_seconds(4000), 6 * (latency + 1000 / bandwidth));
}

TEST(Schedule, PsUpdatesOnlyAfterEverySumAndPull) {
  const Schedule s = schedule_of(scenario(R"(["ps"])"));
  const RoleSchedule& ps = s.roles[0];
  std::vector<size_t> aggregates, pulls;
  size_t update = 0;
  for (size_t i = 0; i < ps.ops.size(); ++i) {
    if (ps.ops[i].kind == OpKind::aggregate) aggregates.push_back(i);
    if (ps.ops[i].kind == OpKind::send) pulls.push_back(i);
    if (ps.ops[i].kind == OpKind::update) update = i;
  }
  ASSERT_EQ(aggregates.size(), 2u);
  // Sums in worker order, then the update, which waits for both pulls to have left.
  EXPECT_EQ(ps.ops[aggregates[0]].worker, 0);
  EXPECT_EQ(ps.ops[aggregates[1]].worker, 1);
  EXPECT_GT(update, aggregates[1]);
  const auto after = ps.after_of(ps.ops[update]);
  EXPECT_EQ(std::vector<uint32_t>(after.begin(), after.end()),
            (std::vector<uint32_t>{static_cast<uint32_t>(pulls[0]), static_cast<uint32_t>(pulls[1])}));
  EXPECT_TRUE(ps.ops[update].ends_part);
}

TEST(Schedule, RalpSendsActivationsAndReturnsOnlyNeededGradients) {
  // Cut at the loss: the head is the softmax; each worker sends B x 10 activations and B labels
  // and gets B x 10 gradients back; no weight crosses the network.
  const Scenario sc = scenario(R"([{"name": "ralp", "cut": "loss"}])");
  const Schedule s = schedule_of(sc, 1);
  const int64_t activations = kBatch * 10 * 4;
  const int64_t labels = kBatch * 4;
  // The fc layer stays on the workers, its weights on the shard.
  EXPECT_EQ(sends_of(s.roles[1]),
            (std::vector<Message>{{MessageKind::activations, 0, 0, activations + labels},
                                  {MessageKind::push, 0, 0, kWeightBytes}}));
  EXPECT_EQ(sends_of(s.roles[0]),
            (std::vector<Message>{{MessageKind::pull, 1, 0, kWeightBytes},
                                  {MessageKind::pull, 2, 0, kWeightBytes},
                                  {MessageKind::activation_gradient, 1, 0, activations},
                                  {MessageKind::activation_gradient, 2, 1, activations}}));
  // Parts: the head's update and the fc group's.
  EXPECT_EQ(s.parts_per_step, 2);
}

TEST(Schedule, HeadPassesAfterTheFirstAddTheirWeightGradients) {
  // input [1000] -> fc1 (1000 -> 10) -> fc2 (10 -> 10) -> softmax, cut at fc2: the head holds
  // fc2's 100 weights. Worker-0's pass writes their gradients; worker-1's pass computes its own
  // and adds them in, one gradient sum of the head's 400 bytes more.
  const std::string text = R"({"name": "t", "model": {"name": "fc2", "input": [1000, 1, 1],
      "layers": [{"name": "fc1", "type": "fc", "out_features": 10, "bias": false},
                 {"name": "fc2", "type": "fc", "out_features": 10, "bias": false},
                 {"name": "loss", "type": "softmax_cross_entropy"}]},
      "batch_per_worker": 8, "cluster": {"workers": 2, "parameter_servers": 1,
      "worker_device": "v100", "platform": {"kind": "star", "nic_bandwidth": "1Gbps",
      "latency": "50us"}}, "strategies": [{"name": "ralp", "cut": "fc2"}], "pcie_copies": false})";
  const Scenario sc = parse_scenario(parse_json_text(text, "t.json"), "t.json", ".");
  const StepPlan plan = make_step_plan(sc, sc.strategies[0], 1);
  ASSERT_EQ(plan.head_param_bytes, 400);
  const double sum = 400.0 / plan.ps_sum_rate.value();
  EXPECT_DOUBLE_EQ(plan.head_pass_seconds(0), plan.head_micro_batch.value());
  EXPECT_DOUBLE_EQ(plan.head_pass_seconds(1), plan.head_micro_batch.value() + sum);

  const Schedule s = build_schedule(plan, sc.parameter_servers);
  std::vector<double> passes(2, -1.0);
  for (const Op& op : s.roles[0].ops) {
    if (op.kind == OpKind::compute && op.pass == Pass::head) {
      passes.at(static_cast<size_t>(op.worker)) = op.seconds;
    }
  }
  EXPECT_DOUBLE_EQ(passes[0], plan.head_micro_batch.value());
  EXPECT_DOUBLE_EQ(passes[1], plan.head_micro_batch.value() + sum);
}

TEST(Schedule, AllreduceNegotiatesThenRings) {
  // ps-0 (host 0) idles; the workers are hosts 1 and 2.
  const Schedule s = schedule_of(scenario(R"(["allreduce"])"));
  ASSERT_EQ(s.roles.size(), 3u);
  EXPECT_TRUE(s.roles[0].ops.empty());
  ASSERT_EQ(s.buffers.size(), 1u);
  EXPECT_EQ(s.buffers[0].bytes, kWeightBytes);
  // worker-1 tells the coordinator the buffer is ready; worker-0 says go.
  EXPECT_EQ(sends_of(s.roles[2]), (std::vector<Message>{{MessageKind::ready, 1, 0, 0}}));
  EXPECT_EQ(sends_of(s.roles[1]), (std::vector<Message>{{MessageKind::go, 2, 0, 0}}));
  // Two phases of half the buffer each: reduce-scatter, then allgather.
  EXPECT_EQ(ring_messages(s, 0, 0), (std::vector<Message>{{MessageKind::ring, 2, 0, kWeightBytes / 2},
                                                          {MessageKind::ring, 2, 1, kWeightBytes / 2}}));
  const auto bytes = bytes_per_host(s);
  EXPECT_EQ(bytes[0], (HostBytes{0, 0}));
  EXPECT_EQ(bytes[1].out, kHeaderBytes + 2 * (kWeightBytes / 2 + kHeaderBytes));
  EXPECT_EQ(bytes[1].in, kHeaderBytes + 2 * (kWeightBytes / 2 + kHeaderBytes));
  // Each worker's update ends its part.
  EXPECT_EQ(s.parts_per_step, 2);
}

TEST(Schedule, RingTotalsAddUpTheRingsMessages) {
  // 10,000 elements cut into even chunks, an uneven last one (3, 7 and 4,096 members), or empty
  // ones past the end (4,096 members: 3,333 chunks of 3, one of 1, 762 empty); each
  // compression's size of an empty chunk differs.
  for (const char* compression : {R"({"kind": "none"})", R"({"kind": "fp16"})", R"({"kind": "int8"})",
                                  R"({"kind": "topk", "ratio": 0.01})"}) {
    for (const int workers : {2, 3, 7, 16, 4096}) {
      const std::string text = R"({"name": "t", "model": {"name": "fc", "input": [1000, 1, 1],
          "layers": [{"name": "fc", "type": "fc", "out_features": 10, "bias": false},
                     {"name": "loss", "type": "softmax_cross_entropy"}]},
          "batch_per_worker": 8, "cluster": {"workers": )" + std::to_string(workers) +
                               R"(, "parameter_servers": 0, "worker_device": "v100",
          "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
          "compression": )" + compression + R"(, "strategies": ["allreduce"]})";
      const Scenario sc = parse_scenario(parse_json_text(text, "t.json"), "t.json", ".");
      const Schedule s = schedule_of(sc);
      for (const int64_t member : {int64_t{0}, int64_t{1}, int64_t{workers - 1}}) {
        const auto sends = ring_messages(s, 0, member);
        const auto receives = ring_messages(s, 0, (member + workers - 1) % workers);
        RingTotals expected;
        expected.messages = static_cast<int64_t>(sends.size());
        for (const Message& m : sends) expected.wire_bytes += m.wire_bytes();
        for (int p = 0; p + 1 < workers; ++p) expected.reduced_bytes += receives[p].payload_bytes;
        for (const Message& m : sends) expected.sent_payloads += m.payload_bytes > 0 ? 1 : 0;
        for (const Message& m : receives) expected.received_payloads += m.payload_bytes > 0 ? 1 : 0;
        const RingTotals t = ring_totals(s, 0, member);
        EXPECT_EQ(t.messages, expected.messages) << compression << " " << workers << " " << member;
        EXPECT_EQ(t.wire_bytes, expected.wire_bytes) << compression << " " << workers << " " << member;
        EXPECT_EQ(t.reduced_bytes, expected.reduced_bytes)
            << compression << " " << workers << " " << member;
        EXPECT_EQ(t.sent_payloads, expected.sent_payloads)
            << compression << " " << workers << " " << member;
        EXPECT_EQ(t.received_payloads, expected.received_payloads)
            << compression << " " << workers << " " << member;
      }
    }
  }
}

TEST(Schedule, SeveralShardsAgreeOnTheStepsEnd) {
  // Two shards, one variable: shard 1 idles but still reports to ps-0, which answers.
  const Schedule s = schedule_of(scenario(R"(["ps"])", 2, 2));
  EXPECT_EQ(sends_of(s.roles[1]), (std::vector<Message>{{MessageKind::step_done, 0, 1, 0}}));
  const auto ps0 = sends_of(s.roles[0]);
  ASSERT_FALSE(ps0.empty());
  EXPECT_EQ(ps0.back(), (Message{MessageKind::step_complete, 1, 0, 0}));
}

TEST(Schedule, NeedsParameterServersWhereTheStrategyDoes) {
  const Scenario sc = scenario(R"(["allreduce"])");
  EXPECT_THROW(build_schedule(make_step_plan(sc, {StrategyKind::ps, "ps"}, std::nullopt), 0),
               std::invalid_argument);
}

// Every device operation of every host, with its label and a time of its own.
std::vector<DeviceOpTime> device_times(const Schedule& s, const LayerGraph& model) {
  std::vector<DeviceOpTime> out;
  for (const RoleSchedule& role : s.roles) {
    for (size_t i = 0; i < role.ops.size(); ++i) {
      if (role.ops[i].stream() != Stream::device) continue;
      out.push_back({role.name, static_cast<int32_t>(i), op_label(s, model, role.host, role.ops[i]),
                     0.001 * static_cast<double>(out.size() + 1)});
    }
  }
  return out;
}

TEST(Schedule, ReplayGivesEachDeviceOperationItsMeasuredTime) {
  const Scenario sc = scenario(R"(["ps"])");
  Schedule s = schedule_of(sc);
  const std::vector<DeviceOpTime> times = device_times(s, sc.model);
  // ps-0 sums two gradients and updates; each worker runs the layer forward and backward (and
  // the loss).
  ASSERT_GE(times.size(), 7u);
  EXPECT_EQ(replay_device_times(s, sc.model, times), std::nullopt);
  for (const DeviceOpTime& t : times) {
    const auto role = std::find_if(s.roles.begin(), s.roles.end(),
                                   [&](const RoleSchedule& r) { return r.name == t.host; });
    EXPECT_DOUBLE_EQ(role->ops[static_cast<size_t>(t.op)].seconds, t.seconds) << t.label;
  }
}

TEST(Schedule, ReplayRefusesTimesOfAnotherSchedule) {
  const Scenario sc = scenario(R"(["ps"])");
  const std::vector<DeviceOpTime> good = device_times(schedule_of(sc), sc.model);
  const auto mismatch = [&](std::vector<DeviceOpTime> times) {
    Schedule s = schedule_of(sc);
    return replay_device_times(s, sc.model, times);
  };
  auto times = good;
  times[2].label = "conv9";
  auto bad = mismatch(times);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->entry, 2u);
  EXPECT_NE(bad->problem.find("another schedule"), std::string::npos) << bad->problem;

  times = good;
  times[1].host = "worker-7";
  bad = mismatch(times);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->entry, 1u);
  EXPECT_NE(bad->problem.find("worker-7"), std::string::npos);

  times = good;
  times[0].op = 1000;
  EXPECT_EQ(mismatch(times)->entry, 0u);

  times = good;
  times.push_back(times.front());
  EXPECT_EQ(mismatch(times)->entry, good.size());  // the same operation twice

  times = good;
  times.pop_back();
  bad = mismatch(times);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->entry, times.size());  // one missing: the list as a whole
  EXPECT_NE(bad->problem.find("has no time for " + good.back().host), std::string::npos)
      << bad->problem;
}

TEST(Fusion, CyclesTakeWhatIsReadyAtTheirTick) {
  // Ready at 0, 1, 2.5 and 7 ms with a 2 ms cycle: ticks at 0 (tensor 0), 2 ms (tensor 1),
  // 4 ms (tensor 2), and, with nothing pending at 6 ms, 8 ms (tensor 3).
  const std::vector<int64_t> bytes = {10, 10, 10, 10};
  EXPECT_EQ(plan_fusion(bytes, {0.0, 1e-3, 2.5e-3, 7e-3}, 1e9, 2e-3, {}),
            (std::vector<std::vector<size_t>>{{0}, {1}, {2}, {3}}));
  // A 5 ms cycle: tick 0 takes tensor 0, tick 5 ms takes 1 and 2, tick 10 ms takes 3.
  EXPECT_EQ(plan_fusion(bytes, {0.0, 1e-3, 2.5e-3, 7e-3}, 1e9, 5e-3, {}),
            (std::vector<std::vector<size_t>>{{0}, {1, 2}, {3}}));
  // The threshold still splits one cycle's tensors.
  EXPECT_EQ(plan_fusion(bytes, {0.0, 0.0, 0.0, 0.0}, 25, 5e-3, {}),
            (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
  // A cycle's all-reduces hold the next one back: with each buffer taking 4 ms and a 2 ms cycle,
  // tick 0 takes tensor 0 and reduces it until 4 ms; the next cycle starts then and takes tensors
  // 1 and 2 (ready by 2.5 ms), reducing until 8 ms, when it takes tensor 3 (ready at 7 ms).
  EXPECT_EQ(plan_fusion(bytes, {0.0, 1e-3, 2.5e-3, 7e-3}, 1e9, 2e-3,
                        [](int64_t) { return 4e-3; }),
            (std::vector<std::vector<size_t>>{{0}, {1, 2}, {3}}));
  // No cycle: every distinct readiness is its own cycle.
  EXPECT_EQ(plan_fusion(bytes, {0.0, 0.0, 1.0, 2.0}, 1e9, 0.0, {}),
            (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3}}));
}

}  // namespace
}  // namespace ralp::schedule
