// Achieved GFLOP/s of the CPU backend on VGG-16's and AlexNet's convolution and FC layers at
// batch 8, on one thread and two, each pass separately and in both layouts (channels-last and
// oneDNN's blocked one; see CpuPassLayout), with a table at the end that puts each pass's two
// layouts side by side and marks the one the automatic choice runs; OpenBLAS SGEMM on the FC
// layers for comparison. The context records the machine's load before the run (and stderr after).
//   build/bench/ralp_kernels_bench --benchmark_min_time=0.2 --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

#ifdef RALP_BENCH_OPENBLAS
#include <cblas.h>
#endif

#include "ralp/kernels/backend.hpp"
#include "ralp/model/model_zoo.hpp"

namespace {

using namespace ralp;

constexpr int64_t kBatch = 8;

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

using kernels::CpuPassLayout;
using kernels::KernelPass;

constexpr CpuPassLayout kLayouts[] = {CpuPassLayout::channels_last, CpuPassLayout::blocked};

const char* layout_name(CpuPassLayout layout) {
  return layout == CpuPassLayout::blocked ? "blocked" : "channels_last";
}

kernels::Backend& backend(int threads, CpuPassLayout layout) {
  static std::map<std::pair<int, CpuPassLayout>, std::unique_ptr<kernels::Backend>> made;
  auto& b = made[{threads, layout}];
  if (!b) b = kernels::make_cpu_backend(threads, layout);
  return *b;
}

// One layer's tensors on a backend; `pass` 0 forward, 1 backward-data, 2 backward-weight.
void run_layer(benchmark::State& state, const Layer& layer, int threads, int pass,
               CpuPassLayout layout) {
  kernels::Backend& be = backend(threads, layout);
  auto runner = be.make_runner(layer, kBatch);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  const auto make = [&](const kernels::TensorDesc& d) {
    std::vector<float> v(static_cast<size_t>(d.elements()));
    for (float& x : v) x = dist(rng);
    return be.upload(d, v);
  };
  kernels::Tensor x = make(runner->input_desc(0)), dx = be.allocate(runner->input_desc(0));
  kernels::Tensor y = make(runner->output_desc()), dy = make(runner->output_desc());
  kernels::Tensor w = make(runner->weight_desc()), dw = be.allocate(runner->weight_desc());
  kernels::Tensor b = make(runner->bias_desc()), db = be.allocate(runner->bias_desc());
  kernels::LayerArgs a;
  a.inputs = {&x};
  a.diff_inputs = {&dx};
  a.output = &y;
  a.diff_output = &dy;
  a.weights = &w;
  a.bias = &b;
  a.diff_weights = &dw;
  a.diff_bias = &db;
  const auto once = [&] {
    if (pass == 0) runner->forward(a);
    if (pass == 1) runner->backward_data(a);
    if (pass == 2) runner->backward_weight(a);
  };
  once();
  for (auto _ : state) once();
  const LayerWork work = layer.work(kBatch);
  const double flops = (pass == 0 ? work.forward : pass == 1 ? work.backward_data : work.backward_weight)
                           .flops.value();
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

#ifdef RALP_BENCH_OPENBLAS
// FC forward as OpenBLAS SGEMM: Y [8 x out] = X [8 x in] W^T.
void run_sgemm(benchmark::State& state, const Layer& layer, int threads) {
  openblas_set_num_threads(threads);
  const int in = static_cast<int>(layer.input_shapes.front().elements());
  const int out = static_cast<int>(layer.output.channels);
  std::vector<float> x(static_cast<size_t>(kBatch) * in, 0.5F), w(static_cast<size_t>(in) * out, 0.01F),
      y(static_cast<size_t>(kBatch) * out);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kBatch, out, in, 1.0F, x.data(), in,
                w.data(), in, 0.0F, y.data(), out);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kBatch * in * out * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
#endif

// Prints as the console does and keeps each benchmark's median time (the mean when it ran once),
// by name, for the side-by-side table: CPU time on one thread, whose kernels run on the calling
// thread alone (other jobs' load on the machine then leaves it nearly unchanged, where real time
// grows with the load), real time on several.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (median || (r.run_type == Run::RT_Iteration && r.repetitions <= 1)) {
        const bool one_thread = r.run_name.function_name.ends_with("/threads:1");
        times_[r.run_name.str()] = one_thread ? r.GetAdjustedCPUTime() : r.GetAdjustedRealTime();
      }
    }
  }
  [[nodiscard]] const std::map<std::string, double>& times() const { return times_; }

 private:
  std::map<std::string, double> times_;
};

struct PassRow {
  std::string name;  // model/layer/pass
  int threads;
  CpuPassLayout automatic;
};

std::string run_name(const PassRow& row, CpuPassLayout layout) {
  return row.name + "/" + layout_name(layout) + "/threads:" + std::to_string(row.threads) +
         "/real_time";
}

// Each pass's two layouts side by side: times in ms (CPU time on one thread, real time on more),
// the automatic choice starred, and the chosen layout's time over the other's.
void print_layout_table(const std::vector<PassRow>& rows, const std::map<std::string, double>& times) {
  std::printf("\n%-36s %7s %14s %14s %8s\n", "pass (* = automatic choice)", "threads",
              "channels_last", "blocked", "chosen/other");
  for (const PassRow& row : rows) {
    const auto cl = times.find(run_name(row, CpuPassLayout::channels_last));
    const auto bl = times.find(run_name(row, CpuPassLayout::blocked));
    if (cl == times.end() || bl == times.end()) continue;  // filtered out
    const bool blocked = row.automatic == CpuPassLayout::blocked;
    const double chosen = blocked ? bl->second : cl->second;
    const double other = blocked ? cl->second : bl->second;
    std::printf("%-36s %7d %12.2f%s %12.2f%s %8.2fx\n", row.name.c_str(), row.threads, cl->second,
                blocked ? "  " : " *", bl->second, blocked ? " *" : "  ", chosen / other);
  }
}

std::vector<PassRow> register_all() {
  std::vector<PassRow> rows;
  const char* passes[] = {"forward", "backward_data", "backward_weight"};
  for (const char* model : {"vgg16", "alexnet"}) {
    const LayerGraph g = *zoo_model(model);
    std::set<std::string> seen;
    for (const Layer& layer : g.layers()) {
      const bool conv = layer.kind() == LayerKind::conv2d;
      if (!conv && layer.kind() != LayerKind::fully_connected) continue;
      if (!seen.insert(layer.signature()).second) continue;
      for (const int threads : {1, 2}) {
        for (int pass = 0; pass < 3; ++pass) {
          if (pass == 1 && !layer.needs_input_gradient) continue;
          const std::string base = std::string(model) + "/" + layer.name() + "/" + passes[pass];
          rows.push_back({base, threads,
                          kernels::automatic_cpu_pass_layout(layer, static_cast<KernelPass>(pass))});
          for (const CpuPassLayout layout : kLayouts) {
            const std::string name =
                base + "/" + layout_name(layout) + "/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), [layer, threads, pass, layout](benchmark::State& s) {
              run_layer(s, layer, threads, pass, layout);
            })->UseRealTime()->Unit(benchmark::kMillisecond);
          }
        }
#ifdef RALP_BENCH_OPENBLAS
        if (!conv) {
          const std::string name = std::string(model) + "/" + layer.name() +
                                   "/forward_openblas_sgemm/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), [layer, threads](benchmark::State& s) {
            run_sgemm(s, layer, threads);
          })->UseRealTime()->Unit(benchmark::kMillisecond);
        }
#endif
      }
    }
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const auto provenance = ralp::kernels::make_cpu_backend(1)->provenance();
  for (const auto& [key, value] : provenance) {
    if (key != "threads") benchmark::AddCustomContext(key, value);
  }
  benchmark::AddCustomContext("batch", std::to_string(kBatch));
  benchmark::AddCustomContext("loadavg_start", loadavg());
  const std::vector<PassRow> rows = register_all();
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  print_layout_table(rows, collector.times());
  std::cerr << "loadavg_end: " << loadavg() << '\n';
  benchmark::Shutdown();
  return 0;
}
