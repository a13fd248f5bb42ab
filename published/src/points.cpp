// The published single-GPU points as scenarios, and the report of their predictions.
#include "ralp/published/points.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "ralp/model/model_zoo.hpp"
#include "ralp/published/fit.hpp"

namespace ralp::published {
namespace {

// Where each published setup keeps its variables: on the host's CPU or on the GPU.
bool on_host(const ThroughputRow& row, const std::map<std::string, bool>& by_model_at_64) {
  const std::string& u = row.variable_update;
  if (u.find("as above") != std::string::npos) return by_model_at_64.at(row.system + "/" + row.model);
  return u.find("cpu") != std::string::npos || u.starts_with("distributed_replicated");
}

// The host CPU profile of each system whose rows keep variables on the host.
std::string host_profile(const std::string& system) {
  return system == "DGX-1" ? "xeon-e5-2698v4-x2" : "xeon-e5-2686v4";
}

std::string slug(std::string text) {
  std::string out;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

Json scenario_of(const Point& p) {
  Json cluster = {{"workers", 1},
                  {"worker_device", p.row.gpu},
                  {"platform", {{"kind", "star"}, {"nic_bandwidth", "10Gbps"}, {"latency", "50us"}}}};
  Json strategy = "allreduce";
  if (p.variables_on_host) {
    cluster["parameter_servers"] = 1;
    cluster["ps_device"] = host_profile(p.row.system);
    // The PS is the host itself: its "link" is host memory, too fast to matter; the step pays
    // the PCIe copies of every parameter and gradient and the update on the host.
    cluster["platform"] = {{"kind", "star"}, {"nic_bandwidth", "10TB/s"}, {"latency", "0us"}};
    strategy = "ps";
  } else {
    cluster["parameter_servers"] = 0;
  }
  return {{"name", p.name},
          {"model", p.zoo_model},
          {"batch_per_worker", p.row.batch},
          {"cluster", cluster},
          {"network_model", "ideal"},
          {"strategies", Json::array({strategy})},
          {"steps", 1},
          {"warmup_steps", 0},
          {"seed", 1}};
}

std::string ms(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << seconds * 1e3;
  return out.str();
}


// The GPUs' fabric inside each machine: the DGX-1's NVLink cube-mesh, NVSwitch on DGX-2, DGX A100
// and DGX H100 (docs/fabrics.md).
constexpr const char* kSwitchFabric = "nvswitch";
Json machine_interconnect(const std::string& system) {
  // NVIDIA DGX-1 with Tesla V100 System Architecture white paper WP-08437-002 (2017): 6 NVLinks
  // of 25 GB/s per direction each (as scenarios/modern/vgg16-dgx1-v100-4x8.json).
  if (system == "DGX-1") {
    return {{"kind", "nvlink"}, {"bandwidth", "150GBps"}, {"links_per_device", 6}, {"latency", "1us"}};
  }
  // NVIDIA DGX-2 datasheet (2018): each V100's 6 NVLinks of 25 GB/s per direction to NVSwitch.
  if (system == "DGX-2") return {{"kind", kSwitchFabric}, {"bandwidth", "150GBps"}, {"latency", "1us"}};
  // NVIDIA DGX A100 datasheet (2020): 600 GB/s per GPU both ways (as scenarios/modern/).
  if (system == "DGX A100") return {{"kind", kSwitchFabric}, {"bandwidth", "300GBps"}, {"latency", "1us"}};
  // NVIDIA DGX H100 datasheet (2022): 900 GB/s per GPU both ways (18 NVLink 4 links).
  if (system == "DGX H100") return {{"kind", kSwitchFabric}, {"bandwidth", "450GBps"}, {"latency", "1us"}};
  return nullptr;
}

// Why a DLE row is no scenario, or "" for a point.
std::string dle_exclusion(const DlePoint& p) {
  const DleRow& r = p.row;
  if (!zoo_model(p.zoo_model)) return "model not in the zoo (" + p.zoo_model + ")";
  if (r.batch == 0) return "no batch given";
  if (!r.precision) return "precision not stated (" + r.precision_name + ")";
  if (r.nodes > 1) {
    return std::to_string(r.nodes) + " machines" + (r.nodes_inferred ? " (inferred)" : "") +
           ": the network between them is not described";
  }
  if (p.profile.empty()) return "no profile for GPU " + r.gpu;
  if (r.gpus > 1 && machine_interconnect(r.system).is_null()) return "machine " + r.system + " not described";
  return "";
}

Json dle_scenario(const DlePoint& p) {
  const DleRow& r = p.row;
  Json cluster = {{"workers", r.gpus},
                  {"worker_device", p.profile},
                  {"parameter_servers", 0},
                  {"platform", {{"kind", "star"}, {"nic_bandwidth", "10Gbps"}, {"latency", "50us"}}}};
  if (r.gpus > 1) {
    cluster["devices_per_node"] = r.gpus;
    cluster["node_interconnect"] = machine_interconnect(r.system);
  }
  std::ostringstream source;
  source << (p.mlperf ? "mlcommons/training_results_v3.0" : "NVIDIA/DeepLearningExamples") << " at "
         << r.commit.substr(0, 8) << ", " << r.system << ", " << r.gpu << ": " << r.images_per_s
         << " images/s published (" << r.where << ")";
  return {{"name", p.name},
          {"source", source.str()},
          {"model", p.zoo_model},
          {"batch_per_worker", r.batch},
          {"precision", std::string(to_string(*r.precision))},
          {"cluster", cluster},
          {"network_model", "ideal"},
          // One GPU all-reduces nothing: no transport (the analytic model predicts it).
          {"strategies", r.gpus > 1 ? Json::array({{{"name", "allreduce"}, {"algorithm", "ring"}, {"transport", "nccl"}}})
                                    : Json::array({"allreduce"})},
          {"steps", r.gpus > 1 ? 2 : 1},
          {"warmup_steps", r.gpus > 1 ? 1 : 0},
          {"seed", 1}};
}

}  // namespace

std::vector<Point> single_gpu_points(const std::filesystem::path& dir) {
  std::vector<ThroughputRow> rows = read_tf_cnn_benchmarks(dir / "tf-cnn-benchmarks-2017.csv");
  const std::vector<ThroughputRow> horovod = read_horovod(dir / "horovod-readme-2017.csv");
  rows.insert(rows.end(), horovod.begin(), horovod.end());
  std::map<std::string, bool> by_model_at_64;
  for (const ThroughputRow& row : rows) {
    if (row.gpus == 1 && row.batch == 64 && row.variable_update.find("as above") == std::string::npos) {
      by_model_at_64[row.system + "/" + row.model] =
          row.variable_update.find("cpu") != std::string::npos;
    }
  }
  std::vector<Point> points;
  for (const ThroughputRow& row : rows) {
    if (row.gpus != 1 || row.data != "synthetic") continue;
    Point p;
    p.row = row;
    p.zoo_model = zoo_name(row.model);
    p.variables_on_host = on_host(row, by_model_at_64);
    p.name = slug(row.source.substr(0, row.source.find(' ')) + " " + row.system + " " + row.model +
                  " b" + std::to_string(row.batch));
    p.scenario = scenario_of(p);
    points.push_back(std::move(p));
  }
  return points;
}

std::vector<DlePoint> dle_points(const std::filesystem::path& dir) {
  std::vector<DleRow> rows = read_dle(dir / "dle-pytorch-convnets.csv");
  const size_t dle_rows = rows.size();
  rows.push_back(read_mlperf(dir / "mlperf-h100-declared.csv"));
  std::vector<DlePoint> points;
  std::set<std::string> names;
  for (size_t i = 0; i < rows.size(); ++i) {
    DlePoint p;
    p.row = rows[i];
    p.mlperf = i >= dle_rows;
    p.target = !p.mlperf && p.row.commit.starts_with(kDleTargetCommit);
    p.zoo_model = dle_zoo_name(p.row.model);
    p.profile = dle_profile(p.row.gpu);
    p.excluded = dle_exclusion(p);
    if (p.excluded.empty()) {
      p.name = slug((p.mlperf ? "mlperf " : "dle ") + p.row.commit.substr(0, 8) + " " + p.row.model +
                    " " + p.profile + " " + std::to_string(p.row.gpus) + "gpu " + p.row.precision_name +
                    " b" + std::to_string(p.row.batch));
      // The ConvNets summary README repeats its models' own READMEs' rows: the first is the point.
      if (!names.insert(p.name).second) p.excluded = "the same row as " + p.name + " (another README)";
    }
    if (p.excluded.empty()) {
      p.scenario = dle_scenario(p);
    } else {
      p.name.clear();
    }
    points.push_back(std::move(p));
  }
  return points;
}

std::string points_csv(const std::vector<Prediction>& predictions) {
  std::ostringstream out;
  out << "source,system,gpu,model,zoo_model,batch,variables,published_images_per_s,"
         "published_step_ms,predicted_step_ms,error,error_without_framework,profile_source,where\n";
  for (const Prediction& p : predictions) {
    const ThroughputRow& r = p.point->row;
    out << r.source << ",\"" << r.system << "\"," << r.gpu << ',' << r.model << ','
        << p.point->zoo_model << ',' << r.batch << ',' << (p.point->variables_on_host ? "host" : "gpu")
        << ',' << r.images_per_s << ',' << ms(p.point->published_step()) << ','
        << ms(p.predicted_step) << ',' << std::fixed << std::setprecision(4) << p.error() << ','
        << (p.predicted_without_framework / p.point->published_step() - 1.0) << ','
        << p.profile_source << ',' << r.where << '\n';
    out.unsetf(std::ios::fixed);
  }
  return out.str();
}

}  // namespace ralp::published
