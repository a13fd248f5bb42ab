// The DeepLearningExamples check: every DLE point beside its prediction, summaries per GPU,
// precision and model, 1-to-8-GPU scaling, the fitting rows, MLPerf's H100 row and the rows
// not run, as Markdown and CSV.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "ralp/published/fit.hpp"
#include "ralp/published/points.hpp"
#include "report_format.hpp"

namespace ralp::published {
namespace {

// Median and max of |x| over a group, as "n points, median a%, max b%" (`unit` " points": x in
// fractions, shown as percentage points).
std::string summary(const std::vector<double>& xs, const std::string& unit = "%",
                    const std::string& noun = "point") {
  std::vector<double> a;
  for (const double x : xs) a.push_back(std::abs(x) * 100.0);
  if (a.empty()) return "none";
  std::ostringstream out;
  out << a.size() << ' ' << noun << (a.size() == 1 ? "" : "s") << ", median " << std::fixed
      << std::setprecision(1) << median(a) << unit << ", max " << *std::max_element(a.begin(), a.end())
      << unit;
  return out.str();
}

std::string precision_label(const DleRow& r) {
  return r.precision == Precision::fp16 ? "AMP (fp16)" : r.precision == Precision::tf32 ? "TF32" : "FP32";
}

std::string revision(const DleRow& r) { return r.commit.substr(0, 8) + " (" + r.date + ")"; }

void points_table(std::ostringstream& out, const std::vector<const DlePrediction*>& group) {
  out << "| README revision | model | system | profile | GPUs | precision | batch | published img/s "
         "| predicted img/s | published step ms | predicted step ms | error |\n"
         "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (const DlePrediction* p : group) {
    const DleRow& r = p->point->row;
    out << "| " << revision(r) << " | " << p->point->zoo_model << " | " << r.system << " | "
        << p->point->profile << " | " << r.gpus << " | " << precision_label(r) << " | " << r.batch
        << " | " << r.images_per_s << " | " << fixed1(r.batch * r.gpus / p->predicted_step) << " | "
        << fixed1(p->point->published_step() * 1e3) << " | " << fixed1(p->predicted_step * 1e3)
        << " | " << pct(p->error(), true) << (r.fit ? " (fit row)" : "") << " |\n";
  }
  out << '\n';
}

// One 1-GPU and one 8-GPU point of the same revision, GPU, precision, model and batch.
struct ScalingPair {
  const DlePrediction* one = nullptr;
  const DlePrediction* eight = nullptr;
  [[nodiscard]] double published() const {
    return eight->point->row.images_per_s / (8.0 * one->point->row.images_per_s);
  }
  [[nodiscard]] double predicted() const { return one->predicted_step / eight->predicted_step; }
};

std::map<std::string, ScalingPair> scaling_pairs(const std::vector<const DlePrediction*>& group) {
  std::map<std::string, ScalingPair> pairs;
  for (const DlePrediction* p : group) {
    const DleRow& r = p->point->row;
    if (r.gpus != 1 && r.gpus != 8) continue;
    const std::string key = r.commit.substr(0, 8) + " | " + p->point->profile + " | " +
                            precision_label(r) + " | " + p->point->zoo_model + " | " + std::to_string(r.batch);
    (r.gpus == 1 ? pairs[key].one : pairs[key].eight) = p;
  }
  std::erase_if(pairs, [](const auto& kv) { return kv.second.one == nullptr || kv.second.eight == nullptr; });
  return pairs;
}

void scaling_table(std::ostringstream& out, const std::map<std::string, ScalingPair>& pairs) {
  out << "| README revision | profile | precision | model | batch | published 8-GPU efficiency | "
         "predicted | difference (points) |\n|---|---|---|---|---:|---:|---:|---:|\n";
  for (const auto& [key, pair] : pairs) {
    out << "| " << key << " | " << pct(pair.published()) << " | " << pct(pair.predicted()) << " | "
        << std::showpos << fixed1((pair.predicted() - pair.published()) * 100.0) << std::noshowpos << " |\n";
  }
  out << '\n';
}

// Median and max |error| per GPU, precision and model (the check's points, fit rows left out).
void group_summary(std::ostringstream& out, const std::vector<const DlePrediction*>& group) {
  std::map<std::string, std::vector<double>> by;
  for (const DlePrediction* p : group) {
    if (p->point->row.fit) continue;
    const DleRow& r = p->point->row;
    by[p->point->profile + " | " + precision_label(r) + " | " + p->point->zoo_model].push_back(p->error());
  }
  out << "| profile | precision | model | step-time error (every GPU count) |\n|---|---|---|---|\n";
  for (const auto& [key, errors] : by) out << "| " << key << " | " << summary(errors) << " |\n";
  out << '\n';
}

void check_section(std::ostringstream& out, const std::vector<const DlePrediction*>& target) {
  std::vector<double> one, eight, scaling, amp_published, amp_predicted;  // efficiencies
  for (const DlePrediction* p : target) {
    if (p->point->row.fit) continue;
    if (p->point->row.gpus == 1) one.push_back(p->error());
    if (p->point->row.gpus == 8) eight.push_back(p->error());
  }
  const auto pairs = scaling_pairs(target);
  std::vector<double> amp_gap;
  for (const auto& [key, pair] : pairs) {
    const bool amp = pair.one->point->row.precision == Precision::fp16;
    (amp ? amp_gap : scaling).push_back(pair.predicted() - pair.published());
    if (amp) amp_published.push_back(pair.published());
    if (amp) amp_predicted.push_back(pair.predicted());
  }
  const auto range = [](std::vector<double> v) {
    if (v.empty()) return std::string("none");
    std::sort(v.begin(), v.end());
    return pct(v.front()) + " to " + pct(v.back());
  };
  out << "## The check: README revision " << kDleTargetCommit << "\n\n"
      << "Step time, |error| (targets: median 10%, max 25%; the two fit rows left out):\n\n"
      << "- **1 GPU: " << summary(one) << "**\n"
      << "- **8 GPUs of one machine: " << summary(eight) << "**\n"
      << "- **1-to-8-GPU scaling efficiency, FP32 and TF32, predicted against published: "
      << summary(scaling, " points", "pair") << "** (targets: median 5, max 10 points)\n"
      << "- AMP's 1-to-8-GPU scaling efficiency: published " << range(amp_published) << ", predicted "
      << range(amp_predicted) << " (" << summary(amp_gap, " points", "pair")
      << "). Shown, not a target: their all-reduce is a small part of the step, and what bounds "
         "the published efficiency is the host's input pipeline (real ImageNet decoded with DALI "
         "on the host's CPUs), which no part of ralp models yet; nothing is tuned to it.\n\n"
      << "Per profile, precision and model:\n\n";
  group_summary(out, target);
  out << "1-to-8-GPU scaling efficiency (8-GPU images/s over 8 x 1-GPU images/s):\n\n";
  scaling_table(out, pairs);
  points_table(out, target);
}

void fit_rows_section(std::ostringstream& out, const std::vector<const DlePrediction*>& target) {
  out << "## Fitting rows\n\nThe rows marked fit (DGX A100 80 GB, ResNet-50 v1.5, 1 GPU, TF32 and "
         "AMP) fit the A100's two architecture efficiencies (TF32, FP16), one parameter each "
         "(`ralp published fit`, published/gpus.json's architecture_rows): two rows for two "
         "parameters, so their residual is zero by construction, within the bisection's tolerance "
         "and the efficiency's four significant figures. They are left out of every summary above.\n\n";
  for (const DlePrediction* p : target) {
    if (!p->point->row.fit) continue;
    const DleRow& r = p->point->row;
    out << "- " << r.where << ": " << p->point->zoo_model << ", " << precision_label(r) << ", batch "
        << r.batch << ", " << r.images_per_s << " images/s published, "
        << fixed1(r.batch / p->predicted_step) << " predicted (" << pct(p->error(), true) << ")\n";
  }
  out << '\n';
}

void mlperf_section(std::ostringstream& out, const std::vector<DlePrediction>& predictions) {
  for (const DlePrediction& p : predictions) {
    if (!p.point->mlperf) continue;
    const DleRow& r = p.point->row;
    out << "## MLPerf's DGX H100 (shown, not fitted)\n\n"
           "mlcommons/training_results_v3.0 at " << r.commit.substr(0, 8)
        << ", NVIDIA's closed-division DGX H100 ResNet-50 v1.5 (MXNet, float16, DALI, batch "
        << r.batch << " per GPU, " << r.gpus << " GPUs): " << r.images_per_s
        << " images/s declared. ralp, on the `h100` profile (derived by datasheet, no fit of its "
           "own) on the DGX H100's NVSwitch, predicts "
        << fixed1(r.batch * r.gpus / p.predicted_step) << " images/s (" << pct(p.error(), true)
        << " in step time). MLPerf's code is tuned far beyond ordinary training scripts (fused "
           "kernels, NHWC, CUDA graphs): an upper bound on a framework's speed, set beside the "
           "prediction and never fitted.\n\n";
  }
}

void excluded_section(std::ostringstream& out, const std::vector<DlePoint>& points) {
  std::map<std::string, int> reasons;
  for (const DlePoint& p : points) {
    if (p.excluded.empty()) continue;
    const auto paren = p.excluded.find(" (");
    ++reasons[p.excluded.starts_with("model not") || p.excluded.starts_with("the same row")
                  ? p.excluded.substr(0, paren)
                  : p.excluded];
  }
  out << "## Rows not run\n\n| reason | rows |\n|---|---:|\n";
  for (const auto& [reason, n] : reasons) out << "| " << reason << " | " << n << " |\n";
  out << "\nModels not in the zoo:";
  std::map<std::string, int> models;
  for (const DlePoint& p : points) {
    if (p.excluded.starts_with("model not")) ++models[p.row.model];
  }
  for (const auto& [model, n] : models) out << ' ' << model << " (" << n << ")";
  out << ".\n";
}

}  // namespace

std::string dle_report_markdown(const std::vector<DlePoint>& points,
                                const std::vector<DlePrediction>& predictions,
                                const std::string& command) {
  std::vector<const DlePrediction*> target;
  std::map<std::string, std::vector<const DlePrediction*>> older;
  for (const DlePrediction& p : predictions) {
    if (p.point->mlperf) continue;
    if (p.point->target) {
      target.push_back(&p);
    } else {
      older[p.point->row.date + " " + p.point->row.commit.substr(0, 8)].push_back(&p);
    }
  }
  std::ostringstream out;
  out << "# NVIDIA DeepLearningExamples' PyTorch ConvNets training speeds against ralp's predictions\n\n"
      << "Generated by `" << command << "`; do not edit. Each point is a row of NVIDIA "
         "DeepLearningExamples' PyTorch ConvNets READMEs (published/dle-pytorch-convnets.csv: real "
         "ImageNet, the table's images/s over all GPUs) whose model the zoo has, run as the "
         "scenario in `scenarios/published/dle/`: the row's GPUs on one machine's NVLink "
         "(DGX-1) or NVSwitch (DGX-2, DGX A100), all-reduce by NCCL's ring, the row's precision "
         "(AMP as fp16) and batch per GPU, on the row's GPU profile (v100, v100-32gb, v100-sxm3, "
         "a100-40gb, a100-80gb; docs/gpu-compute.md says how each is made). One-GPU points are "
         "predicted by the analytic model, the others simulated event by event. The error is "
         "predicted step / published step - 1, the published step being batch x GPUs / images "
         "per second.\n\n";
  check_section(out, target);
  fit_rows_section(out, target);
  mlperf_section(out, predictions);
  out << "## Older README revisions (shown, not targeted)\n\n"
         "Older containers. Before pytorch-20.12 (2021-03-04) the READMEs' AMP ran apex's FP16 or "
         "AMP in NCHW, where cuDNN transposes each tensor-op convolution's tensors to NHWC and "
         "back, kernels this model does not price (it takes the layout channels-last).\n\n";
  for (const auto& [key, group] : older) {
    std::vector<double> errors;
    for (const DlePrediction* p : group) errors.push_back(p->error());
    out << "### " << revision(group.front()->point->row) << ": " << summary(errors) << "\n\n";
    const auto pairs = scaling_pairs(group);
    if (!pairs.empty()) scaling_table(out, pairs);
    points_table(out, group);
  }
  excluded_section(out, points);
  return out.str();
}

std::string dle_points_csv(const std::vector<DlePrediction>& predictions) {
  std::ostringstream out;
  out << "scenario,commit,model,system,gpu,profile,gpus,precision,batch,role,target,"
         "published_images_per_s,published_step_ms,predicted_step_ms,error,where\n";
  for (const DlePrediction& p : predictions) {
    const DleRow& r = p.point->row;
    out << p.point->name << ',' << r.commit << ',' << p.point->zoo_model << ",\"" << r.system << "\","
        << r.gpu << ',' << p.point->profile << ',' << r.gpus << ',' << r.precision_name << ','
        << r.batch << ',' << (p.point->mlperf ? "shown" : r.fit ? "fit" : "check") << ','
        << (p.point->target ? "yes" : "no") << ',' << r.images_per_s << ','
        << fixed1(p.point->published_step() * 1e3) << ',' << fixed1(p.predicted_step * 1e3) << ','
        << std::fixed << std::setprecision(4) << p.error() << std::defaultfloat
        << std::setprecision(6) << ',' << r.where << '\n';
  }
  return out.str();
}

}  // namespace ralp::published
