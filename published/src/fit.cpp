// Fitting GPU kernel models to published kernel timings (NLopt: CRS2 globally, then Subplex).
#include "ralp/published/fit.hpp"

#include <nlopt.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ralp/core/json_input.hpp"
#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/published_model.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp::published {
namespace {

constexpr int kLocalEvaluations = 4000;

// The zoo layer a convnet-benchmarks row times, as the cost model is asked about it.
const LayerKey& layer_key(const KernelRow& row) {
  static std::map<std::string, LayerKey> cache;
  const std::string id = row.model + "/" + row.layer + "/" + std::to_string(row.batch);
  auto it = cache.find(id);
  if (it == cache.end()) {
    const auto graph = zoo_model(row.model);
    if (!graph) throw std::invalid_argument(row.where + ": no zoo model \"" + row.model + "\"");
    const auto layer = graph->find(row.layer);
    if (!layer) throw std::invalid_argument(row.where + ": " + row.model + " has no layer " + row.layer);
    it = cache.emplace(id, make_layer_key(graph->layer(*layer), row.batch)).first;
  }
  return it->second;
}

double log_error_sum(const std::vector<const KernelRow*>& rows, const GpuShape& gpu,
                     const GpuKernelParams& p) {
  double sum = 0.0;
  for (const KernelRow* row : rows) {
    const double e = std::log(predict(*row, gpu, p) / row->measured);
    sum += e * e;
  }
  return sum;
}

struct Problem {
  const std::vector<const KernelRow*>* rows;
  const GpuShape* gpu;
  std::vector<size_t> free;  // the fitted parameters' indices, in kKernelParamBounds' order
  std::array<double, kKernelParamCount> held;
};

Problem make_problem(const std::vector<const KernelRow*>& rows, const GpuShape& gpu,
                     const FitOptions& options) {
  Problem problem{&rows, &gpu, {}, as_array(options.held)};
  for (size_t i = 0; i < kKernelParamCount; ++i) {
    if (options.fitted[i]) problem.free.push_back(i);
  }
  return problem;
}

// The parameters at unit point `x` (one coordinate per fitted parameter, 0 at its lower bound and
// 1 at its upper).
GpuKernelParams from_unit(const Problem& problem, const std::vector<double>& x) {
  std::array<double, kKernelParamCount> v = problem.held;
  for (size_t j = 0; j < problem.free.size(); ++j) {
    const size_t i = problem.free[j];
    v[i] = kKernelParamBounds[i].low + x[j] * (kKernelParamBounds[i].high - kKernelParamBounds[i].low);
  }
  return params_from_array(v);
}

// The unit point of `params`' fitted parameters.
std::vector<double> to_unit(const Problem& problem, const GpuKernelParams& params) {
  const auto v = as_array(params);
  std::vector<double> x;
  for (const size_t i : problem.free) {
    x.push_back((v[i] - kKernelParamBounds[i].low) / (kKernelParamBounds[i].high - kKernelParamBounds[i].low));
  }
  return x;
}

double objective(const std::vector<double>& x, std::vector<double>& /*grad*/, void* data) {
  const auto* problem = static_cast<const Problem*>(data);
  return log_error_sum(*problem->rows, *problem->gpu, from_unit(*problem, x));
}

// Whether a row times work a training step runs: a first layer's data gradient (3 input
// channels) is never computed.
bool runs_in_training(const KernelRow& row) {
  return !(row.kind == KernelRow::Kind::conv && row.conv_pass == ConvPass::backward_data &&
           row.conv.in_channels <= 3);
}

std::vector<const KernelRow*> rows_of(const std::string& gpu, const std::vector<KernelRow>& all,
                                      Precision precision) {
  std::vector<const KernelRow*> out;
  for (const KernelRow& row : all) {
    if (row.device == gpu && row.precision == precision && runs_in_training(row)) out.push_back(&row);
  }
  return out;
}

void summarise(GpuFit& fit) {
  std::vector<double> errors, loso;
  for (const RowResult& r : fit.rows) {
    errors.push_back(std::abs(r.error));
    loso.push_back(std::abs(r.loso_error));
  }
  fit.median = median(errors);
  fit.max = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
  fit.loso_median = median(loso);
  fit.loso_max = loso.empty() ? 0.0 : *std::max_element(loso.begin(), loso.end());
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Seconds predict(const KernelRow& row, const GpuShape& gpu, const GpuKernelParams& p) {
  switch (row.kind) {
    case KernelRow::Kind::conv:
      return conv_pass_time(row.conv, row.conv_pass, gpu, p, row.algorithms).seconds;
    case KernelRow::Kind::gemm:
      return gemm_time(row.m, row.n, row.k, gpu, p);
    case KernelRow::Kind::layer: {
      const LayerCost cost = gpu_layer_cost(layer_key(row), gpu, p, Seconds(0.0), row.algorithms);
      return row.pass == "forward" ? cost.forward : cost.backward();
    }
  }
  return Seconds(0.0);
}

namespace {
// The local polish (Subplex) from unit point `x`: the point and its objective.
std::pair<std::vector<double>, double> polish(Problem& problem, std::vector<double> x) {
  const auto n = static_cast<unsigned>(problem.free.size());
  double value = 0.0;
  nlopt::opt local(nlopt::LN_SBPLX, n);
  local.set_lower_bounds(0.0);
  local.set_upper_bounds(1.0);
  local.set_min_objective(objective, &problem);
  local.set_maxeval(kLocalEvaluations);
  local.set_xtol_rel(1e-6);
  try {
    local.optimize(x, value);
  } catch (const nlopt::roundoff_limited&) {
  }
  return {x, value};
}

// One global search (CRS2) from `seed`, polished locally (Subplex): the unit point and its
// objective.
std::pair<std::vector<double>, double> search_from(Problem& problem, unsigned seed,
                                                   int global_evaluations) {
  nlopt::srand(seed);
  const auto n = static_cast<unsigned>(problem.free.size());
  std::vector<double> x(n, 0.5);
  double value = 0.0;
  nlopt::opt global(nlopt::GN_CRS2_LM, n);
  global.set_lower_bounds(0.0);
  global.set_upper_bounds(1.0);
  global.set_min_objective(objective, &problem);
  global.set_maxeval(global_evaluations);
  try {
    global.optimize(x, value);
  } catch (const nlopt::roundoff_limited&) {  // keeps the best point found
  }
  return polish(problem, x);
}
}  // namespace

// The objective has several local minima that one global search of a few thousand evaluations
// cannot tell apart (titanx-maxwell's best two differ by 20%), so the search starts from
// `options.starts` seeds and keeps the lowest minimum; a tie keeps the earlier seed.
GpuKernelParams fit_params(const std::vector<const KernelRow*>& rows, const GpuShape& gpu,
                           const FitOptions& options) {
  Problem problem = make_problem(rows, gpu, options);
  auto [best, best_value] = search_from(problem, options.seed, options.global_evaluations);
  for (int i = 1; i < options.starts; ++i) {
    auto [x, value] = search_from(problem, options.seed + static_cast<unsigned>(i),
                                  options.global_evaluations);
    if (value < best_value) {
      best = std::move(x);
      best_value = value;
    }
  }
  return from_unit(problem, best);
}

namespace {
struct LocalProblem {
  const std::function<double(const std::vector<double>&)>* f;
  size_t n;
};
double local_objective(unsigned, const double* at, double*, void* data) {
  const auto& p = *static_cast<const LocalProblem*>(data);
  return (*p.f)(std::vector<double>(at, at + p.n));
}
}  // namespace

std::vector<double> minimize_locally(const std::function<double(const std::vector<double>&)>& f,
                                     std::vector<double> x, const std::vector<double>& lower,
                                     const std::vector<double>& upper, int evaluations) {
  LocalProblem problem{&f, x.size()};
  nlopt::opt local(nlopt::LN_SBPLX, static_cast<unsigned>(x.size()));
  local.set_lower_bounds(lower);
  local.set_upper_bounds(upper);
  local.set_min_objective(local_objective, &problem);
  local.set_maxeval(evaluations);
  local.set_xtol_rel(1e-3);
  double value = 0.0;
  try {
    local.optimize(x, value);
  } catch (const nlopt::roundoff_limited&) {  // keeps the best point found
  }
  return x;
}

namespace {
// The fit without one shape's rows: `starts` global searches, or one polish from the full fit.
GpuKernelParams leave_out_fit(const std::vector<const KernelRow*>& kept, const GpuShape& gpu,
                              const FitOptions& options, const GpuKernelParams& full) {
  if (!options.leave_out_from_full_fit) return fit_params(kept, gpu, options);
  Problem problem = make_problem(kept, gpu, options);
  return from_unit(problem, polish(problem, to_unit(problem, full)).first);
}
}  // namespace

GpuFit check_gpu(const std::string& name, const std::vector<KernelRow>& all, const GpuShape& gpu,
                 const GpuKernelParams& params, Precision precision) {
  GpuFit fit{name, params, {}, 0, 0, 0, 0};
  for (const KernelRow* row : rows_of(name, all, precision)) {
    const Seconds predicted = predict(*row, gpu, params);
    const double error = predicted / row->measured - 1.0;
    fit.rows.push_back({row, predicted, error, error});
  }
  summarise(fit);
  return fit;
}

GpuFit fit_gpu(const std::string& name, const std::vector<KernelRow>& all, const GpuShape& gpu,
               const FitOptions& options, Precision precision) {
  const std::vector<const KernelRow*> rows = rows_of(name, all, precision);
  GpuFit fit = check_gpu(name, all, gpu, fit_params(rows, gpu, options), precision);
  if (!options.leave_one_shape_out) return fit;
  std::set<std::string> shapes;
  for (const KernelRow* row : rows) shapes.insert(row->shape);
  for (const std::string& shape : shapes) {
    std::vector<const KernelRow*> kept;
    for (const KernelRow* row : rows) {
      if (row->shape != shape) kept.push_back(row);
    }
    const GpuKernelParams without = leave_out_fit(kept, gpu, options, fit.params);
    for (RowResult& r : fit.rows) {
      if (r.row->shape == shape) r.loso_error = predict(*r.row, gpu, without) / r.row->measured - 1.0;
    }
  }
  summarise(fit);
  return fit;
}

std::string residuals_csv(const FitOutcome& outcome) {
  std::ostringstream out;
  out << "gpu,fitted_on,where,shape,pass,measured_ms,predicted_ms,error,loso_error\n";
  auto write = [&out](const GpuFit& fit, const std::string& fitted_on) {
    for (const RowResult& r : fit.rows) {
      out << fit.gpu.substr(0, fit.gpu.find(' ')) << ',' << fitted_on << ',' << r.row->where << ",\""
          << r.row->shape << "\"," << r.row->pass << ',' << r.row->measured.value() * 1e3 << ','
          << r.predicted.value() * 1e3 << ',' << r.error << ',' << r.loso_error << '\n';
    }
  };
  for (const GpuFit& fit : outcome.fits) write(fit, fit.gpu);
  for (const GpuFit& fit : outcome.derivation_checks) {
    write(fit, fit.gpu.substr(fit.gpu.rfind(' ') + 1));
  }
  for (const GpuFit& fit : outcome.tensor_fits) write(fit, fit.gpu);
  return out.str();
}

}  // namespace ralp::published
