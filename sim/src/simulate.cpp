// Child processes for independent simulations, a small pool to run several at once, and the
// auto-cut search.
#include "ralp/sim/simulate.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "ralp/results/child_reply.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/schedule/step_plan.hpp"
#include "ralp/sim/step_model.hpp"
#include "ralp/spec/strategy_head.hpp"

namespace ralp::sim {
namespace {

struct Task {
  const StrategySpec* strategy = nullptr;
  std::optional<Head> cut;
  RunOptions run;
  const DeviceTimes* replay = nullptr;  // measured device times to play instead of the profile's
  const std::string* replay_file = nullptr;
};

// Gives the schedule's device operations the task's measured times, if it has any; times that do
// not fit the schedule are bad input in the replay file.
void replay(schedule::Schedule& steps, const LayerGraph& model, const Task& task) {
  if (task.replay == nullptr) return;
  const DeviceTimes& times = *task.replay;
  if (const auto bad = schedule::replay_device_times(steps, model, times.ops)) {
    throw InputError(*task.replay_file,
                     bad->entry == times.ops.size() ? times.path : json_path(times.path, bad->entry),
                     bad->problem);
  }
}

// A replayed operation lasts the CPU time it took in the run, which already holds what sharing
// its core with another rank cost it (the switches, each evicting the other's data): the
// profile's time-sharing slowdown is not applied on top.
Scenario as_replayed(Scenario scenario) {
  scenario.worker_device.time_sharing_slowdown = 1.0;
  scenario.ps_device.time_sharing_slowdown = 1.0;
  return scenario;
}

// What a child sends back: a result or the error it met. A head that is not a suffix runs the
// model in its order, and the result names it as the file's model does.
std::string run_child(const Scenario& file_scenario, const Task& task) {
  const Scenario scenario = task.replay != nullptr ? as_replayed(file_scenario) : file_scenario;
  return child_reply([&] {
    if (!task.cut || task.cut->is_suffix()) {
      const std::optional<LayerId> cut =
          task.cut ? std::optional<LayerId>(task.cut->cut()) : std::nullopt;
      const schedule::StepPlan plan = schedule::make_step_plan(scenario, *task.strategy, cut);
      schedule::Schedule steps = schedule::build_schedule(plan, scenario.parameter_servers);
      replay(steps, scenario.model, task);
      return to_json(run_step_model(scenario, steps, task.run), task.run.timeline);
    }
    const Scenario headed = scenario_for_head(scenario, *task.cut);
    const schedule::StepPlan plan =
        schedule::make_step_plan(headed, *task.strategy, task.cut->cut());
    schedule::Schedule steps = schedule::build_schedule(plan, headed.parameter_servers);
    replay(steps, headed.model, task);
    StrategyResult result = run_step_model(headed, steps, task.run);
    result.cut = head_name(scenario.model, *task.cut);
    result.head_layers = head_layer_names(scenario.model, *task.cut);
    return to_json(result, task.run.timeline);
  });
}

std::string describe(const Task& task, const Scenario& scenario) {
  std::string text = task.strategy->label;
  if (task.cut && !task.strategy->cut) text += " (cut " + head_name(scenario.model, *task.cut) + ")";
  return text;
}

StrategyResult parse_reply(const std::string& text, int status, const Task& task,
                           const Scenario& scenario) {
  return strategy_result_from_json(
      parse_child_reply(text, status, "simulating " + describe(task, scenario)));
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t task = 0;
  std::string output;
};

Child start_child(const Scenario& scenario, const Task& task, size_t index) {
  const ForkedChild c = fork_child([&] { return run_child(scenario, task); });
  return {c.pid, c.fd, index, {}};
}

// Runs the tasks, at most `jobs` at a time, reading every child's pipe as it fills.
std::vector<StrategyResult> run_tasks(const Scenario& scenario, const std::vector<Task>& tasks,
                                      int jobs, const SimulateOptions& options) {
  // Loaded once here rather than by every child.
  if (!tasks.empty()) load_simulator();
  std::vector<std::optional<std::pair<std::string, int>>> replies(tasks.size());
  std::vector<Child> running;
  size_t next = 0;
  size_t finished = 0;
  const auto started_at = std::chrono::steady_clock::now();
  try {
    while (finished < tasks.size()) {
      while (running.size() < static_cast<size_t>(jobs) && next < tasks.size()) {
        running.push_back(start_child(scenario, tasks[next], next));
        ++next;
      }
      std::vector<pollfd> polls;
      for (const auto& c : running) polls.push_back({c.fd, POLLIN, 0});
      if (poll(polls.data(), polls.size(), -1) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      }
      for (size_t i = running.size(); i-- > 0;) {
        if ((polls[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        Child& c = running[i];
        char buffer[1 << 16];
        const ssize_t n = read(c.fd, buffer, sizeof buffer);
        if (n > 0) {
          c.output.append(buffer, static_cast<size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        close(c.fd);
        int status = 0;
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        replies[c.task] = std::pair{std::move(c.output), status};
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        ++finished;
        if (options.progress && tasks.size() > 1) {
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                               started_at).count();
          const double eta = elapsed / static_cast<double>(finished) *
                             static_cast<double>(tasks.size() - finished);
          char line[160];
          std::snprintf(line, sizeof line, "simulated %zu/%zu (%s), %.0f s elapsed, about %.0f s left",
                        finished, tasks.size(), describe(tasks[c.task], scenario).c_str(),
                        elapsed, eta);
          options.progress(line);
        }
      }
    }
  } catch (...) {
    for (auto& c : running) {
      kill(c.pid, SIGKILL);
      close(c.fd);
      waitpid(c.pid, nullptr, 0);
    }
    throw;
  }
  std::vector<StrategyResult> results;
  for (size_t i = 0; i < tasks.size(); ++i) {
    results.push_back(parse_reply(replies[i]->first, replies[i]->second, tasks[i], scenario));
  }
  return results;
}

const char* network_model_name(const NetworkModelSpec& spec) {
  switch (spec.kind) {
    case NetworkModelKind::tcp:
      return "tcp";
    case NetworkModelKind::ideal:
      return "ideal";
    case NetworkModelKind::factors:
      return "factors";
  }
  return "unknown";
}

}  // namespace

StrategyResult simulate_isolated(const Scenario& scenario, const StrategySpec& strategy,
                                 std::optional<LayerId> cut, const RunOptions& run) {
  SimulateOptions options;
  std::optional<Head> head;
  if (cut) head = Head::suffix(scenario.model, *cut);
  return run_tasks(scenario, {Task{&strategy, head, run}}, 1, options).front();
}

std::vector<ResolvedStrategy> resolve_cuts(const Scenario& scenario,
                                           const SimulateOptions& options) {
  const int jobs = options.jobs > 0 ? options.jobs : default_jobs();
  std::vector<ResolvedStrategy> out;
  std::vector<Task> tasks;
  std::vector<std::pair<size_t, size_t>> spans;  // per searched strategy: its tasks
  for (const StrategySpec& spec : scenario.strategies) {
    ResolvedStrategy r{spec, std::nullopt, {}};
    const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
    if (has_cut && spec.cut) r.cut = strategy_head(scenario.model, spec);
    const size_t first = tasks.size();
    if (has_cut && !spec.cut) {
      for (const LayerId cut : scenario.model.cut_points()) {
        tasks.push_back({&spec, Head::suffix(scenario.model, cut), {}});
      }
    }
    spans.emplace_back(first, tasks.size());
    out.push_back(std::move(r));
  }
  if (tasks.empty()) return out;
  const std::vector<StrategyResult> raw = run_tasks(scenario, tasks, jobs, options);
  for (size_t s = 0; s < out.size(); ++s) {
    const auto [first, last] = spans[s];
    if (first == last) continue;
    size_t best = first;
    for (size_t i = first; i < last; ++i) {
      out[s].search.push_back({raw[i].cut.value_or(""), raw[i].step_time_mean_s});
      if (raw[i].step_time_mean_s < raw[best].step_time_mean_s) best = i;
    }
    out[s].cut = tasks[best].cut;
    out[s].searched_result = raw[best];
  }
  return out;
}

ScenarioResult simulate_scenario(const Scenario& scenario, const SimulateOptions& options) {
  return simulate_scenario(scenario, resolve_cuts(scenario, options), options);
}

ScenarioResult simulate_scenario(const Scenario& scenario, std::vector<ResolvedStrategy> resolved,
                                 const SimulateOptions& options) {
  const int jobs = options.jobs > 0 ? options.jobs : default_jobs();
  const RunOptions run{options.keep_timeline, options.keep_messages};
  // Searched strategies already have their result, unless a timeline or messages are wanted.
  std::vector<Task> tasks;
  std::vector<std::optional<size_t>> task_of(resolved.size());
  for (size_t s = 0; s < resolved.size(); ++s) {
    const auto replayed = options.replay.find(resolved[s].spec.label);
    const DeviceTimes* times = replayed == options.replay.end() ? nullptr : &replayed->second;
    if (resolved[s].searched_result && !run.timeline && !run.messages && times == nullptr) continue;
    task_of[s] = tasks.size();
    tasks.push_back({&resolved[s].spec, resolved[s].cut, run, times, &options.replay_file});
  }
  std::vector<StrategyResult> raw = run_tasks(scenario, tasks, jobs, options);

  ScenarioResult out;
  out.scenario = scenario.name;
  out.file = scenario.file;
  out.model = scenario.model.name();
  out.workers = scenario.workers;
  out.parameter_servers = scenario.parameter_servers;
  out.batch_per_worker = scenario.batch_per_worker;
  out.precision = scenario.precision;
  out.network_model = network_model_name(scenario.network_model);
  out.training = training_plan(scenario);
  for (size_t s = 0; s < resolved.size(); ++s) {
    StrategyResult chosen =
        task_of[s] ? std::move(raw[*task_of[s]]) : std::move(*resolved[s].searched_result);
    chosen.cut_search = std::move(resolved[s].search);
    const StrategySpec& spec = resolved[s].spec;
    if ((spec.kind == StrategyKind::ps || spec.kind == StrategyKind::ralp) &&
        scenario.parameter_servers > 1) {
      const std::optional<Head>& head = resolved[s].cut;
      const Scenario headed = head ? scenario_for_head(scenario, *head) : scenario;
      const schedule::StepPlan plan = schedule::make_step_plan(
          headed, spec, head ? std::optional<LayerId>(head->cut()) : std::nullopt);
      chosen.shards = shard_shares(plan.shard_plan, headed.model, scenario.parameter_servers);
    }
    out.results.push_back(std::move(chosen));
  }
  const StrategyResult* ps = nullptr;
  const StrategyResult* allreduce = nullptr;
  for (const auto& r : out.results) {
    if (r.kind == StrategyKind::ps && ps == nullptr) ps = &r;
    if (r.kind == StrategyKind::allreduce && allreduce == nullptr) allreduce = &r;
  }
  for (auto& r : out.results) {
    if (ps != nullptr) r.speedup_vs_ps = ps->step_time_mean_s / r.step_time_mean_s;
    if (allreduce != nullptr) {
      r.speedup_vs_allreduce = allreduce->step_time_mean_s / r.step_time_mean_s;
    }
  }
  return out;
}

}  // namespace ralp::sim
