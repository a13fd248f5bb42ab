// Evaluating sweep points, in-process or in a pool of child processes that return each point's
// outcome as JSON over a pipe.
#include "ralp/sweep/run.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "ralp/placement/baseline.hpp"
#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/reports/verdict.hpp"
#include "ralp/results/child_reply.hpp"
#include "ralp/results/memory_use.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/results/training_figures.hpp"
#include "ralp/sim/simulate.hpp"

namespace ralp::sweep {
namespace {

Json outcome_json(ScenarioResult result, const Scenario& scenario) {
  result.baseline = placement::single_device_baseline(scenario);
  add_memory(result, scenario);
  return {{"results", results_with_figures_json(result)},
          {"baseline", to_json(*result.baseline)},
          {"training", to_json(result.training)},
          {"verdict", reports::to_json(reports::make_verdict(result, result.split_threshold))}};
}

// What a child writes: the outcome, or the error that stopped it.
std::string point_reply(const SweepPoint& point, const std::string& fidelity) {
  return child_reply([&] { return evaluate_point(point, fidelity); });
}

// "point 4 (workers=5)" for messages.
std::string point_name(const SweepPoint& point) {
  return "point " + std::to_string(point.index) +
         (point.values.empty() ? "" : " (" + point.describe() + ")");
}

Json parse_point_reply(const std::string& text, int status, const SweepPoint& point) {
  return parse_child_reply(text, status, point_name(point));
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t point = 0;
  std::string output;
};

Child start_child(const SweepPoint& point, const std::string& fidelity) {
  const ForkedChild c = fork_child([&] { return point_reply(point, fidelity); });
  return {c.pid, c.fd, point.index, {}};
}

// A worker process: reads point indices, one per line, and answers each with its reply's length,
// a newline and the reply, until its input closes.
struct Worker {
  pid_t pid = -1;
  int to = -1;    // the worker's input
  int from = -1;  // its replies
  std::optional<size_t> point;  // being evaluated
  std::string buffer;
};

[[noreturn]] void worker_main(const std::vector<SweepPoint>& points, const std::string& fidelity,
                              int in, int out) {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t n = read(in, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (c != '\n') {
      line += c;
      continue;
    }
    const std::string reply = point_reply(points.at(std::stoull(line)), fidelity);
    write_all(out, std::to_string(reply.size()) + "\n" + reply);
    line.clear();
  }
  _exit(0);
}

Worker start_worker(const std::vector<SweepPoint>& points, const std::string& fidelity,
                    const std::vector<Worker>& others) {
  int in[2];
  int out[2];
  if (pipe(in) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    for (const int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The other workers' pipes stay with the parent alone, so that each sees its input close.
    for (const Worker& w : others) {
      close(w.to);
      close(w.from);
    }
    close(in[1]);
    close(out[0]);
    worker_main(points, fidelity, in[0], out[1]);
  }
  close(in[0]);
  close(out[1]);
  return {pid, in[1], out[0], std::nullopt, {}};
}

void hand_out(Worker& w, size_t point) {
  w.point = point;
  write_all(w.to, std::to_string(point) + "\n");
}

// The pool of worker processes (Isolation::workers).
void run_workers(const std::vector<SweepPoint>& points, const std::vector<size_t>& which,
                 const std::string& fidelity, size_t jobs, const PoolOptions& options,
                 const std::function<void(size_t, Json)>& done) {
  std::vector<Worker> workers;
  const auto stop_all = [&](bool kill_them) {
    for (Worker& w : workers) {
      if (w.to >= 0) close(w.to);
      if (w.from >= 0) close(w.from);
      if (kill_them) kill(w.pid, SIGKILL);
      waitpid(w.pid, nullptr, 0);
    }
    workers.clear();
  };
  size_t next = 0;
  size_t finished = 0;
  try {
    while (workers.size() < std::min(jobs, which.size())) {
      workers.push_back(start_worker(points, fidelity, workers));
      hand_out(workers.back(), which[next++]);
    }
    while (finished < which.size()) {
      std::vector<pollfd> polls;
      std::vector<Worker*> busy;
      for (Worker& w : workers) {
        if (!w.point) continue;
        polls.push_back({w.from, POLLIN, 0});
        busy.push_back(&w);
      }
      const int ready = poll(polls.data(), polls.size(), options.idle ? kIdleIntervalMs : -1);
      if (ready < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      }
      if (options.idle) options.idle();
      for (size_t i = 0; i < busy.size(); ++i) {
        if ((polls[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        Worker& w = *busy[i];
        char buffer[1 << 16];
        const ssize_t n = read(w.from, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          int status = 0;
          close(w.from);
          w.from = -1;
          waitpid(w.pid, &status, 0);
          close(w.to);
          w.to = -1;
          w.pid = -1;
          parse_point_reply("", status, points.at(*w.point));  // throws: no reply
        }
        w.buffer.append(buffer, static_cast<size_t>(n));
        const size_t nl = w.buffer.find('\n');
        if (nl == std::string::npos) continue;
        const size_t length = std::stoull(w.buffer.substr(0, nl));
        if (w.buffer.size() < nl + 1 + length) continue;
        const std::string reply = w.buffer.substr(nl + 1, length);
        w.buffer.erase(0, nl + 1 + length);
        const size_t point = *w.point;
        w.point.reset();
        ++finished;
        if (next < which.size()) hand_out(w, which[next++]);
        done(point, parse_point_reply(reply, 0, points.at(point)));
      }
    }
  } catch (...) {
    std::erase_if(workers, [](const Worker& w) { return w.pid < 0; });
    stop_all(true);
    throw;
  }
  stop_all(false);
}

}  // namespace

Json evaluate_point(const SweepPoint& point, const std::string& fidelity) {
  const Scenario& scenario = point.scenario;
  if (fidelity == "analytic") return outcome_json(placement::analytic_scenario(scenario), scenario);
  // One simulation at a time inside a point: the points themselves run in parallel.
  sim::SimulateOptions options;
  options.jobs = 1;
  return outcome_json(
      sim::simulate_scenario(scenario, placement::resolve_cuts(scenario, options), options),
      scenario);
}

void run_points(const std::vector<SweepPoint>& points, const std::vector<size_t>& which,
                const std::string& fidelity, const PoolOptions& options,
                const std::function<void(size_t, Json)>& done) {
  const size_t jobs = static_cast<size_t>(options.jobs > 0 ? options.jobs : default_jobs());
  // The simulator is loaded once here rather than by every point's process.
  if (fidelity != "analytic") sim::load_simulator();
  if (options.isolation == Isolation::workers) {
    run_workers(points, which, fidelity, jobs, options, done);
    return;
  }
  if (options.isolation == Isolation::in_process) {
    for (const size_t i : which) {
      Json outcome;
      try {
        outcome = evaluate_point(points.at(i), fidelity);
      } catch (const InputError&) {
        throw;
      } catch (const std::exception& e) {
        throw std::runtime_error(point_name(points.at(i)) + " failed: " + e.what());
      }
      done(i, std::move(outcome));
      if (options.idle) options.idle();
    }
    return;
  }
  std::vector<Child> running;
  size_t next = 0;
  size_t finished = 0;
  try {
    while (finished < which.size()) {
      while (running.size() < jobs && next < which.size()) {
        running.push_back(start_child(points.at(which[next]), fidelity));
        ++next;
      }
      std::vector<pollfd> polls;
      for (const auto& c : running) polls.push_back({c.fd, POLLIN, 0});
      const int ready = poll(polls.data(), polls.size(), options.idle ? kIdleIntervalMs : -1);
      if (ready < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      }
      if (options.idle) options.idle();
      // Children in start order, so that results that finish together are handed on in order.
      for (size_t i = 0; i < running.size();) {
        Child& c = running[i];
        if ((polls[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
          ++i;
          continue;
        }
        char buffer[1 << 16];
        const ssize_t n = read(c.fd, buffer, sizeof buffer);
        if (n > 0 || (n < 0 && errno == EINTR)) {
          if (n > 0) c.output.append(buffer, static_cast<size_t>(n));
          ++i;
          continue;
        }
        close(c.fd);
        int status = 0;
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        const size_t point = c.point;
        const std::string output = std::move(c.output);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        polls.erase(polls.begin() + static_cast<std::ptrdiff_t>(i));
        ++finished;
        done(point, parse_point_reply(output, status, points.at(point)));
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
}

}  // namespace ralp::sweep
