// The published single-GPU points as scenarios, and the report of their predictions.
#include "ralp/published/points.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

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
  std::vector<DlePoint> points;
  for (const DleRow& row : read_dle(dir / "dle-pytorch-rn50-v100.csv")) {
    DlePoint p;
    p.row = row;
    p.target = row.commit.starts_with(kDleTargetCommit);
    const std::string precision(row.precision == Precision::fp32 ? "fp32" : "amp");
    p.name = slug("dle " + row.commit.substr(0, 8) + " " + row.gpu + " rn50 " + precision + " b" +
                  std::to_string(row.batch));
    p.scenario = {{"name", p.name},
                  {"model", "resnet50"},
                  {"batch_per_worker", row.batch},
                  {"precision", std::string(to_string(row.precision))},
                  {"cluster", {{"workers", 1},
                               {"worker_device", "v100"},
                               {"parameter_servers", 0},
                               {"platform", {{"kind", "star"}, {"nic_bandwidth", "10Gbps"}, {"latency", "50us"}}}}},
                  {"network_model", "ideal"},
                  {"strategies", Json::array({"allreduce"})},
                  {"steps", 1},
                  {"warmup_steps", 0},
                  {"seed", 1}};
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
