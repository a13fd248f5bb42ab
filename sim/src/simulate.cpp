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

#include "ralp/sim/result_io.hpp"
#include "ralp/sim/step_model.hpp"

namespace ralp::sim {
namespace {

struct Task {
  const StrategySpec* strategy = nullptr;
  std::optional<LayerId> cut;
  bool keep_timeline = false;
};

// What a child sends back: a result or the error it met.
std::string run_child(const Scenario& scenario, const Task& task) {
  Json reply;
  try {
    const StepPlan plan = make_step_plan(scenario, *task.strategy, task.cut);
    reply = {{"result", to_json(run_step_model(scenario, plan), task.keep_timeline)}};
  } catch (const InputError& e) {
    reply = {{"input_error", {{"file", e.file()}, {"path", e.path()}, {"problem", e.problem()}}}};
  } catch (const std::exception& e) {
    reply = {{"failure", e.what()}};
  }
  return reply.dump();
}

std::string describe(const Task& task, const Scenario& scenario) {
  std::string text = task.strategy->label;
  if (task.cut && !task.strategy->cut) text += " (cut " + scenario.model.layer(*task.cut).name() + ")";
  return text;
}

StrategyResult parse_reply(const std::string& text, int status, const Task& task,
                           const Scenario& scenario) {
  const std::string what = "simulating " + describe(task, scenario);
  if (WIFSIGNALED(status)) {
    throw std::runtime_error(what + " failed: the simulator process died with signal " +
                             std::to_string(WTERMSIG(status)) + " (" +
                             strsignal(WTERMSIG(status)) + ")");
  }
  Json reply;
  try {
    reply = Json::parse(text);
  } catch (const Json::exception&) {
    throw std::runtime_error(what + " failed: the simulator process exited with status " +
                             std::to_string(WEXITSTATUS(status)) + " without a result");
  }
  if (reply.contains("input_error")) {
    const Json& e = reply["input_error"];
    throw InputError(e["file"].get<std::string>(), e["path"].get<std::string>(),
                     e["problem"].get<std::string>());
  }
  if (reply.contains("failure")) {
    throw std::runtime_error(what + " failed: " + reply["failure"].get<std::string>());
  }
  return strategy_result_from_json(reply.at("result"));
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t task = 0;
  std::string output;
};

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

Child start_child(const Scenario& scenario, const Task& task, size_t index) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    write_all(fds[1], run_child(scenario, task));
    close(fds[1]);
    // Skip destructors and atexit handlers: the parent owns every shared resource.
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0], index, {}};
}

// Runs the tasks, at most `jobs` at a time, reading every child's pipe as it fills.
std::vector<StrategyResult> run_tasks(const Scenario& scenario, const std::vector<Task>& tasks,
                                      int jobs, const SimulateOptions& options) {
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

int default_jobs() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
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
                                 std::optional<LayerId> cut, bool keep_timeline) {
  SimulateOptions options;
  return run_tasks(scenario, {Task{&strategy, cut, keep_timeline}}, 1, options).front();
}

ScenarioResult simulate_scenario(const Scenario& scenario, const SimulateOptions& options) {
  const int jobs = options.jobs > 0 ? options.jobs : default_jobs();
  std::vector<Task> tasks;
  struct Span {
    size_t first = 0;
    size_t last = 0;
    bool searched = false;  // cut "auto": one task per cut
  };
  std::vector<Span> spans;
  for (const auto& strategy : scenario.strategies) {
    const size_t first = tasks.size();
    const bool has_cut =
        strategy.kind == StrategyKind::ralp || strategy.kind == StrategyKind::hybrid;
    const bool searched = has_cut && !strategy.cut;
    if (searched) {
      for (const LayerId cut : scenario.model.cut_points()) {
        tasks.push_back({&strategy, cut, false});
      }
    } else if (has_cut) {
      tasks.push_back({&strategy, scenario.model.find(*strategy.cut), options.keep_timeline});
    } else {
      tasks.push_back({&strategy, std::nullopt, options.keep_timeline});
    }
    spans.push_back({first, tasks.size(), searched});
  }
  std::vector<StrategyResult> raw = run_tasks(scenario, tasks, jobs, options);

  ScenarioResult out;
  out.scenario = scenario.name;
  out.file = scenario.file;
  out.model = scenario.model.name();
  out.workers = scenario.workers;
  out.parameter_servers = scenario.parameter_servers;
  out.batch_per_worker = scenario.batch_per_worker;
  out.network_model = network_model_name(scenario.network_model);
  for (size_t s = 0; s < scenario.strategies.size(); ++s) {
    const auto [first, last, searched] = spans[s];
    if (!searched) {
      out.results.push_back(std::move(raw[first]));
      continue;
    }
    size_t best = first;
    std::vector<CutTrial> trials;
    for (size_t i = first; i < last; ++i) {
      trials.push_back({raw[i].cut.value_or(""), raw[i].step_time_s});
      if (raw[i].step_time_s < raw[best].step_time_s) best = i;
    }
    StrategyResult chosen = options.keep_timeline
                                ? simulate_isolated(scenario, scenario.strategies[s],
                                                    tasks[best].cut, true)
                                : std::move(raw[best]);
    chosen.cut_search = std::move(trials);
    out.results.push_back(std::move(chosen));
  }
  const StrategyResult* ps = nullptr;
  const StrategyResult* allreduce = nullptr;
  for (const auto& r : out.results) {
    if (r.kind == StrategyKind::ps && ps == nullptr) ps = &r;
    if (r.kind == StrategyKind::allreduce && allreduce == nullptr) allreduce = &r;
  }
  for (auto& r : out.results) {
    if (ps != nullptr) r.speedup_vs_ps = ps->step_time_s / r.step_time_s;
    if (allreduce != nullptr) r.speedup_vs_allreduce = allreduce->step_time_s / r.step_time_s;
  }
  return out;
}

}  // namespace ralp::sim
