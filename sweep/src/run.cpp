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
#include <stdexcept>
#include <thread>

#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/sim/result_io.hpp"
#include "ralp/sim/simulate.hpp"
#include "ralp/sim/verdict.hpp"

namespace ralp::sweep {
namespace {

Json outcome_json(const sim::ScenarioResult& result) {
  Json results = Json::array();
  for (const auto& r : result.results) results.push_back(sim::to_json(r, false));
  return {{"results", std::move(results)},
          {"verdict", sim::to_json(sim::make_verdict(result, result.split_threshold))}};
}

// What a child writes: the outcome, or the error that stopped it.
std::string child_reply(const SweepPoint& point, const std::string& fidelity) {
  try {
    return Json{{"outcome", evaluate_point(point, fidelity)}}.dump();
  } catch (const InputError& e) {
    return Json{{"input_error", {{"file", e.file()}, {"path", e.path()}, {"problem", e.problem()}}}}
        .dump();
  } catch (const std::exception& e) {
    return Json{{"failure", e.what()}}.dump();
  }
}

Json parse_child_reply(const std::string& text, int status, const SweepPoint& point) {
  const std::string what = "point " + std::to_string(point.index) +
                           (point.values.empty() ? "" : " (" + point.describe() + ")");
  Json reply;
  try {
    reply = Json::parse(text);
  } catch (const Json::exception&) {
    throw std::runtime_error(what + " failed: its process exited with status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                             " without a result");
  }
  if (reply.contains("input_error")) {
    const Json& e = reply["input_error"];
    throw InputError(e["file"].get<std::string>(), e["path"].get<std::string>(),
                     e["problem"].get<std::string>());
  }
  if (reply.contains("failure")) {
    throw std::runtime_error(what + " failed: " + reply["failure"].get<std::string>());
  }
  return std::move(reply["outcome"]);
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t point = 0;
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

Child start_child(const SweepPoint& point, const std::string& fidelity) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    write_all(fds[1], child_reply(point, fidelity));
    close(fds[1]);
    // Skip destructors and atexit handlers (MPI's among them): the parent owns every resource.
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0], point.index, {}};
}

}  // namespace

int default_jobs() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Json evaluate_point(const SweepPoint& point, const std::string& fidelity) {
  const Scenario& scenario = point.scenario;
  if (fidelity == "analytic") return outcome_json(placement::analytic_scenario(scenario));
  // One simulation at a time inside a point: the points themselves run in parallel.
  sim::SimulateOptions options;
  options.jobs = 1;
  return outcome_json(
      sim::simulate_scenario(scenario, placement::resolve_cuts(scenario, options), options));
}

void run_points(const std::vector<SweepPoint>& points, const std::vector<size_t>& which,
                const std::string& fidelity, const PoolOptions& options,
                const std::function<void(size_t, Json)>& done) {
  if (!options.isolate) {
    for (const size_t i : which) {
      done(i, evaluate_point(points.at(i), fidelity));
      if (options.idle) options.idle();
    }
    return;
  }
  const size_t jobs = static_cast<size_t>(options.jobs > 0 ? options.jobs : default_jobs());
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
        done(point, parse_child_reply(output, status, points.at(point)));
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
