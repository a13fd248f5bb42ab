// ps with token queues (tf_cnn_benchmarks' distributed_replicated): each server's gradient
// applied on its own, and every variable's barrier of W (W - 1) enqueues and W dequeues, counted
// by hand on two FC layers with biases (V = 4 variables).
#include <gtest/gtest.h>

#include <map>

#include "ralp/schedule/schedule.hpp"

namespace ralp::schedule {
namespace {

// input [1000] -> fc1 (1000 -> 10, bias) -> fc2 (10 -> 10, bias) -> softmax: four variables.
constexpr int64_t kVariables = 4;

Scenario scenario(const std::string& strategy, int workers, int parameter_servers,
                  const std::string& cluster_extra = "") {
  const std::string text = R"({"name": "t", "model": {"name": "fc2", "input": [1000, 1, 1],
      "layers": [{"name": "fc1", "type": "fc", "out_features": 10},
                 {"name": "fc2", "type": "fc", "out_features": 10},
                 {"name": "loss", "type": "softmax_cross_entropy"}]},
      "batch_per_worker": 8, "cluster": {"workers": )" +
                           std::to_string(workers) + R"(, "parameter_servers": )" +
                           std::to_string(parameter_servers) + cluster_extra + R"(,
      "worker_device": "v100",
      "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
      "strategies": [)" + strategy + R"(], "pcie_copies": false})";
  return parse_scenario(parse_json_text(text, "t.json"), "t.json", ".");
}

Schedule schedule_of(const Scenario& s) {
  return build_schedule(make_step_plan(s, s.strategies[0], std::nullopt), s.parameter_servers);
}

struct Count {
  int64_t messages = 0;
  int64_t wire_bytes = 0;
};
std::map<MessageKind, Count> sends_by_kind(const Schedule& s) {
  std::map<MessageKind, Count> out;
  for (const RoleSchedule& role : s.roles) {
    for (const Message& m : sends_of(role)) {
      out[m.kind].messages += 1;
      out[m.kind].wire_bytes += m.wire_bytes();
    }
  }
  return out;
}

int64_t count_ops(const Schedule& s, OpKind kind) {
  int64_t n = 0;
  for (const RoleSchedule& role : s.roles) {
    for (const Op& op : role.ops) n += op.kind == kind ? 1 : 0;
  }
  return n;
}

TEST(TokenQueues, BarrierMessagesFollowTheClosedForm) {
  for (const int servers : {1, 2, 3, 5}) {
    for (const int shards : {1, 2}) {
      const Schedule s = schedule_of(
          scenario(R"({"name": "ps", "sync": "token_queues"})", servers, shards));
      const auto sent = sends_by_kind(s);
      const int64_t w = servers;
      // W (W - 1) enqueues of a 1-byte token per variable, each with its 24-byte header.
      const int64_t enqueues = kVariables * w * (w - 1);
      EXPECT_EQ(sent.contains(MessageKind::enqueue) ? sent.at(MessageKind::enqueue).messages : 0,
                enqueues);
      if (enqueues > 0) {
        EXPECT_EQ(sent.at(MessageKind::enqueue).wire_bytes,
                  enqueues * (kTokenBytes + kHeaderBytes));
      }
      // W dequeues per variable, each of the W - 1 other servers' tokens.
      EXPECT_EQ(sent.at(MessageKind::dequeue).messages, kVariables * w);
      EXPECT_EQ(sent.at(MessageKind::dequeue).wire_bytes,
                kVariables * w * ((w - 1) * kTokenBytes + kHeaderBytes));
      // Every receive has its send: the same count of each kind is posted.
      int64_t received = 0;
      for (const RoleSchedule& role : s.roles) {
        for (const Op& op : role.ops) {
          received += op.kind == OpKind::receive && op.message.kind == MessageKind::enqueue;
        }
      }
      EXPECT_EQ(received, enqueues);
      // One group per layer on one shard; on two, round robin puts each layer's weight and bias
      // on different shards: four groups. Each is applied once per server and never summed.
      const int64_t groups = shards == 1 ? 2 : 4;
      EXPECT_EQ(static_cast<int64_t>(s.groups.size()), groups);
      EXPECT_EQ(count_ops(s, OpKind::update), groups * w);
      EXPECT_EQ(count_ops(s, OpKind::aggregate), 0);
      EXPECT_EQ(s.parts_per_step, groups);
    }
  }
}

TEST(TokenQueues, ServersAreTheNodesLeadersWithLocalAggregation) {
  // 8 devices on 2 nodes of 4: two servers, so per variable 2 enqueues and 2 dequeues.
  const Schedule s = schedule_of(
      scenario(R"({"name": "ps", "sync": "token_queues", "local_aggregation": true})", 8, 2,
               R"(, "devices_per_node": 4)"));
  const auto sent = sends_by_kind(s);
  EXPECT_EQ(sent.at(MessageKind::enqueue).messages, kVariables * 2);
  EXPECT_EQ(sent.at(MessageKind::dequeue).messages, kVariables * 2);
  // Only the leaders (worker-0, worker-4: hosts 2 and 6) enqueue.
  for (const RoleSchedule& role : s.roles) {
    int64_t enqueues = 0;
    for (const Message& m : sends_of(role)) enqueues += m.kind == MessageKind::enqueue;
    EXPECT_EQ(enqueues, role.host == 2 || role.host == 6 ? kVariables : 0) << role.name;
  }
}

TEST(TokenQueues, DequeueWaitsForEveryUpdateAndTheOthersTokens) {
  const Schedule s = schedule_of(scenario(R"({"name": "ps", "sync": "token_queues"})", 3, 1));
  const RoleSchedule& ps = s.roles[0];
  for (const Op& op : ps.ops) {
    if (op.kind != OpKind::send || op.message.kind != MessageKind::dequeue) continue;
    int64_t updates = 0;
    int64_t tokens = 0;
    for (const uint32_t a : ps.after_of(op)) {
      const Op& before = ps.ops[a];
      updates += before.kind == OpKind::update;
      if (before.kind == OpKind::receive && before.message.kind == MessageKind::enqueue) {
        ++tokens;
        EXPECT_NE(before.message.peer, op.message.peer);  // never its own server's tokens
        EXPECT_EQ(before.message.item, op.message.item);  // the same variable's
      }
    }
    EXPECT_EQ(updates, 1);  // the group's last update (the device runs them in order)
    EXPECT_EQ(tokens, 2);   // the last token of each of the two other servers
  }
}

TEST(TokenQueues, OffByDefaultAndOnlyForPs) {
  const Schedule plain = schedule_of(scenario(R"("ps")", 3, 1));
  EXPECT_FALSE(sends_by_kind(plain).contains(MessageKind::dequeue));
  EXPECT_EQ(count_ops(plain, OpKind::aggregate), 2 * 3);
  try {
    scenario(R"({"name": "allreduce", "sync": "token_queues"})", 3, 0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "t.json: /strategies/0/sync is given for allreduce, expected it only with ps");
  }
  try {
    scenario(R"({"name": "ps", "sync": "barrier"})", 3, 1);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/strategies/0/sync"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ralp::schedule
