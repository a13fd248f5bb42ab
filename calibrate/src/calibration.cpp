// Calibration with Google Benchmark as the harness: benchmarks are registered programmatically,
// run with repetitions and warm-up, and read back through a reporter that also drives progress.
#include "ralp/calibrate/calibration.hpp"

#include <benchmark/benchmark.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "ralp/calibrate/fit.hpp"
#include "ralp/core/cpu_stat.hpp"
#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/profile_cost_model.hpp"
#include "ralp/kernels/network.hpp"
#include "ralp/results/child_reply.hpp"
#include "ralp/results/step_result.hpp"

namespace ralp::calibrate {
namespace {

using kernels::Backend;
using kernels::Tensor;

// Parameter-server microbenchmarks: summing this many workers' buffers of this many floats, and
// the SGD update of one such buffer; host-device copies of this many bytes.
constexpr int kSumBuffers = 4;
constexpr int64_t kPsFloats = int64_t{8} << 20;  // 32 MiB
constexpr int64_t kCopyFloats = int64_t{16} << 20;  // 64 MiB
// The launch overhead is the time of a ReLU on this few floats.
constexpr int64_t kTinyChannels = 16;
// At most this many copies of a layer's weights (small weights stay cache-resident anyway).
constexpr int64_t kMaxWeightCopies = 64;
// Steps of a model run as warm-up before its in-step layer times are taken.
constexpr int kInStepWarmUpSteps = 2;

std::string read_loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a.empty() ? "unknown" : a + " " + b + " " + c;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::vector<float> random_floats(std::mt19937_64& rng, int64_t count) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> out(static_cast<size_t>(count));
  for (float& v : out) v = dist(rng);
  return out;
}

// One layer's runner and tensors, made when its first benchmark starts. In training a layer's
// weights have left the last-level cache by the time its forward runs again (the rest of the step
// passes through it), so each forward here reads the next of enough copies of them to overflow
// that cache twice: a hot-cache time flatters FC layers, whose passes mostly read weights
// (`ralp calibrate`'s fidelity line compares the layers' sum with whole steps). Backward passes
// stay on the copy the last forward used, as in training where they follow it.
class LayerBench {
 public:
  LayerBench(Backend& backend, const Layer& layer, int64_t batch, uint64_t seed)
      : backend_(backend), runner_(backend.make_runner(layer, batch)) {
    std::mt19937_64 rng(seed);
    const auto make = [&](const kernels::TensorDesc& d) {
      return backend.upload(d, random_floats(rng, d.elements()));
    };
    for (size_t i = 0; i < layer.input_shapes.size(); ++i) {
      inputs_.push_back(make(runner_->input_desc(i)));
      diff_inputs_.push_back(backend.allocate(runner_->input_desc(i)));
    }
    output_ = make(runner_->output_desc());
    diff_output_ = make(runner_->output_desc());
    size_t copies = 1;
    if (runner_->has_weights()) {
      const int64_t bytes = 2 * runner_->weight_desc().bytes();
      copies = static_cast<size_t>(std::clamp<int64_t>(
          (2 * backend.last_level_cache_bytes() + bytes - 1) / bytes, 1, kMaxWeightCopies));
      for (size_t i = 0; i < copies; ++i) {
        weights_.push_back(make(runner_->weight_desc()));
        diff_weights_.push_back(backend.allocate(runner_->weight_desc()));
      }
    }
    if (runner_->has_bias()) {
      bias_ = make(runner_->bias_desc());
      diff_bias_ = backend.allocate(runner_->bias_desc());
    }
    labels_ = backend.allocate(runner_->labels_desc());
    backend.copy_labels_from_host(labels_, std::vector<int32_t>(static_cast<size_t>(batch), 0));
    loss_ = backend.allocate({{1}});
    for (size_t i = 0; i < inputs_.size(); ++i) {
      args_.inputs.push_back(&inputs_[i]);
      args_.diff_inputs.push_back(layer.needs_input_gradient ? &diff_inputs_[i] : nullptr);
    }
    args_.output = &output_;
    args_.diff_output = &diff_output_;
    args_.weights = weights_.empty() ? nullptr : &weights_[0];
    args_.bias = bias_.empty() ? nullptr : &bias_;
    args_.diff_weights = diff_weights_.empty() ? nullptr : &diff_weights_[0];
    args_.diff_bias = diff_bias_.empty() ? nullptr : &diff_bias_;
    args_.labels = &labels_;
    args_.loss = &loss_;
    args_.mask = {seed, 0, 0, 0};
  }

  void forward() {
    rotate();
    runner_->forward(args_);
  }
  void backward_data() { runner_->backward_data(args_); }
  void backward_weight() { runner_->backward_weight(args_); }

 private:
  Backend& backend_;
  std::unique_ptr<kernels::LayerRunner> runner_;
  // Moves to the next copy of the weights and their gradient.
  void rotate() {
    if (weights_.size() < 2) return;
    next_ = (next_ + 1) % weights_.size();
    args_.weights = &weights_[next_];
    args_.diff_weights = &diff_weights_[next_];
  }

  std::vector<Tensor> inputs_, diff_inputs_, weights_, diff_weights_;
  Tensor output_, diff_output_, bias_, diff_bias_, labels_, loss_;
  kernels::LayerArgs args_;
  size_t next_ = 0;
};

// A whole model's forward+backward through the network executor.
class ModelBench {
 public:
  ModelBench(Backend& backend, const LayerGraph& graph, int64_t batch, uint64_t seed)
      : net_(backend, graph, batch, seed) {
    std::mt19937_64 rng(seed);
    backend.copy_from_host(net_.model_input(), random_floats(rng, net_.model_input().elements()));
    const int64_t classes = graph.layer(graph.size() - 1).output.channels;
    std::vector<int32_t> labels(static_cast<size_t>(batch));
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % classes);
    backend.copy_labels_from_host(net_.labels(), labels);
  }
  void step() {
    net_.forward(context_);
    net_.backward(context_);
  }
  [[nodiscard]] kernels::Network& network() { return net_; }

 private:
  kernels::Network net_;
  kernels::StepContext context_{};
};

// Per-layer pass times seen inside training steps, by (signature, batch): forward,
// backward-data, backward-weight samples in seconds.
using InStepSamples = std::map<std::pair<std::string, int64_t>, std::array<std::vector<double>, 3>>;

// A model stepped with the executor timing every layer, after warm-up steps. Each step's times
// are kept; `flush` adds those of the steps in the middle half by step time (core middle_half) to
// `samples`, whose means then sum to a typical step's time.
class InStepBench {
 public:
  InStepBench(Backend& backend, const LayerGraph& graph, int64_t batch, uint64_t seed)
      : model_(backend, graph, batch, seed), graph_(graph), batch_(batch) {
    model_.network().set_timing(true);
    for (int i = 0; i < kInStepWarmUpSteps; ++i) model_.step();
  }
  void step() {
    model_.step();
    steps_.push_back(model_.network().layer_times());
  }
  void flush(InStepSamples& samples) const {
    std::vector<double> totals;
    for (const kernels::Network::LayerTimes& t : steps_) {
      double total = 0.0;
      for (LayerId id = 0; id < graph_.size(); ++id) {
        total += t.forward[id].value() + t.backward_data[id].value() + t.backward_weight[id].value();
      }
      totals.push_back(total);
    }
    for (const size_t k : middle_half(totals)) {
      const kernels::Network::LayerTimes& t = steps_[k];
      for (LayerId id = 0; id < graph_.size(); ++id) {
        auto& s = samples[{graph_.layer(id).signature(), batch_}];
        s[0].push_back(t.forward[id].value());
        s[1].push_back(t.backward_data[id].value());
        s[2].push_back(t.backward_weight[id].value());
      }
    }
  }

 private:
  ModelBench model_;
  const LayerGraph& graph_;
  int64_t batch_;
  std::vector<kernels::Network::LayerTimes> steps_;
};

// Google Benchmark iterations per repetition for a model's steps: options.model_steps over the
// repetitions, rounded up; 0 (as min_time gives) when model_steps is 0.
int64_t model_iterations(const CalibrationOptions& options) {
  return options.model_steps > 0
             ? (options.model_steps + options.repetitions - 1) / options.repetitions
             : 0;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// What one registered benchmark measures.
struct Job {
  std::string name;
  std::function<void()> setup;    // makes the state it needs (once), then warms it up
  std::function<void()> run;      // one iteration's work
  std::function<void()> release;  // frees the state after its last benchmark
  int64_t iterations = 0;         // per repetition; 0: as many as min_time takes
};

// A model's training steps with every layer timed; its samples go to `samples` on release.
Job in_step_job(Backend& backend, const LayerGraph& graph, int64_t batch, uint64_t seed,
                const std::shared_ptr<InStepSamples>& samples, int64_t iterations) {
  auto timed = std::make_shared<std::optional<InStepBench>>();
  return {"in-step " + graph.name() + " b" + std::to_string(batch),
          [&backend, timed, &graph, batch, seed] {
            if (*timed) return;
            timed->emplace(backend, graph, batch, seed);
            backend.synchronize();
          },
          [timed] { (*timed)->step(); },
          [timed, samples] {
            if (!*timed) return;
            (*timed)->flush(*samples);
            timed->reset();
          },
          iterations};
}

// Collects per-repetition times (seconds per iteration) by benchmark name and reports progress.
class Collector final : public benchmark::BenchmarkReporter {
 public:
  Collector(size_t total, ProgressFn progress) : total_(total), progress_(std::move(progress)) {}

  bool ReportContext(const Context&) override {
    start_ = std::chrono::steady_clock::now();
    return true;
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    // Google Benchmark reports a benchmark's repetitions, then separately its aggregates.
    const bool has_iterations = std::any_of(runs.begin(), runs.end(), [](const Run& r) {
      return r.run_type == Run::RT_Iteration || r.error_occurred;
    });
    if (!has_iterations) return;
    const std::string name = runs.front().run_name.function_name;
    std::vector<double>& times = times_[name];
    std::string error;
    for (const Run& r : runs) {
      if (r.error_occurred) error = r.error_message;
      if (r.run_type != Run::RT_Iteration || r.error_occurred || r.iterations == 0) continue;
      times.push_back(r.real_accumulated_time / static_cast<double>(r.iterations));
    }
    if (!error.empty()) {
      times.clear();
      errors_[name] = error;
    }
    const auto s = stats(name);
    finished(name, s ? s->first : Seconds(0.0), s ? s->second : 0.0, error);
  }

  // Counts one more finished measurement and reports it.
  void finished(const std::string& what, Seconds median, double spread, const std::string& error) {
    ++done_;
    if (!progress_) return;
    ProgressUpdate u;
    u.done = done_;
    u.total = total_;
    u.what = what;
    u.error = error;
    u.median = median;
    u.spread = spread;
    u.elapsed = Seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    u.remaining = u.elapsed * (static_cast<double>(total_ - done_) / static_cast<double>(done_));
    progress_(u);
  }

  // Median seconds and spread ((max - min) / median) of a benchmark's repetitions.
  [[nodiscard]] std::optional<std::pair<Seconds, double>> stats(const std::string& name) const {
    const auto it = times_.find(name);
    if (it == times_.end() || it->second.empty()) return std::nullopt;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double med = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return std::pair{Seconds(med), med > 0.0 ? (v.back() - v.front()) / med : 0.0};
  }

 private:
  size_t total_;
  size_t done_ = 0;
  ProgressFn progress_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, std::vector<double>> times_;
  std::map<std::string, std::string> errors_;
};

// Registers and runs the jobs in order; each job's state lives from its setup until release.
void run_jobs(Backend& backend, const std::vector<Job>& jobs, const CalibrationOptions& options,
              Collector& collector) {
  benchmark::ClearRegisteredBenchmarks();
  const bool manual_time = backend.kind() == kernels::BackendKind::cuda;
  auto timer = backend.make_timer();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job* job = &jobs[i];
    auto* b = benchmark::RegisterBenchmark(
        job->name.c_str(), [job, &backend, &timer, manual_time](benchmark::State& state) {
          try {
            job->setup();
            for (auto _ : state) {
              if (manual_time) {
                timer->start();
                job->run();
                timer->stop();
                state.SetIterationTime(timer->elapsed().value());
              } else {
                job->run();
              }
            }
            backend.synchronize();
          } catch (const std::exception& e) {
            state.SkipWithError(e.what());
          }
        });
    b->Repetitions(options.repetitions)->Unit(benchmark::kMillisecond);
    // A fixed iteration count replaces the minimum and warm-up times (Google Benchmark takes
    // one or the other); such jobs warm up in their setup.
    if (job->iterations > 0) {
      b->Iterations(job->iterations);
    } else {
      b->MinTime(options.min_time)->MinWarmUpTime(options.warm_up_time);
    }
    // Real time, not CPU time: multithreaded CPU kernels work on threads the CPU clock misses.
    if (manual_time) {
      b->UseManualTime();
    } else {
      b->UseRealTime();
    }
  }
  std::vector<std::string> argv_storage = {"ralp-calibrate"};
  int argc = 1;
  std::vector<char*> argv = {argv_storage[0].data(), nullptr};
  benchmark::Initialize(&argc, argv.data());
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::ClearRegisteredBenchmarks();
  for (const Job& job : jobs) job.release();
}

}  // namespace

std::vector<ShapeToMeasure> distinct_shapes(const std::vector<ModelRequest>& requests) {
  std::vector<ShapeToMeasure> out;
  std::map<std::pair<std::string, int64_t>, size_t> index;
  for (const ModelRequest& r : requests) {
    for (const int64_t batch : r.batches) {
      for (const Layer& layer : r.graph.layers()) {
        const LayerWork w = layer.work(batch);
        const auto has = [](const PassWork& p) { return p.flops.value() > 0.0 || p.bytes.value() > 0.0; };
        if (!has(w.forward) && !has(w.backward_data) && !has(w.backward_weight)) continue;
        const std::string sig = layer.signature();
        const auto [it, fresh] = index.emplace(std::pair{sig, batch}, out.size());
        if (fresh) out.push_back({layer, batch, sig, 0});
        ++out[it->second].uses;
      }
    }
  }
  return out;
}

std::string slug(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

namespace {

// Seconds a time-sharing child may take to build its model and warm up.
constexpr int kSharingReadyTimeoutMs = 60000;

// The first CPU this process may run on.
int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return 0;
}

// In a time-sharing child: pinned to `cpu`, builds the model and warms it up, says so on `ready`
// (also when that fails, so that the parent never waits for it), waits until `go` closes, then
// steps for `window` seconds. Returns {"steps", "seconds"}: the steps that ended within the window
// and the time to the last one's end.
Json sharing_child(Backend& backend, const LayerGraph& graph, int64_t batch, double window,
                   uint64_t seed, int cpu, int ready, int go) {
  std::optional<ModelBench> model;
  try {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      throw std::runtime_error(std::string("sched_setaffinity: ") + std::strerror(errno));
    }
    model.emplace(backend, graph, batch, seed);
    for (int i = 0; i < kInStepWarmUpSteps; ++i) model->step();
    backend.synchronize();
  } catch (...) {
    write_all(ready, "!");
    throw;
  }
  write_all(ready, "r");
  char c = 0;
  while (read(go, &c, 1) < 0 && errno == EINTR) {
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double last = 0.0;
  int64_t steps = 0;
  for (;;) {
    model->step();
    backend.synchronize();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (t > window) break;
    ++steps;
    last = t;
  }
  if (steps == 0) throw std::runtime_error("no step ended within " + std::to_string(window) + " s");
  return Json{{"steps", steps}, {"seconds", last}};
}

// Runs `processes` sharing children at once on one CPU; returns each one's seconds per step.
std::vector<double> run_sharing(Backend& backend, const LayerGraph& graph, int64_t batch,
                                double window, uint64_t seed, int processes) {
  int ready[2], go[2];
  if (pipe(ready) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe(go) != 0) {
    close(ready[0]);
    close(ready[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  const int cpu = first_allowed_cpu();
  std::vector<ForkedChild> children;
  std::string failure;
  try {
    for (int i = 0; i < processes; ++i) {
      children.push_back(fork_child([&] {
        close(ready[0]);
        close(go[1]);
        return child_reply([&] {
          return sharing_child(backend, graph, batch, window, seed, cpu, ready[1], go[0]);
        });
      }));
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  close(ready[1]);
  close(go[0]);
  // Every child says it is ready (or failed) before any starts, so that all step at once.
  for (size_t got = 0; got < children.size() && failure.empty();) {
    pollfd p{ready[0], POLLIN, 0};
    const int n = poll(&p, 1, kSharingReadyTimeoutMs);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failure = "a process did not get ready within a minute";
      break;
    }
    char c = 0;
    const ssize_t r = read(ready[0], &c, 1);
    if (r <= 0) {
      failure = "a process ended before it was ready";
      break;
    }
    ++got;
  }
  close(ready[0]);
  if (!failure.empty()) {
    for (const ForkedChild& c : children) kill(c.pid, SIGKILL);
  }
  close(go[1]);  // go
  std::vector<double> step_seconds;
  for (const ForkedChild& c : children) {
    const auto [text, status] = collect_child(c);
    if (!failure.empty()) continue;
    try {
      const Json out = parse_child_reply(text, status, "time sharing");
      step_seconds.push_back(out.at("seconds").get<double>() /
                             static_cast<double>(out.at("steps").get<int64_t>()));
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  return step_seconds;
}

}  // namespace

TimeSharingCheck measure_time_sharing(Backend& backend, const LayerGraph& graph, int64_t batch,
                                      double window, uint64_t seed) {
  const std::vector<double> alone = run_sharing(backend, graph, batch, window, seed, 1);
  const std::vector<double> shared = run_sharing(backend, graph, batch, window, seed, 2);
  return {graph.name(), batch, Seconds(alone.front()), Seconds(mean(shared))};
}

double time_sharing_slowdown(const std::vector<TimeSharingCheck>& checks) {
  if (checks.empty()) return 1.0;
  double sum = 0.0;
  for (const TimeSharingCheck& c : checks) sum += c.shared.value() / (2.0 * c.alone.value());
  return std::max(1.0, sum / static_cast<double>(checks.size()));
}

double fidelity_error(const EndToEndCheck& check) {
  return (check.sum_of_layers.value() - check.measured.value()) / check.measured.value();
}

namespace {

// Shared between a group of jobs: made by the first one's setup, freed by the last one's release.
template <typename T>
using JobState = std::shared_ptr<std::optional<T>>;

// The launch overhead: a ReLU on kTinyChannels floats.
void add_launch_job(std::vector<Job>& jobs, Backend& backend, uint64_t seed) {
  auto tiny = std::make_shared<std::optional<LayerBench>>();
  const auto graph = std::make_shared<const LayerGraph>(
      "launch", TensorShape{kTinyChannels, 1, 1},
      std::vector<LayerSpec>{{"relu", LayerKind::relu, std::monostate{}, {}},
                             {"loss", LayerKind::softmax_cross_entropy, std::monostate{}, {}}});
  jobs.push_back({"launch overhead",
                  [&backend, tiny, graph, seed] {
                    if (!*tiny) tiny->emplace(backend, graph->layer(0), 1, seed);
                  },
                  [tiny] { (*tiny)->forward(); }, [tiny] { tiny->reset(); }});
}

// The parameter server's operations: summing kSumBuffers buffers, and one buffer's SGD update.
void add_ps_jobs(std::vector<Job>& jobs, Backend& backend) {
  struct PsState {
    std::vector<Tensor> buffers;
    Tensor dst, weights, velocity;
  };
  auto ps = std::make_shared<std::optional<PsState>>();
  const auto ps_setup = [&backend, ps] {
    if (*ps) return;
    PsState s;
    for (int i = 0; i < kSumBuffers; ++i) s.buffers.push_back(backend.allocate({{kPsFloats}}));
    for (auto& b : s.buffers) backend.fill(b, 0.5F);
    s.dst = backend.allocate({{kPsFloats}});
    s.weights = backend.allocate({{kPsFloats}});
    s.velocity = backend.allocate({{kPsFloats}});
    backend.fill(s.weights, 1.0F);
    backend.fill(s.velocity, 0.0F);
    ps->emplace(std::move(s));
  };
  jobs.push_back({"gradient sum", ps_setup,
                  [&backend, ps] {
                    std::vector<const Tensor*> srcs;
                    for (const Tensor& b : (*ps)->buffers) srcs.push_back(&b);
                    backend.sum(srcs, (*ps)->dst);
                  },
                  [] {}});
  jobs.push_back({"sgd update", ps_setup,
                  [&backend, ps] {
                    backend.sgd_update((*ps)->weights, (*ps)->buffers[0], (*ps)->velocity,
                                       kernels::SgdOptions{}, 1.0F);
                  },
                  [ps] { ps->reset(); }});
}

// A GPU's host-device copies of kCopyFloats floats, each way.
void add_copy_jobs(std::vector<Job>& jobs, Backend& backend) {
  struct CopyState {
    Tensor device;
    std::vector<float> host;
  };
  auto copies = std::make_shared<std::optional<CopyState>>();
  const auto setup = [&backend, copies] {
    if (*copies) return;
    copies->emplace(CopyState{backend.allocate({{kCopyFloats}}),
                              std::vector<float>(static_cast<size_t>(kCopyFloats), 1.0F)});
  };
  jobs.push_back({"host to device copy", setup,
                  [&backend, copies] { backend.copy_from_host((*copies)->device, (*copies)->host); },
                  [] {}});
  jobs.push_back({"device to host copy", setup,
                  [&backend, copies] { backend.copy_to_host((*copies)->device, (*copies)->host); },
                  [copies] { copies->reset(); }});
}

// Each distinct shape's passes, on one layer bench at a time; returns that bench, which the last
// job frees. Batch norm's weight gradients come out of its backward-data primitive, so its
// backward-weight time is measured as (both passes) - (backward-data alone).
JobState<LayerBench> add_layer_jobs(std::vector<Job>& jobs, Backend& backend,
                                    const std::vector<ShapeToMeasure>& shapes, uint64_t seed) {
  auto current = std::make_shared<std::optional<LayerBench>>();
  auto current_index = std::make_shared<size_t>(SIZE_MAX);
  const auto nothing = [] {};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ShapeToMeasure& s = shapes[i];
    const LayerWork w = s.layer.work(s.batch);
    const std::string base = s.signature + " b" + std::to_string(s.batch);
    const auto setup = [&backend, current, current_index, i, &shapes, seed] {
      if (*current_index == i && *current) return;
      current->reset();
      *current_index = i;
      current->emplace(backend, shapes[i].layer, shapes[i].batch, seed);
      (*current)->forward();
      if (shapes[i].layer.needs_input_gradient) (*current)->backward_data();
      if (shapes[i].layer.params() > 0) (*current)->backward_weight();
      backend.synchronize();
    };
    jobs.push_back({base + " forward", setup, [current] { (*current)->forward(); }, nothing});
    if (w.backward_data.flops.value() > 0.0 || w.backward_data.bytes.value() > 0.0) {
      jobs.push_back({base + " backward_data", setup, [current] { (*current)->backward_data(); }, nothing});
    }
    if (s.layer.params() > 0) {
      if (s.layer.kind() == LayerKind::batch_norm && s.layer.needs_input_gradient) {
        jobs.push_back({base + " backward_data+weight", setup,
                        [current] {
                          (*current)->backward_data();
                          (*current)->backward_weight();
                        },
                        nothing});
      } else {
        jobs.push_back({base + " backward_weight", setup, [current] { (*current)->backward_weight(); }, nothing});
      }
    }
  }
  if (!jobs.empty()) {
    const auto last_release = jobs.back().release;
    jobs.back().release = [last_release, current] {
      last_release();
      current->reset();
    };
  }
  return current;
}

// Each requested model's training steps at each batch size: once end to end, and once with every
// layer timed (into `in_step_samples`).
void add_model_jobs(std::vector<Job>& jobs, Backend& backend,
                    const std::vector<ModelRequest>& requests, const CalibrationOptions& options,
                    const std::shared_ptr<InStepSamples>& in_step_samples) {
  const int64_t steps_per_repetition = model_iterations(options);
  for (const ModelRequest& r : requests) {
    for (const int64_t batch : r.batches) {
      auto model = std::make_shared<std::optional<ModelBench>>();
      const LayerGraph* graph = &r.graph;
      jobs.push_back({"end-to-end " + r.graph.name() + " b" + std::to_string(batch),
                      [&backend, model, graph, batch, seed = options.seed] {
                        if (*model) return;
                        model->emplace(backend, *graph, batch, seed);
                        (*model)->step();
                        backend.synchronize();
                      },
                      [model] { (*model)->step(); }, [model] { model->reset(); },
                      steps_per_repetition});
      // The same steps with every layer timed (which waits for the device after each pass),
      // apart from the end-to-end time above so that timing does not slow it.
      jobs.push_back(in_step_job(backend, *graph, batch, options.seed, in_step_samples,
                                 steps_per_repetition));
    }
  }
}

// Jobs release state as soon as the next one needs memory: layer benches replace each other
// (add_layer_jobs), a model frees its state when the next job starts, and with
// `free_layer_bench` the first end-to-end job frees the last layer bench first.
void release_before_next(std::vector<Job>& jobs, const JobState<LayerBench>& layer_bench,
                         bool free_layer_bench) {
  const auto is_model_job = [](const Job& job) {
    return job.name.rfind("end-to-end ", 0) == 0 || job.name.rfind("in-step ", 0) == 0;
  };
  for (size_t i = 0; i + 1 < jobs.size(); ++i) {
    if (is_model_job(jobs[i])) {
      auto setup = jobs[i + 1].setup;
      auto release = jobs[i].release;
      jobs[i + 1].setup = [setup, release] {
        release();
        setup();
      };
    }
  }
  if (!free_layer_bench) return;
  for (Job& job : jobs) {
    if (job.name.rfind("end-to-end ", 0) == 0) {
      auto setup = job.setup;
      job.setup = [setup, layer_bench] {
        layer_bench->reset();
        setup();
      };
      break;
    }
  }
}

// The models whose time sharing is measured, at their first batch size: forked processes pinned
// to one core, so only for one-thread CPU kernels (a GPU shares itself otherwise, and an OpenMP
// team does not survive fork).
std::vector<const ModelRequest*> sharing_requests(const Backend& backend,
                                                  const std::vector<ModelRequest>& requests,
                                                  const CalibrationOptions& options) {
  std::vector<const ModelRequest*> sharing;
  const bool gpu = backend.kind() == kernels::BackendKind::cuda;
  if (options.end_to_end && options.time_sharing_window > 0.0 && !gpu && backend.threads() == 1) {
    for (const ModelRequest& r : requests) {
      if (!r.batches.empty()) sharing.push_back(&r);
    }
  }
  return sharing;
}

std::vector<TimeSharingCheck> measure_sharing(Backend& backend,
                                              const std::vector<const ModelRequest*>& sharing,
                                              const CalibrationOptions& options,
                                              Collector& collector) {
  std::vector<TimeSharingCheck> checks;
  for (const ModelRequest* r : sharing) {
    const int64_t batch = r->batches.front();
    const std::string what = "time sharing " + r->graph.name() + " b" + std::to_string(batch) +
                             " (two processes on one core, each step)";
    try {
      checks.push_back(
          measure_time_sharing(backend, r->graph, batch, options.time_sharing_window, options.seed));
      collector.finished(what, checks.back().shared, 0.0, "");
    } catch (const std::exception& e) {
      collector.finished(what, Seconds(0.0), 0.0, e.what());
    }
  }
  return checks;
}

// The profile's identity and provenance: the device, the machine, the load and steal time while
// measuring, and the options that shaped the measurements.
DeviceProfile measured_profile(Backend& backend, const CalibrationOptions& options,
                               const std::string& load_before,
                               const std::map<int, CpuTimes>& cpu_before) {
  const bool gpu = backend.kind() == kernels::BackendKind::cuda;
  DeviceProfile p;
  p.kind = gpu ? DeviceKind::gpu : DeviceKind::cpu;
  p.source = ProfileSource::measured;
  p.description = backend.device_name();
  p.name = options.name.empty() ? slug(p.description) : options.name;
  p.provenance = backend.provenance();
  p.provenance["date"] = utc_now();
  p.provenance["loadavg_start"] = load_before;
  p.provenance["loadavg_end"] = read_loadavg();
  // What the hypervisor took while the CPUs wanted to run (a virtual machine's steal time): the
  // kernels' times include it.
  if (const auto steal = steal_pct(cpu_before, read_cpu_times(), {})) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << *steal;
    p.provenance["steal_pct"] = text.str();
  }
  p.provenance["repetitions"] = std::to_string(options.repetitions);
  p.provenance["min_time_s"] = std::to_string(options.min_time);
  p.provenance["model_steps"] = std::to_string(options.model_steps);
  if (!options.command.empty()) p.provenance["command"] = options.command;
  p.provenance["last_level_cache_bytes"] = std::to_string(backend.last_level_cache_bytes());
  p.host = profile_host(backend);
  return p;
}

// The launch overhead, the parameter server's rates and a GPU's PCIe bandwidth, from their jobs.
void set_device_rates(DeviceProfile& p, const Collector& collector) {
  const auto median_of = [&](const std::string& name) {
    const auto s = collector.stats(name);
    return s ? s->first : Seconds(0.0);
  };
  const Seconds launch = median_of("launch overhead");
  p.launch_overhead = launch;
  p.fitted_launch_overhead = launch;
  const double buffer_bytes = static_cast<double>(kPsFloats) * kBytesPerFloat;
  if (const Seconds t = median_of("gradient sum"); t.value() > 0.0) {
    p.gradient_sum_rate = BytesPerSecond(kSumBuffers * buffer_bytes / t.value());
  }
  if (const Seconds t = median_of("sgd update"); t.value() > 0.0) {
    p.update_rate = BytesPerSecond(buffer_bytes / t.value());
  }
  if (p.kind == DeviceKind::gpu) {
    const Seconds up = median_of("host to device copy");
    const Seconds down = median_of("device to host copy");
    if (up.value() > 0.0 && down.value() > 0.0) {
      const double bytes = static_cast<double>(kCopyFloats) * kBytesPerFloat;
      p.pcie_bandwidth = BytesPerSecond(bytes / std::max(up.value(), down.value()));
    }
  }
}

// One shape's measured passes, with their in-step times where a model step timed them.
MeasuredLayer measured_layer(const ShapeToMeasure& s, const std::pair<Seconds, double>& forward,
                             const Collector& collector, const InStepSamples& in_step_samples) {
  const std::string base = s.signature + " b" + std::to_string(s.batch);
  MeasuredLayer m;
  m.signature = s.signature;
  m.kind = s.layer.kind();
  m.batch = s.batch;
  m.forward = forward.first;
  m.spread = forward.second;
  if (const auto d = collector.stats(base + " backward_data")) {
    m.backward_data = d->first;
    m.spread = std::max(m.spread, d->second);
  }
  if (const auto wt = collector.stats(base + " backward_weight")) {
    m.backward_weight = wt->first;
    m.spread = std::max(m.spread, wt->second);
  }
  if (const auto both = collector.stats(base + " backward_data+weight")) {
    m.backward_weight = Seconds(std::max(0.0, (both->first - m.backward_data).value()));
    m.spread = std::max(m.spread, both->second);
  }
  if (const auto it = in_step_samples.find({s.signature, s.batch});
      it != in_step_samples.end() && !it->second[0].empty()) {
    m.in_step = InStepTimes{Seconds(mean(it->second[0])), Seconds(mean(it->second[1])),
                            Seconds(mean(it->second[2]))};
  }
  return m;
}

// The fitted rates of a precision: FP32's, or another precision's section.
std::map<LayerKind, FittedRates>& fitted_of(DeviceProfile& p, Precision precision) {
  return precision == Precision::fp32 ? p.fitted : p.precision_fitted[precision];
}

// The measured layers, tagged with the precision the kernels computed in, and the rates fitted
// to their passes.
void add_measured_layers(DeviceProfile& p, const std::vector<ShapeToMeasure>& shapes,
                         const Collector& collector, const InStepSamples& in_step_samples,
                         Precision precision) {
  std::vector<FitPoint> points;
  for (const ShapeToMeasure& s : shapes) {
    const auto f = collector.stats(s.signature + " b" + std::to_string(s.batch) + " forward");
    if (!f) continue;  // the backend could not run it: the fitted model covers it
    const LayerWork w = s.layer.work(s.batch);
    MeasuredLayer m = measured_layer(s, *f, collector, in_step_samples);
    m.precision = precision;
    for (const auto& [work, time] : {std::pair{w.forward, m.forward},
                                     std::pair{w.backward_data, m.backward_data},
                                     std::pair{w.backward_weight, m.backward_weight}}) {
      if (time.value() <= 0.0) continue;
      points.push_back({m.kind, work, time});
    }
    p.measured.push_back(std::move(m));
  }
  fitted_of(p, precision) = fit_rates(points, p.launch_overhead);
}

// The datasheet fallback of a measured profile, for kinds no calibrated model contains: the
// convolutions' fitted FLOP rate (the dense-arithmetic rate that binds them; an FC layer at a
// small batch is bound by its weights' bytes, and single best points include cache effects and
// noise), else the first fitted kind's; and the streaming bandwidth of the gradient sum, which
// reads kSumBuffers buffers and writes one, all far larger than caches.
void set_datasheet_fallback(DeviceProfile& p, Precision precision) {
  const std::map<LayerKind, FittedRates>& fitted = fitted_of(p, precision);
  double peak = 0.0;
  if (const auto conv = fitted.find(LayerKind::conv2d); conv != fitted.end()) {
    peak = conv->second.flops.value();
  } else if (!fitted.empty()) {
    peak = fitted.begin()->second.flops.value();
  }
  p.peak_flops = FlopsPerSecond(peak > 0.0 ? peak : 1e9);
  p.default_efficiency = 1.0;
  p.memory_efficiency = 1.0;
  p.memory_bandwidth = p.gradient_sum_rate.value() > 0.0
                           ? p.gradient_sum_rate * ((kSumBuffers + 1.0) / kSumBuffers)
                           : BytesPerSecond(1e9);
  p.origin = "measured by ralp calibrate on " + p.provenance["date"] +
             "; for layer kinds with no measurement, peak_flops is the fitted FLOP rate of the "
             "convolutions and FC layers and memory_bandwidth the streaming rate of the gradient "
             "sum";
}

// Each model step measured end to end, against the sum of its layers' times alone, so that the
// check stays independent of the step it is checked against (the in-step times come from such
// steps).
void add_end_to_end_checks(DeviceProfile& p, const std::vector<ModelRequest>& requests,
                           const Collector& collector, Precision precision) {
  DeviceProfile alone = p;
  for (MeasuredLayer& m : alone.measured) m.in_step.reset();
  const auto model = make_cost_model(alone, precision);
  for (const ModelRequest& r : requests) {
    for (const int64_t batch : r.batches) {
      const auto s = collector.stats("end-to-end " + r.graph.name() + " b" + std::to_string(batch));
      if (!s) continue;
      const ModelCost cost = model_cost(r.graph, *model, batch);
      p.end_to_end.push_back({r.graph.name(), batch, s->first, cost.forward + cost.backward});
    }
  }
}

}  // namespace

DeviceProfile calibrate(Backend& backend, const std::vector<ModelRequest>& requests,
                        const CalibrationOptions& options, const ProgressFn& progress) {
  const std::string load_before = read_loadavg();
  const auto cpu_before = read_cpu_times();
  const std::vector<ShapeToMeasure> shapes = distinct_shapes(requests);

  // Jobs, in order: launch overhead, PS operations, copies (GPU), layer passes, end-to-end.
  std::vector<Job> jobs;
  add_launch_job(jobs, backend, options.seed);
  add_ps_jobs(jobs, backend);
  if (backend.kind() == kernels::BackendKind::cuda) add_copy_jobs(jobs, backend);
  const JobState<LayerBench> layer_bench = add_layer_jobs(jobs, backend, shapes, options.seed);
  auto in_step_samples = std::make_shared<InStepSamples>();
  if (options.end_to_end) add_model_jobs(jobs, backend, requests, options, in_step_samples);
  release_before_next(jobs, layer_bench,
                      !shapes.empty() && options.end_to_end && !requests.empty());
  const std::vector<const ModelRequest*> sharing = sharing_requests(backend, requests, options);

  Collector collector(jobs.size() + sharing.size(), progress);
  run_jobs(backend, jobs, options, collector);
  const std::vector<TimeSharingCheck> sharing_checks =
      measure_sharing(backend, sharing, options, collector);

  DeviceProfile p = measured_profile(backend, options, load_before, cpu_before);
  p.time_sharing = sharing_checks;
  p.time_sharing_slowdown = time_sharing_slowdown(sharing_checks);
  set_device_rates(p, collector);
  add_measured_layers(p, shapes, collector, *in_step_samples, backend.precision());
  set_datasheet_fallback(p, backend.precision());
  if (options.end_to_end) add_end_to_end_checks(p, requests, collector, backend.precision());
  return p;
}

namespace {

// "vgg16 b8: 3.51 s measured, 3.49 s sum of layers (-0.4%); ..." for a provenance entry.
std::string end_to_end_text(const std::vector<EndToEndCheck>& checks) {
  std::ostringstream text;
  for (size_t i = 0; i < checks.size(); ++i) {
    const EndToEndCheck& c = checks[i];
    text << (i > 0 ? "; " : "") << c.model << " b" << c.batch << ": " << std::setprecision(4)
         << c.measured.value() << " s measured, " << c.sum_of_layers.value()
         << " s sum of layers (" << std::showpos << std::fixed << std::setprecision(1)
         << 100.0 * fidelity_error(c) << "%)" << std::noshowpos << std::defaultfloat;
  }
  return text.str();
}

}  // namespace

ProfileHost profile_host(const kernels::Backend& backend) {
  const bool gpu = backend.kind() == kernels::BackendKind::cuda;
  return ProfileHost{this_machine_cpu_model(), gpu ? backend.provenance().at("device") : "",
                     backend.threads()};
}

void check_same_host(const DeviceProfile& base, const ProfileHost& here) {
  if (base.source != ProfileSource::measured || !base.host) {
    throw std::invalid_argument("profile '" + base.name + "' is not a measured profile");
  }
  if (base.host->cpu_model != here.cpu_model || base.host->gpu_model != here.gpu_model ||
      base.host->threads != here.threads) {
    const auto describe = [](const ProfileHost& h) {
      return (h.gpu_model.empty() ? h.cpu_model : h.gpu_model) + " with " +
             std::to_string(h.threads) + (h.threads == 1 ? " thread" : " threads");
    };
    throw std::invalid_argument("profile '" + base.name + "' was measured on " +
                                describe(*base.host) + ", this calibration ran on " +
                                describe(here));
  }
}

DeviceProfile add_precision_section(const DeviceProfile& base, const DeviceProfile& section,
                                    Precision precision) {
  if (precision == Precision::fp32) {
    throw std::invalid_argument("fp32 is a measured profile's own section, not an added one");
  }
  check_same_host(base, *section.host);
  DeviceProfile out = base;
  std::erase_if(out.measured, [&](const MeasuredLayer& m) { return m.precision == precision; });
  for (const MeasuredLayer& m : section.measured) {
    if (m.precision == precision) out.measured.push_back(m);
  }
  const auto fitted = section.precision_fitted.find(precision);
  if (fitted == section.precision_fitted.end()) {
    throw std::invalid_argument("the calibration measured no " + std::string(to_string(precision)) +
                                " layer");
  }
  out.precision_fitted[precision] = fitted->second;
  const std::string prefix = std::string(to_string(precision)) + "_";
  for (const char* key : {"date", "command", "loadavg_start", "loadavg_end", "steal_pct",
                          "onednn_isa", "repetitions", "min_time_s", "model_steps"}) {
    if (const auto it = section.provenance.find(key); it != section.provenance.end()) {
      out.provenance[prefix + key] = it->second;
    }
  }
  if (!section.end_to_end.empty()) {
    out.provenance[prefix + "end_to_end"] = end_to_end_text(section.end_to_end);
  }
  return out;
}

}  // namespace ralp::calibrate
