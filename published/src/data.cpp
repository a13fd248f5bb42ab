// Readers of the published measurements (Fast C++ CSV Parser for the tables, nlohmann/json for
// the GPU catalogue).
#include "ralp/published/data.hpp"
#include "ralp/published/cluster_points.hpp"

#define CSV_IO_NO_THREAD
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"  // inside the library's error messages
#include <libfccp/csv.h>
#pragma GCC diagnostic pop

#include <cctype>
#include <charconv>
#include <stdexcept>

#include "ralp/core/json_input.hpp"

namespace ralp::published {
namespace {

// A CSV file read row by row as strings, with errors that name the file and line.
template <unsigned Columns>
class Table {
 public:
  template <class... Names>
  Table(const std::filesystem::path& file, Names... names) : file_(file.string()) {
    try {
      reader_ = std::make_unique<Reader>(file_);
      reader_->read_header(io::ignore_extra_column, names...);
    } catch (const io::error::base& e) {
      throw InputError(file_, "", e.what());
    }
  }
  template <class... Fields>
  bool next(Fields&... fields) {
    try {
      return reader_->read_row(fields...);
    } catch (const io::error::base& e) {
      throw InputError(file_, "", e.what());
    }
  }
  [[nodiscard]] std::string where() const {
    return std::filesystem::path(file_).filename().string() + ":" +
           std::to_string(reader_->get_file_line());
  }
  double number(const std::string& text, std::string_view column) const {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      throw InputError(file_, "line " + std::to_string(reader_->get_file_line()),
                       "column " + std::string(column) + " is \"" + text + "\", expected a number");
    }
    return value;
  }
  int64_t integer(const std::string& text, std::string_view column) const {
    return static_cast<int64_t>(number(text, column));
  }

 private:
  using Reader = io::CSVReader<Columns, io::trim_chars<' '>, io::double_quote_escape<',', '"'>>;
  std::string file_;
  std::unique_ptr<Reader> reader_;
};

template <unsigned Columns>
KernelRow conv_row(const Table<Columns>& t, const std::string& device, const std::string& software,
                   const ConvShape& c, ConvPass pass, double ms) {
  KernelRow row;
  // cuDNN 5.0 ("cuDNN 5" in DeepBench's sheets) predates the non-fused Winograd algorithm.
  const bool cudnn_5_0 = software.find("cuDNN 5") != std::string::npos &&
                         software.find("cuDNN 5.1") == std::string::npos;
  row.algorithms.winograd_nonfused = !cudnn_5_0;
  row.kind = KernelRow::Kind::conv;
  row.device = device;
  row.where = t.where();
  row.shape = "conv " + std::to_string(c.width) + "x" + std::to_string(c.height) + "x" +
              std::to_string(c.in_channels) + " -> " + std::to_string(c.out_channels) + " " +
              std::to_string(c.kernel_h) + "x" + std::to_string(c.kernel_w) + " s" +
              std::to_string(c.stride_h) + " p" + std::to_string(c.pad_h) + " n" +
              std::to_string(c.batch);
  row.pass = std::string(to_string(pass));
  row.conv = c;
  row.conv_pass = pass;
  row.batch = c.batch;
  row.measured = Seconds(ms * 1e-3);
  return row;
}

}  // namespace

const GpuSpec& Catalogue::gpu(const std::string& name) const {
  for (const GpuSpec& g : gpus) {
    if (g.name == name) return g;
  }
  throw std::invalid_argument("published/gpus.json names no GPU \"" + name + "\"");
}

std::vector<KernelRow> read_deepbench_conv(const std::filesystem::path& file) {
  Table<17> t(file, "device", "software", "W", "H", "C", "N", "K", "R", "S", "pad_h", "pad_w",
              "stride_v", "stride_h", "fwd_ms", "bwd_data_ms", "bwd_filter_ms", "fwd_algo");
  std::string device, software, w, h, c, n, k, r, s, ph, pw, sv, sh, fwd, bwd_data, bwd_filter, algo;
  std::vector<KernelRow> rows;
  while (t.next(device, software, w, h, c, n, k, r, s, ph, pw, sv, sh, fwd, bwd_data, bwd_filter,
                algo)) {
    ConvShape shape;
    shape.width = t.integer(w, "W");
    shape.height = t.integer(h, "H");
    shape.in_channels = t.integer(c, "C");
    shape.batch = t.integer(n, "N");
    shape.out_channels = t.integer(k, "K");
    shape.kernel_h = static_cast<int>(t.integer(r, "R"));
    shape.kernel_w = static_cast<int>(t.integer(s, "S"));
    shape.pad_h = static_cast<int>(t.integer(ph, "pad_h"));
    shape.pad_w = static_cast<int>(t.integer(pw, "pad_w"));
    shape.stride_h = static_cast<int>(t.integer(sv, "stride_v"));
    shape.stride_w = static_cast<int>(t.integer(sh, "stride_h"));
    rows.push_back(conv_row(t, device, software, shape, ConvPass::forward, t.number(fwd, "fwd_ms")));
    if (!bwd_data.empty()) {
      rows.push_back(
          conv_row(t, device, software, shape, ConvPass::backward_data, t.number(bwd_data, "bwd_data_ms")));
    }
    rows.push_back(conv_row(t, device, software, shape, ConvPass::backward_filter,
                            t.number(bwd_filter, "bwd_filter_ms")));
  }
  return rows;
}

namespace {

// DeepBench gemm_bench.cu's padding for tensor-op GEMMs (cuBLAS's tensor-op restrictions).
void pad_gemm(KernelRow& row, bool a_transposed, bool b_transposed) {
  const auto pad = [](double& d) { d = static_cast<double>(round_up_to_8(static_cast<int64_t>(d))); };
  if (!b_transposed) {
    pad(row.m);
    pad(row.k);
  } else if (!a_transposed) {
    pad(row.m);
    pad(row.n);
  } else {
    pad(row.m);
    pad(row.n);
    pad(row.k);
  }
}

KernelRow v100_conv_row(const Table<23>& t, const ConvShape& c, ConvPass pass, double ms,
                        Precision precision) {
  KernelRow row = conv_row(t, "v100", "cuDNN 7.6.2", c, pass, ms);
  row.shape = std::string(to_string(precision)) + " " + row.shape;
  if (precision != Precision::fp32) {
    row.algorithms = {false, false, true};  // every pass forced to implicit GEMM, tensor ops
  }
  row.precision = precision;
  return row;
}

}  // namespace

std::vector<KernelRow> read_deepbench_tensor(const std::filesystem::path& file) {
  return read_deepbench_v100(file, Precision::fp16);
}

std::vector<KernelRow> read_deepbench_v100(const std::filesystem::path& file, Precision sheet) {
  const bool tensor = sheet != Precision::fp32;
  const std::string prefix(to_string(sheet));
  Table<23> t(file, "gpu", "sheet", "kernel", "M", "N", "K", "a_trans", "b_trans", "W", "H", "C",
              "K_filters", "S_filter_w", "R_filter_h", "pad_w", "pad_h", "stride_w", "stride_h",
              "fwd_ms", "bwd_data_ms", "bwd_filter_ms", "software_specs", "notes");
  std::string gpu, sheet_name, kernel, m, n, k, ta, tb, w, h, c, kf, s, r, pw, ph, sw, sh, fwd,
      bwd_data, bwd_filter, software, notes;
  std::vector<KernelRow> rows;
  while (t.next(gpu, sheet_name, kernel, m, n, k, ta, tb, w, h, c, kf, s, r, pw, ph, sw, sh, fwd, bwd_data,
                bwd_filter, software, notes)) {
    if (!gpu.starts_with("v100") || (sheet_name == "Results FP32") == tensor) continue;
    if (kernel == "gemm") {
      KernelRow row;
      row.kind = KernelRow::Kind::gemm;
      row.device = "v100";
      row.where = t.where();
      row.shape = prefix + " gemm " + m + "x" + n + "x" + k + " " + ta + tb;
      row.pass = "gemm";
      row.m = t.number(m, "M");
      row.n = t.number(n, "N");
      row.k = t.number(k, "K");
      if (tensor) pad_gemm(row, ta == "T", tb == "T");
      row.measured = Seconds(t.number(fwd, "fwd_ms") * 1e-3);
      row.precision = sheet;
      rows.push_back(std::move(row));
      continue;
    }
    ConvShape shape;
    shape.width = t.integer(w, "W");
    shape.height = t.integer(h, "H");
    shape.in_channels = t.integer(c, "C");
    shape.batch = t.integer(n, "N");
    shape.out_channels = t.integer(kf, "K_filters");
    shape.kernel_h = static_cast<int>(t.integer(r, "R_filter_h"));
    shape.kernel_w = static_cast<int>(t.integer(s, "S_filter_w"));
    shape.pad_h = static_cast<int>(t.integer(ph, "pad_h"));
    shape.pad_w = static_cast<int>(t.integer(pw, "pad_w"));
    shape.stride_h = static_cast<int>(t.integer(sh, "stride_h"));
    shape.stride_w = static_cast<int>(t.integer(sw, "stride_w"));
    rows.push_back(v100_conv_row(t, shape, ConvPass::forward, t.number(fwd, "fwd_ms"), sheet));
    if (!bwd_data.starts_with("N/A") && !bwd_data.empty()) {
      rows.push_back(v100_conv_row(t, shape, ConvPass::backward_data,
                                   t.number(bwd_data, "bwd_data_ms"), sheet));
    }
    rows.push_back(v100_conv_row(t, shape, ConvPass::backward_filter,
                                 t.number(bwd_filter, "bwd_filter_ms"), sheet));
  }
  return rows;
}

std::vector<KernelRow> read_deepbench_gemm(const std::filesystem::path& file) {
  Table<7> t(file, "device", "M", "N", "K", "a_transposed", "b_transposed", "time_ms");
  std::string device, m, n, k, ta, tb, ms;
  std::vector<KernelRow> rows;
  while (t.next(device, m, n, k, ta, tb, ms)) {
    KernelRow row;
    row.kind = KernelRow::Kind::gemm;
    row.device = device;
    row.where = t.where();
    row.shape = "gemm " + m + "x" + n + "x" + k + " " + ta + tb;
    row.pass = "gemm";
    row.m = t.number(m, "M");
    row.n = t.number(n, "N");
    row.k = t.number(k, "K");
    row.measured = Seconds(t.number(ms, "time_ms") * 1e-3);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<KernelRow> read_convnet_layers(const std::filesystem::path& file) {
  Table<9> t(file, "network", "batch", "layer", "shape", "fwd_ms", "bwd_ms", "source", "ralp_model",
             "ralp_layer");
  std::string network, batch, layer, shape, fwd, bwd, source, model, ralp_layer;
  std::vector<KernelRow> rows;
  while (t.next(network, batch, layer, shape, fwd, bwd, source, model, ralp_layer)) {
    if (ralp_layer.empty()) continue;  // totals and whole networks
    for (const bool forward : {true, false}) {
      KernelRow row;
      row.kind = KernelRow::Kind::layer;
      row.device = "titanx-maxwell";
      row.where = t.where();
      row.shape = model + " " + ralp_layer;
      row.pass = forward ? "forward" : "backward";
      row.model = model;
      row.layer = ralp_layer;
      // The Caffe logs predate cuDNN 5 and its Winograd algorithms.
      row.algorithms = {false, false};
      row.batch = t.integer(batch, "batch");
      row.measured = Seconds(t.number(forward ? fwd : bwd, forward ? "fwd_ms" : "bwd_ms") * 1e-3);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<WholeNetworkRow> read_convnet_networks(const std::filesystem::path& file) {
  Table<9> t(file, "network", "batch", "layer", "shape", "fwd_ms", "bwd_ms", "source", "ralp_model",
             "ralp_layer");
  std::string network, batch, layer, shape, fwd, bwd, source, model, ralp_layer;
  const std::string prefix = "whole network, ";
  std::vector<WholeNetworkRow> rows;
  while (t.next(network, batch, layer, shape, fwd, bwd, source, model, ralp_layer)) {
    if (model.empty() || !layer.starts_with(prefix)) continue;
    rows.push_back({layer.substr(prefix.size()), model, t.integer(batch, "batch"),
                    Seconds(t.number(fwd, "fwd_ms") * 1e-3), Seconds(t.number(bwd, "bwd_ms") * 1e-3),
                    t.where()});
  }
  return rows;
}

std::vector<KernelRow> read_kernel_rows(const std::filesystem::path& dir) {
  std::vector<KernelRow> rows = read_deepbench_conv(dir / "deepbench-conv-fp32.csv");
  for (auto* reader : {&read_deepbench_gemm, &read_convnet_layers}) {
    const std::filesystem::path file =
        dir / (reader == &read_deepbench_gemm ? "deepbench-gemm-fp32.csv"
                                              : "convnet-benchmarks-titanx-maxwell.csv");
    auto more = (*reader)(file);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

std::vector<ThroughputRow> read_tf_cnn_benchmarks(const std::filesystem::path& file) {
  Table<14> t(file, "system", "gpu", "nodes", "gpus_per_node", "gpus", "model", "batch_per_gpu",
              "variable_update", "parameter_servers", "ps_placement", "network", "data",
              "images_per_s", "note");
  std::string system, gpu, nodes, per_node, gpus, model, batch, update, ps, placement, network, data,
      images, note;
  std::vector<ThroughputRow> rows;
  while (t.next(system, gpu, nodes, per_node, gpus, model, batch, update, ps, placement, network,
                data, images, note)) {
    ThroughputRow row;
    row.source = "tf_cnn_benchmarks 2017";
    row.system = system;
    row.gpu = gpu.substr(0, gpu.find(' '));
    row.model = model;
    row.batch = t.integer(batch, "batch_per_gpu");
    row.gpus = t.integer(gpus, "gpus");
    row.variable_update = update;
    row.data = data;
    row.images_per_s = t.number(images, "images_per_s");
    row.where = t.where();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ThroughputRow> read_horovod(const std::filesystem::path& file) {
  Table<9> t(file, "table", "servers", "gpus_per_server", "gpus", "network", "model",
             "batch_per_gpu", "setup", "images_per_s");
  std::string table, servers, per_server, gpus, network, model, batch, setup, images;
  std::vector<ThroughputRow> rows;
  while (t.next(table, servers, per_server, gpus, network, model, batch, setup, images)) {
    ThroughputRow row;
    row.source = "Horovod README 2017";
    row.system = "table " + table.substr(0, table.find(' '));
    row.gpu = "p100-pcie";  // the README's "Pascal" servers (published/README.md)
    row.model = model;
    row.batch = t.integer(batch, "batch_per_gpu");
    row.gpus = t.integer(gpus, "gpus");
    row.variable_update = setup;
    row.data = "synthetic";
    row.images_per_s = t.number(images, "images_per_s");
    row.where = t.where();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ClusterPoint> read_cluster_points(const std::filesystem::path& file) {
  Table<11> t(file, "scenario", "source", "system", "model", "gpus", "batch_per_gpu", "setup",
              "transport", "role", "published_images_per_s", "baseline_images_per_s");
  std::vector<ClusterPoint> points;
  ClusterPoint p;
  std::string gpus, batch, images, baseline;
  while (t.next(p.scenario, p.source, p.system, p.model, gpus, batch, p.setup, p.transport, p.role,
                images, baseline)) {
    p.gpus = t.integer(gpus, "gpus");
    p.batch = t.integer(batch, "batch_per_gpu");
    p.images_per_s = t.number(images, "published_images_per_s");
    p.baseline_images_per_s = t.number(baseline, "baseline_images_per_s");
    if (p.role != "fit" && p.role != "check" && p.role != "out of scope") {
      throw InputError(file.string(), t.where(),
                       "column role is \"" + p.role + "\", expected fit, check or out of scope");
    }
    if (p.gpus < 2 || p.batch < 1 || p.images_per_s <= 0 || p.baseline_images_per_s <= 0) {
      throw InputError(file.string(), t.where(),
                       "expected at least 2 GPUs, a batch of at least 1 and positive throughputs");
    }
    points.push_back(p);
  }
  return points;
}

std::string dle_profile(const std::string& gpu) {
  // The DLE READMEs' machines: DGX-1 (V100 SXM2 16 or 32 GB), DGX-2 (V100 SXM3 32 GB), DGX A100
  // (A100 SXM4 40 or 80 GB); GPUNet's README writes "v100-32gb" for the DGX-1's 32 GB board.
  static const std::map<std::string, std::string> profiles = {
      {"v100-sxm2-16gb", "v100"},      {"v100-sxm2-32gb", "v100-32gb"}, {"v100-32gb", "v100-32gb"},
      {"v100-sxm3-32gb", "v100-sxm3"}, {"a100-sxm4-40gb", "a100-40gb"}, {"a100-sxm4-80gb", "a100-80gb"},
      {"h100-sxm5-80gb", "h100"}};
  const auto it = profiles.find(gpu);
  return it == profiles.end() ? std::string() : it->second;
}

std::string dle_zoo_name(const std::string& model) {
  if (model == "resnet50v1.5") return "resnet50";
  std::string out;
  for (const char c : model) {
    out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

DleRow read_mlperf(const std::filesystem::path& file) {
  Table<8> t(file, "source_commit", "round", "model", "system_dir", "gpu", "gpus_total",
             "batch_per_gpu", "images_per_s");
  DleRow row;
  std::string round, system, gpus, batch, images;
  if (!t.next(row.commit, round, row.model, system, row.gpu, gpus, batch, images)) {
    throw InputError(file.string(), "", "expected one row");
  }
  row.date = "MLPerf Training " + round;
  row.model = "resnet50v1.5";  // "resnet50v1.5 (MLPerf reference model)"
  row.system = "DGX H100";     // system_dir dgxh100_ngc23.04_mxnet
  row.container = "NGC 23.04 MXNet (" + system + ")";
  row.gpus = row.gpus_per_node = t.integer(gpus, "gpus_total");
  row.nodes = 1;
  row.precision_name = "amp-fp16";  // float16 with FP32 master weights
  row.precision = Precision::fp16;
  row.batch = t.integer(batch, "batch_per_gpu");
  row.images_per_s = t.number(images, "images_per_s");
  row.where = t.where();
  return row;
}

std::vector<DleRow> read_dle(const std::filesystem::path& file) {
  Table<14> t(file, "source_commit", "commit_date", "model", "container", "system", "gpu",
              "gpus_total", "gpus_per_node", "nodes", "nodes_inferred", "precision", "batch_per_gpu",
              "images_per_s", "role");
  std::vector<DleRow> rows;
  DleRow row;
  std::string gpus, per_node, nodes, inferred, batch, images, role;
  while (t.next(row.commit, row.date, row.model, row.container, row.system, row.gpu, gpus, per_node,
                nodes, inferred, row.precision_name, batch, images, role)) {
    const std::string& p = row.precision_name;
    if (p != "fp32" && p != "tf32" && p != "amp-fp16" && p != "fp32-or-tf32") {
      throw InputError(file.string(), t.where(),
                       "column precision is \"" + p + "\", expected fp32, tf32, amp-fp16 or fp32-or-tf32");
    }
    if (role != "fit" && role != "check") {
      throw InputError(file.string(), t.where(), "column role is \"" + role + "\", expected fit or check");
    }
    row.precision = p == "fp32"   ? std::optional(Precision::fp32)
                    : p == "tf32" ? std::optional(Precision::tf32)
                    : p == "amp-fp16" ? std::optional(Precision::fp16)
                                      : std::nullopt;
    row.gpus = t.integer(gpus, "gpus_total");
    row.gpus_per_node = t.integer(per_node, "gpus_per_node");
    row.nodes = t.integer(nodes, "nodes");
    row.nodes_inferred = inferred != "no";
    row.batch = batch.empty() ? 0 : t.integer(batch, "batch_per_gpu");
    row.images_per_s = t.number(images, "images_per_s");
    row.fit = role == "fit";
    if (row.gpus < 1 || row.batch < 0 || row.images_per_s <= 0) {
      throw InputError(file.string(), t.where(),
                       "expected at least 1 GPU, a batch of at least 1 or none, positive images/s");
    }
    row.where = t.where();
    rows.push_back(row);
  }
  return rows;
}

Catalogue read_catalogue(const std::filesystem::path& file) {
  const Json json = read_json_file(file);
  const std::string name = file.string();
  ObjectReader root(json, "", name);
  root.optional_string("about");
  Catalogue c;
  const Json& gpus = root.require("gpus", "an array of GPUs");
  if (!gpus.is_array()) root.fail("gpus", "is " + describe_json(gpus) + ", expected an array of GPUs");
  for (size_t i = 0; i < gpus.size(); ++i) {
    ObjectReader r(gpus[i], json_path("/gpus", i), name);
    GpuSpec g;
    g.name = r.string("name");
    g.description = r.string("description");
    g.cores = r.number("cores", 1, 1e6);
    g.boost_mhz = r.number("boost_mhz", 1, 1e5);
    g.multiprocessors = static_cast<int>(r.integer("multiprocessors", 1, 10000));
    g.memory_bandwidth = r.bandwidth("memory_bandwidth");
    g.pcie_bandwidth = r.bandwidth("pcie_bandwidth");
    const auto memory = r.optional_bytes("memory_capacity", false);
    if (!memory) r.fail("memory_capacity", "is missing, expected the GPU's memory (\"16GB\")");
    g.memory_capacity = *memory;
    if (const Json* peaks = r.get("precision_peaks")) {
      ObjectReader p(*peaks, r.path_of("precision_peaks"), name);
      for (const Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
        if (auto peak = p.optional_flops_rate(to_string(precision))) g.precision_peaks[precision] = *peak;
      }
      p.finish();
      g.precision_source = r.string("precision_source");
    }
    g.architecture = r.string("architecture");
    g.derive_from = r.optional_string("derive_from").value_or("");
    if (const Json* aliases = r.get("aliases")) {
      for (const Json& alias : *aliases) {
        if (!aliases->is_array() || !alias.is_string()) r.fail("aliases", "is not an array of names");
        g.aliases.push_back(alias.get<std::string>());
      }
    }
    g.source = r.string("source");
    r.finish();
    c.gpus.push_back(std::move(g));
  }
  const Json& checks = root.require("derivation_checks", "an array of {derive, from}");
  if (!checks.is_array()) {
    root.fail("derivation_checks", "is " + describe_json(checks) + ", expected an array of {derive, from}");
  }
  for (size_t i = 0; i < checks.size(); ++i) {
    ObjectReader r(checks[i], json_path("/derivation_checks", i), name);
    c.derivation_checks.emplace_back(r.string("derive"), r.string("from"));
    r.finish();
  }
  const Json& arch = root.require("architecture_rows", "an array of the rows architecture efficiencies are fitted on");
  if (!arch.is_array()) {
    root.fail("architecture_rows", "is " + describe_json(arch) + ", expected an array of {gpu, file, ...}");
  }
  for (size_t i = 0; i < arch.size(); ++i) {
    ObjectReader a(arch[i], json_path("/architecture_rows", i), name);
    ArchitectureRows rows;
    rows.gpu = a.string("gpu");
    rows.file = a.string("file");
    if (rows.file == "tf-cnn-benchmarks-2017.csv") {
      rows.system = a.string("system");
      rows.model = a.string("model");
      rows.batch = a.integer("batch_per_gpu", 1, 1 << 20);
      a.integer("gpus", 1, 1);
    } else if (rows.file == "dle-pytorch-convnets.csv") {
      if (a.string("role") != "fit") a.fail("role", "is not \"fit\", expected \"fit\"");
    } else {
      a.fail("file", "is \"" + rows.file + "\", expected tf-cnn-benchmarks-2017.csv or dle-pytorch-convnets.csv");
    }
    a.finish();
    c.architecture_rows.push_back(rows);
  }
  root.finish();
  return c;
}

}  // namespace ralp::published
