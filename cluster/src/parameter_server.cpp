// A parameter-server rank's step: its shard's pulls, pushes and updates (ps, ralp), the head on
// ps-0 (ralp, hybrid), handled as messages arrive; then, with several shards, the step's end
// agreed through ps-0 so that no shard sends the next pulls before the whole step is complete.
#include <optional>

#include "head_server.hpp"
#include "parameter_shard.hpp"
#include "role_loops.hpp"

namespace ralp::cluster {
namespace {

// ps-0 hears from every other shard that its part is done, then tells them the step is complete.
void agree_step_end(StrategyContext& ctx, int64_t shard, int64_t step) {
  Transport& t = ctx.transport;
  const Roles& roles = ctx.roles();
  std::vector<Transport::Handle> messages;
  if (shard == 0) {
    for (int64_t s = 1; s < roles.parameter_servers(); ++s) {
      messages.push_back(t.receive(roles.ps_rank(s), MessageKind::step_done, step, {}));
    }
    t.wait_all(messages);
    for (int64_t s = 1; s < roles.parameter_servers(); ++s) {
      messages.push_back(t.send(roles.ps_rank(s), MessageKind::step_complete, step, step, {}));
    }
    t.wait_all(messages);
    return;
  }
  messages.push_back(t.receive(roles.ps_rank(0), MessageKind::step_complete, step, {}));
  t.wait(t.send(roles.ps_rank(0), MessageKind::step_done, step, step, {}));
  t.wait_all(messages);
}

}  // namespace

FinalParameters run_parameter_server(StrategyContext& ctx, int64_t shard_index) {
  std::optional<ParameterShard> shard;
  if (ctx.uses_shards()) shard.emplace(ctx, shard_index);
  std::optional<HeadServer> head;
  if (ctx.has_head() && shard_index == 0) head.emplace(ctx);
  const bool in_step = ctx.uses_shards() || head.has_value();
  if (!in_step) return {};  // allreduce, and hybrid's shards other than ps-0: idle

  Transport& t = ctx.transport;
  for (int64_t k = 0; k < ctx.steps; ++k) {
    ctx.clock.start_step(k, monotonic_seconds());
    if (head) head->begin_step(k);
    if (shard) shard->begin_step(k);
    const auto finished = [&] {
      return (!shard || shard->finished()) && (!head || head->finished());
    };
    while (!finished()) {
      t.wait_until([&] { return (shard && shard->has_work()) || (head && head->has_work()); });
      if (head) head->advance();
      if (shard) shard->advance();
    }
    std::optional<double> done;
    if (shard && shard->has_groups()) done = shard->updated_at();
    if (head) done = std::max(done.value_or(head->updated_at()), head->updated_at());
    ctx.record.part_done[static_cast<size_t>(k)] = done;
    if (head) head->end_step();
    if (ctx.uses_shards() && ctx.roles().parameter_servers() > 1)
      agree_step_end(ctx, shard_index, k);
  }
  ctx.clock.stop(monotonic_seconds());

  FinalParameters out;
  const LayerGraph& graph = ctx.scenario.model;
  const auto layout = dump_layout(graph);
  for (size_t index = 0; index < layout.size(); ++index) {
    const ParameterEntry& e = layout[index];
    if (e.layer < ctx.tail_end) {
      if (!shard) continue;
      for (size_t v = 0; v < ctx.shards.variables.size(); ++v) {
        const Variable& var = ctx.shards.variables[v];
        if (var.layer == e.layer && var.bias == e.bias && var.shard == shard_index) {
          out.emplace_back(index, shard->values(v));
        }
      }
    } else if (head) {
      for (auto* p : head->network().parameters_of(e.layer)) {
        if (p->name.ends_with(".bias") == e.bias) {
          out.emplace_back(index, ctx.backend.download(*p->value));
        }
      }
    }
  }
  return out;
}

}  // namespace ralp::cluster
