// Achieved GFLOP/s of the CPU backend on VGG-16's and AlexNet's convolution and FC layers at
// batch 8, on one thread and two, each pass separately; OpenBLAS SGEMM on the FC layers for
// comparison. The context records the machine's load before the run (and stderr after it).
//   build/bench/ralp_kernels_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

#ifdef RALP_BENCH_OPENBLAS
#include <cblas.h>
#endif

#include "ralp/core/model_zoo.hpp"
#include "ralp/kernels/backend.hpp"

namespace {

using namespace ralp;

constexpr int64_t kBatch = 8;

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

kernels::Backend& backend(int threads) {
  static std::map<int, std::unique_ptr<kernels::Backend>> made;
  auto& b = made[threads];
  if (!b) b = kernels::make_cpu_backend(threads);
  return *b;
}

// One layer's tensors on a backend; `pass` 0 forward, 1 backward-data, 2 backward-weight.
void run_layer(benchmark::State& state, const Layer& layer, int threads, int pass) {
  kernels::Backend& be = backend(threads);
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

void register_all() {
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
          const std::string name = std::string(model) + "/" + layer.name() + "/" + passes[pass] +
                                   "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), [layer, threads, pass](benchmark::State& s) {
            run_layer(s, layer, threads, pass);
          })->UseRealTime()->Unit(benchmark::kMillisecond);
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
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  std::cerr << "loadavg_end: " << loadavg() << '\n';
  benchmark::Shutdown();
  return 0;
}
