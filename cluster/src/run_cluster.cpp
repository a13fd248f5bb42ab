// The run: roles, clock synchronisation, backend, then each strategy in turn (start handshake,
// the role's loop, gathering every rank's record and final parameters on rank 0).
#include "ralp/cluster/run_cluster.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "ralp/spec/nodes.hpp"
#include "ralp/spec/strategy_head.hpp"
#include "role_actions.hpp"
#include "step_executor.hpp"

namespace ralp::cluster {
namespace {

std::optional<StrategyKind> kind_from_name(const std::string& name) {
  for (const auto kind :
       {StrategyKind::ps, StrategyKind::ralp, StrategyKind::allreduce, StrategyKind::hybrid}) {
    if (name == to_string(kind)) return kind;
  }
  return std::nullopt;
}

kernels::DeviceChoice device_choice(ClusterDevice device) {
  switch (device) {
    case ClusterDevice::cpu:
      return kernels::DeviceChoice::cpu;
    case ClusterDevice::cuda:
      return kernels::DeviceChoice::cuda;
    case ClusterDevice::automatic:
      break;
  }
  return kernels::DeviceChoice::automatic;
}

// Every rank tells rank 0 it is ready; rank 0 answers when all are. `patience` bounds the wait:
// a rank may arrive only after a long strategy ended.
void start_together(Transport& t, double patience) {
  const int ranks = t.roles().ranks();
  std::vector<Transport::Handle> messages;
  if (t.rank() == 0) {
    for (int r = 1; r < ranks; ++r) messages.push_back(t.receive(r, MessageKind::start, -1, {}));
    t.wait_all(messages, patience);
    for (int r = 1; r < ranks; ++r) messages.push_back(t.send(r, MessageKind::begin, -1, 0, {}));
    t.wait_all(messages);
    return;
  }
  const auto go = t.receive(0, MessageKind::begin, -1, {});
  t.wait(t.send(0, MessageKind::start, -1, 0, {}), patience);
  t.wait(go, patience);
}

// Sends a byte string to rank 0 (its size, then the bytes); rank 0 receives one from `rank`.
// Rank 0 may still be busy with the strategy (the head PS): sends wait as long as receives.
void send_bytes(Transport& t, std::string& bytes, double patience) {
  int64_t size = static_cast<int64_t>(bytes.size());
  t.wait(t.send(0, MessageKind::results, -1, 0, {{&size, sizeof size}}), patience);
  t.wait(t.send(0, MessageKind::results, -1, 1, {{bytes.data(), bytes.size()}}), patience);
}

std::string receive_bytes(Transport& t, int rank, double patience) {
  int64_t size = 0;
  t.wait(t.receive(rank, MessageKind::results, -1, {{&size, sizeof size}}), patience);
  std::string bytes(static_cast<size_t>(size), '\0');
  t.wait(t.receive(rank, MessageKind::results, -1, {{bytes.data(), bytes.size()}}), patience);
  return bytes;
}

// Which rank holds each dumped parameter at the end of a strategy.
int owner_of(const StrategyContext& ctx, const ParameterEntry& e) {
  const Roles& roles = ctx.roles();
  if (e.layer >= ctx.tail_end) return roles.ps_rank(0);  // the head
  if (!ctx.uses_shards()) return roles.worker_rank(0);   // all-reduced on the workers
  for (const Variable& v : ctx.shards.variables) {
    if (v.layer == e.layer && v.bias == e.bias) return roles.ps_rank(v.shard);
  }
  throw std::logic_error("no shard holds a parameter of layer " + std::to_string(e.layer));
}

// Written in the file model's order (`model`), whatever order the strategy ran the model in.
void gather_parameters(StrategyContext& ctx, FinalParameters& mine, const LayerGraph& model,
                       const std::string& file, double patience) {
  Transport& t = ctx.transport;
  if (t.rank() != 0) {
    std::vector<Transport::Handle> sends;
    for (auto& [index, values] : mine) {
      sends.push_back(t.send(0, MessageKind::results, -1, static_cast<int64_t>(index),
                             {{values.data(), values.size() * sizeof(float)}}));
    }
    t.wait_all(sends, patience);
    return;
  }
  const auto layout = dump_layout(ctx.scenario.model);
  std::vector<std::vector<float>> values(layout.size());
  std::vector<Transport::Handle> receives;
  for (size_t i = 0; i < layout.size(); ++i) {
    values[i].resize(static_cast<size_t>(layout[i].elements));
    const int owner = owner_of(ctx, layout[i]);
    if (owner != 0) {
      receives.push_back(t.receive(owner, MessageKind::results, -1,
                                   {{values[i].data(), values[i].size() * sizeof(float)}}));
    }
  }
  for (auto& [index, v] : mine) values[index] = std::move(v);
  t.wait_all(receives, patience);
  std::map<std::pair<std::string, bool>, size_t> index_of;
  for (size_t i = 0; i < layout.size(); ++i) {
    index_of[{ctx.scenario.model.layer(layout[i].layer).name(), layout[i].bias}] = i;
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  for (const ParameterEntry& e : dump_layout(model)) {
    const auto& v = values.at(index_of.at({model.layer(e.layer).name(), e.bias}));
    out.write(reinterpret_cast<const char*>(v.data()),
              static_cast<std::streamsize>(v.size() * sizeof(float)));
  }
  if (!out) throw std::runtime_error("cannot write " + file);
}

}  // namespace

std::vector<PlannedStrategy> plan_strategies(const Scenario& scenario,
                                             const ClusterOptions& options,
                                             const CutResolver& resolve_auto) {
  if (scenario.compression.kind != CompressionKind::none) {
    throw InputError(scenario.file, "/compression",
                     "is set, and the real cluster moves uncompressed float32 gradients: remove "
                     "it to run this scenario with ralp cluster (the simulator models it)");
  }
  std::vector<StrategySpec> specs = scenario.strategies;
  if (options.strategy) {
    const std::string& wanted = *options.strategy;
    const auto by = [&](auto matches) { return std::find_if(specs.begin(), specs.end(), matches); };
    auto it = by([&](const StrategySpec& s) { return s.label == wanted; });
    if (it == specs.end())
      it = by([&](const StrategySpec& s) { return to_string(s.kind) == wanted; });
    if (it != specs.end()) {
      specs = {*it};
    } else if (const auto kind = kind_from_name(wanted)) {
      StrategySpec spec;
      spec.kind = *kind;
      spec.label = wanted;
      specs = {spec};
    } else {
      std::string labels;
      for (const auto& s : scenario.strategies) labels += (labels.empty() ? "" : ", ") + s.label;
      throw InputError("--strategy", "",
                       "'" + wanted + "' is neither a strategy of " + scenario.file + " (" +
                           labels + ") nor a kind (ps, ralp, allreduce, hybrid)");
    }
  }
  const LayerGraph& graph = scenario.model;
  std::vector<PlannedStrategy> out;
  for (const StrategySpec& spec : specs) {
    if (scenario.parameter_servers == 0 && spec.kind != StrategyKind::allreduce) {
      throw InputError("--strategy", "",
                       "'" + spec.label + "' needs a parameter server, and " + scenario.file +
                           " has none (parameter_servers is 0)");
    }
    PlannedStrategy planned{spec, std::nullopt};
    if (spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid) {
      const std::optional<std::string> name = options.cut ? options.cut : spec.cut;
      if (name) {
        const auto id = graph.find(*name);
        if (name->find('+') == std::string::npos && (!id || *id == 0)) {
          throw InputError("--cut", "",
                           "'" + *name + "' is not a layer of " + graph.name() +
                               " after its first (a head needs a tail before it)");
        }
        try {
          planned.cut = parse_head(graph, *name);
        } catch (const std::invalid_argument& e) {
          throw InputError("--cut", "",
                           std::string(e.what()) + "; expected layers joined with '+' (the "
                                                   "head: them and their descendants)");
        }
      } else if (resolve_auto) {
        planned.cut = resolve_auto(spec);
      } else {
        throw InputError(scenario.file, "",
                         "strategy '" + spec.label + "' has cut \"auto\", which the simulator "
                         "resolves, and this build has none: pass --cut LAYER");
      }
    }
    out.push_back(planned);
  }
  return out;
}

void check_precision(const Scenario& scenario, ClusterDevice device) {
  if (scenario.precision == Precision::fp32) return;
  try {
    (void)kernels::select_backend({device_choice(device), 1, scenario.precision});
  } catch (const std::invalid_argument& e) {
    throw InputError(scenario.file, "/precision",
                     "is \"" + std::string(to_string(scenario.precision)) +
                         "\", but this machine's kernels cannot compute in it: " + e.what());
  }
}

void check_world_size(const Scenario& scenario, int ranks) {
  const int64_t needed = scenario.parameter_servers + scenario.workers;
  if (ranks == needed) return;
  const auto count = [](int64_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  throw InputError(scenario.file, "/cluster",
                   "has " + count(scenario.parameter_servers, "parameter server") + " and " +
                       count(scenario.workers, "worker") + ", so it needs " +
                       std::to_string(needed) + " MPI ranks, but mpirun started " +
                       std::to_string(ranks) + " (use mpirun -np " + std::to_string(needed) + ")");
}

namespace {

// This rank's part of a run, the same for every strategy.
struct RankRun {
  const Scenario& scenario;
  const ClusterOptions& options;
  const Roles& roles;
  const Role& role;
  Transport& transport;
  kernels::Backend& backend;
  const FaultInjector& faults;
  MPI_Comm workers_comm;  // the workers only (MPI_Allreduce option), else null
  int64_t warmup = 0;
  int64_t steps = 0;      // warm-up included
  // Waits that may span a whole strategy run (idle ranks, gathering) allow a timeout per step.
  double patience = 0.0;
};

// Rank 0 receives every other rank's record of the strategy and summarises them all into its
// result; the other ranks send theirs and get nullopt.
std::optional<MeasuredResult> gather_result(const RankRun& r, const PlannedStrategy& planned,
                                            const StrategyContext& ctx) {
  Transport& transport = r.transport;
  const Scenario& scenario = r.scenario;
  if (transport.rank() != 0) {
    std::string bytes = to_json(ctx.record).dump();
    send_bytes(transport, bytes, r.patience);
    return std::nullopt;
  }
  std::vector<RankRecord> records = {ctx.record};
  for (int rank = 1; rank < r.roles.ranks(); ++rank) {
    records.push_back(
        rank_record_from_json(Json::parse(receive_bytes(transport, rank, r.patience))));
  }
  MeasuredResult result =
      summarise(records, scenario.parameter_servers, r.warmup, scenario.batch_per_worker);
  add_node_traffic(result, records, node_layout(scenario), r.warmup);
  result.label = planned.spec.label;
  result.kind = planned.spec.kind;
  if (planned.cut) {
    result.cut = head_name(scenario.model, *planned.cut);
    result.head_layers = head_layer_names(scenario.model, *planned.cut);
  }
  if (ctx.uses_ring()) {
    result.ring =
        r.options.allreduce == AllreduceImplementation::ring ? "message" : "mpi_allreduce";
  }
  if (ctx.uses_shards() && scenario.parameter_servers > 1) {
    result.shards = shard_shares(ctx.shards, ctx.scenario.model, scenario.parameter_servers);
  }
  if (!r.options.keep_messages) result.messages.clear();
  if (!r.options.keep_timeline) result.timeline.clear();
  result.backend = r.backend.device_name();
  result.threads = r.backend.threads();
  return result;
}

// Runs one strategy on this rank, from the start handshake to gathering the records and the
// final parameters; rank 0 adds the strategy's result to `run`.
void run_strategy(const RankRun& r, const PlannedStrategy& planned, MeasuredRun& run) {
  const Scenario& scenario = r.scenario;
  const StrategySpec& spec = planned.spec;
  start_together(r.transport, r.patience);

  // The model in the head's order, as the simulator runs it.
  const std::optional<Scenario> reordered =
      planned.cut && !planned.cut->is_suffix()
          ? std::optional<Scenario>(scenario_for_head(scenario, *planned.cut))
          : std::nullopt;
  const Scenario& headed = reordered ? *reordered : scenario;
  const std::optional<LayerId> cut =
      planned.cut ? std::optional<LayerId>(planned.cut->cut()) : std::nullopt;
  r.transport.begin_strategy(r.steps);
  StrategyContext ctx{headed,
                      spec,
                      cut,
                      cut.value_or(scenario.model.size()),
                      r.steps,
                      r.transport,
                      r.backend,
                      r.faults,
                      {static_cast<float>(scenario.training.learning_rate),
                       static_cast<float>(scenario.training.momentum), 0.0F},
                      r.options.allreduce,
                      r.options.compute_yields,
                      r.workers_comm,
                      {},
                      {}};
  const schedule::StepPlan step_plan = schedule::make_step_plan(headed, spec, cut);
  // The schedule's shard plan, so that a balanced assignment is the one the simulator runs.
  if (ctx.uses_shards()) ctx.shards = step_plan.shard_plan;
  const schedule::Schedule steps_schedule =
      schedule::build_schedule(step_plan, scenario.parameter_servers);
  ctx.record.name = r.role.name();
  ctx.record.part_done.assign(static_cast<size_t>(r.steps), std::nullopt);
  ctx.record.start = r.transport.now_reference();
  const std::unique_ptr<RankActions> actions = make_rank_actions(ctx, steps_schedule);
  StepExecutor(ctx, steps_schedule, *actions).run();
  FinalParameters final_parameters = actions->final_parameters();
  ctx.record.bytes_in = r.transport.bytes_in();
  ctx.record.bytes_out = r.transport.bytes_out();
  ctx.record.bytes_to = r.transport.bytes_to();

  if (auto result = gather_result(r, planned, ctx)) run.results.push_back(std::move(*result));
  const std::string& dump = r.options.dump_parameters;
  if (!dump.empty()) {
    if (r.transport.rank() == 0) std::filesystem::create_directories(dump);
    const std::string file = (std::filesystem::path(dump) / (spec.label + ".params")).string();
    gather_parameters(ctx, final_parameters, scenario.model, file, r.patience);
  }
}

}  // namespace

std::optional<MeasuredRun> run_cluster(MpiSession& session, const Scenario& scenario,
                                       const std::vector<PlannedStrategy>& strategies,
                                       const ClusterOptions& options) {
  const Roles roles(scenario.parameter_servers, scenario.workers);
  const int rank = session.rank();
  try {
    const Role role = roles.of(rank);
    const double timeout = options.step_timeout.value_or(scenario.training.step_timeout).value();
    Transport transport(roles, timeout);
    transport.synchronise_clocks();
    FaultInjector faults(options.fault, rank, role.name());

    kernels::BackendSelection selection =
        kernels::select_backend({device_choice(options.device), scenario.training.threads,
                                 scenario.precision});
    kernels::Backend& backend = *selection.backend;
    const bool talk = rank == 0 && static_cast<bool>(options.progress);
    if (talk && !selection.note.empty()) options.progress(selection.note);

    MPI_Comm workers_comm = MPI_COMM_NULL;
    if (options.allreduce == AllreduceImplementation::mpi) {
      MPI_Comm_split(transport.comm(), role.is_worker() ? 0 : MPI_UNDEFINED, rank, &workers_comm);
    }

    MeasuredRun run;
    run.scenario = scenario.name;
    run.file = scenario.file;
    run.model = scenario.model.name();
    run.workers = scenario.workers;
    run.parameter_servers = scenario.parameter_servers;
    run.batch_per_worker = scenario.batch_per_worker;

    const int64_t warmup = scenario.warmup_steps;
    const int64_t steps = warmup + options.steps.value_or(scenario.steps);
    const RankRun r{scenario, options, roles, role, transport, backend, faults, workers_comm,
                    warmup, steps, timeout * static_cast<double>(steps + 2)};
    for (size_t n = 0; n < strategies.size(); ++n) {
      const StrategySpec& spec = strategies[n].spec;
      faults.set_strategy(spec.label);
      if (talk) {
        options.progress("ralp cluster: " + spec.label + " (" + std::to_string(n + 1) + " of " +
                         std::to_string(strategies.size()) + "): " + std::to_string(steps) +
                         " steps (" + std::to_string(warmup) + " warm-up) on " +
                         std::to_string(roles.ranks()) + " ranks");
      }
      run_strategy(r, strategies[n], run);
      if (talk) {
        const MeasuredResult& m = run.results.back();
        char line[256];
        std::snprintf(line, sizeof line,
                      "ralp cluster: %s: median step %.4f s (spread %.4f s), loss %.4f -> %.4f",
                      m.label.c_str(), m.step_time_median_s, m.step_time_spread_s, m.loss.front(),
                      m.loss.back());
        options.progress(line);
      }
    }
    if (workers_comm != MPI_COMM_NULL) MPI_Comm_free(&workers_comm);
    if (rank != 0) return std::nullopt;
    return run;
  } catch (const ClusterFailure&) {
    throw;
  } catch (const std::exception& e) {
    throw ClusterFailure(roles.describe(rank) + ": " + e.what());
  }
}

}  // namespace ralp::cluster
