// Scenario parsing and validation, cross-references included (cuts name layers, roles fit).
#include "ralp/spec/scenario.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "ralp/model/model_file.hpp"
#include "ralp/model/model_zoo.hpp"
#include "ralp/onnx/onnx_import.hpp"
#include "ralp/spec/head.hpp"

namespace ralp {
namespace {

constexpr int64_t kMaxWorkers = 1 << 16;
constexpr int64_t kMaxParameterServers = 1 << 10;
constexpr int64_t kMaxDevicesPerNode = 64;
// A DGX-1's hybrid cube-mesh joins 8 devices.
constexpr int64_t kCubeMeshDevices = 8;
// A rails platform's leaf uplinks: at most this many times less than the leaf's NICs.
constexpr double kMaxOversubscription = 64.0;
constexpr int64_t kMaxBatch = 1 << 16;
constexpr int64_t kMaxSteps = 100000;
constexpr int64_t kMaxEpochs = 100000;
constexpr int64_t kMaxDatasetImages = int64_t{1} << 40;

const std::vector<std::string> kStrategyNames{"ps", "ralp", "allreduce", "hybrid"};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& relative) {
  const std::filesystem::path p(relative);
  return p.is_absolute() ? p : base / p;
}

// The file that `key` names (relative to the scenario's folder), checked readable here so that
// the error names the scenario key that points to it as well as the path tried.
std::filesystem::path referenced_file(ObjectReader& r, std::string_view key,
                                      const std::filesystem::path& base) {
  const std::filesystem::path path = resolve(base, r.string(key));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || !std::ifstream(path)) {
    r.fail(key, "names " + path.string() + ", which cannot be read (missing or not a file)");
  }
  return path;
}

LayerGraph read_model(ObjectReader& r, const std::filesystem::path& base, std::string& ref) {
  const Json& value = r.require("model", "a zoo model name or {\"file\": PATH}");
  if (value.is_string()) {
    ref = value.get<std::string>();
    if (auto model = zoo_model(ref)) return std::move(*model);
    std::vector<std::string> names;
    for (const auto& entry : zoo_entries()) names.push_back(entry.name);
    r.fail("model", "is " + describe_json(value) + ", expected a zoo model (" + join(names) +
                        ") or {\"file\": PATH}" + did_you_mean(ref, names));
  }
  if (value.is_object()) {
    ObjectReader m(value, r.path_of("model"), r.file());
    if (m.has("onnx")) return read_onnx_model_object(value, r.path_of("model"), r.file(), base, ref);
    if (m.has("layers")) {
      // An inline model definition.
      ref = "inline";
      return parse_model(value, r.path_of("model"), r.file());
    }
    ref = m.string("file");
    const std::filesystem::path path = referenced_file(m, "file", base);
    m.finish();
    return load_model_file(path);
  }
  r.fail("model", "is " + describe_json(value) +
                      ", expected a zoo model name, {\"file\": PATH} or an inline model");
}

DeviceProfile read_device(ObjectReader& r, std::string_view key,
                          const std::filesystem::path& base) {
  const Json& value = r.require(key, "a device profile name or an inline profile object");
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    if (const auto path = find_profile(name)) return load_device_profile(*path);
    r.fail(key, "is " + describe_json(value) + ", expected a device profile (" +
                    join(available_profiles()) + ") or an inline profile object" +
                    did_you_mean(name, available_profiles()));
  }
  if (value.is_object() && value.size() == 1 && value.contains("file")) {
    ObjectReader f(value, r.path_of(key), r.file());
    return load_device_profile(referenced_file(f, "file", base));
  }
  return parse_device_profile(value, r.path_of(key), r.file());
}

LinkSpec read_link(ObjectReader& r, std::string_view key, std::optional<LinkSpec> fallback) {
  const Json* value = r.get(key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    r.require(key, "{\"bandwidth\": ..., \"latency\": ...}");
  }
  ObjectReader l(*value, r.path_of(key), r.file());
  LinkSpec link;
  link.bandwidth = fallback && !l.has("bandwidth") ? fallback->bandwidth : l.bandwidth("bandwidth");
  link.latency = fallback && !l.has("latency") ? fallback->latency : l.seconds("latency");
  l.finish();
  return link;
}

// Parses "a,b;c;d,e" into {{a, b}, {c}, {d, e}} and checks the group sizes each kind needs.
std::vector<std::vector<int64_t>> parse_topology(ObjectReader& r, PlatformKind kind,
                                                 const std::string& text) {
  static const std::map<PlatformKind, std::string> kExamples = {
      {PlatformKind::fat_tree, "\"LEVELS;DOWN,...;UP,...;COUNT,...\" such as \"2;4,4;1,2;1,2\""},
      {PlatformKind::torus, "\"X,Y,...\" such as \"4,4,4\""},
      {PlatformKind::dragonfly,
       "\"GROUPS,LINKS;CHASSIS,LINKS;ROUTERS,LINKS;NODES\" such as \"3,4;4,3;5,1;2\""}};
  const auto fail = [&]() {
    r.fail("topology", "is \"" + text + "\", expected " + kExamples.at(kind) +
                           " with every number >= 1");
  };
  std::vector<std::vector<int64_t>> groups(1);
  std::string number;
  const auto flush = [&]() {
    if (number.empty() || number.size() > 6) fail();
    groups.back().push_back(std::stoll(number));
    if (groups.back().back() < 1) fail();
    number.clear();
  };
  for (const char c : text) {
    if (c >= '0' && c <= '9') {
      number += c;
    } else if (c == ',') {
      flush();
    } else if (c == ';') {
      flush();
      groups.emplace_back();
    } else {
      fail();
    }
  }
  flush();
  bool ok = false;
  if (kind == PlatformKind::torus) {
    ok = groups.size() == 1;
  } else if (kind == PlatformKind::dragonfly) {
    ok = groups.size() == 4 && groups[0].size() == 2 && groups[1].size() == 2 &&
         groups[2].size() == 2 && groups[3].size() == 1;
  } else if (kind == PlatformKind::fat_tree) {
    ok = groups.size() == 4 && groups[0].size() == 1;
    if (ok) {
      const auto levels = static_cast<size_t>(groups[0][0]);
      ok = groups[1].size() == levels && groups[2].size() == levels && groups[3].size() == levels;
    }
  }
  if (!ok) fail();
  return groups;
}

// hosts_needed: how many hosts the cluster takes, which `counted` names.
PlatformSpec read_platform(ObjectReader& cluster, const std::filesystem::path& base,
                           int64_t hosts_needed, const std::string& counted) {
  const Json& value = cluster.require("platform", "a platform object");
  ObjectReader r(value, cluster.path_of("platform"), cluster.file());
  PlatformSpec p;
  const std::string kind =
      r.choice("kind", {"star", "racks", "fat_tree", "torus", "dragonfly", "rails", "file"});
  p.kind = kind == "star"        ? PlatformKind::star
           : kind == "racks"     ? PlatformKind::racks
           : kind == "fat_tree"  ? PlatformKind::fat_tree
           : kind == "torus"     ? PlatformKind::torus
           : kind == "dragonfly" ? PlatformKind::dragonfly
           : kind == "rails"     ? PlatformKind::rails
                                 : PlatformKind::file;
  if (auto fabric = r.optional_choice("fabric", {"ethernet", "roce", "infiniband"})) {
    p.fabric = *fabric == "ethernet" ? Fabric::ethernet
               : *fabric == "roce"   ? Fabric::roce
                                     : Fabric::infiniband;
  }
  if (p.kind == PlatformKind::file) {
    p.file = referenced_file(r, "file", base);
    if (const Json* roles = r.get("roles")) {
      ObjectReader roles_reader(*roles, r.path_of("roles"), r.file());
      for (const auto& [role, host] : roles->items()) {
        roles_reader.get(role);
        if (!host.is_string() || host.get<std::string>().empty()) {
          roles_reader.fail(role, "is " + describe_json(host) + ", expected a host name");
        }
        p.roles[role] = host.get<std::string>();
      }
    }
    r.finish();
    return p;
  }
  p.nic.bandwidth = r.bandwidth("nic_bandwidth");
  p.nic.latency = r.optional_seconds("latency").value_or(Seconds(0.0));
  if (p.kind == PlatformKind::star || p.kind == PlatformKind::racks) {
    if (r.has("ps_nic")) p.ps_nic = read_link(r, "ps_nic", p.nic);
    if (r.has("worker_nic")) p.worker_nic = read_link(r, "worker_nic", p.nic);
  }
  if (p.kind == PlatformKind::star && r.has("backbone")) {
    p.backbone = read_link(r, "backbone", std::nullopt);
  }
  if (p.kind == PlatformKind::star) p.nic_burst = r.optional_bytes("nic_burst").value_or(Bytes(0.0));
  if (p.kind == PlatformKind::rails) {
    p.oversubscription = r.optional_number("oversubscription", 1.0, kMaxOversubscription).value_or(1.0);
  }
  if (p.kind == PlatformKind::racks) {
    p.hosts_per_rack = r.integer("hosts_per_rack", 1, kMaxWorkers);
    p.rack_uplink = read_link(r, "rack_uplink", std::nullopt);
  }
  if (p.kind == PlatformKind::fat_tree || p.kind == PlatformKind::torus ||
      p.kind == PlatformKind::dragonfly) {
    p.topology = r.string("topology");
    p.topology_groups = parse_topology(r, p.kind, p.topology);
    const int64_t hosts = topology_hosts(p.kind, p.topology_groups);
    if (hosts < hosts_needed) {
      r.fail("topology", "is \"" + p.topology + "\", which holds " + std::to_string(hosts) +
                             " hosts, expected at least " + std::to_string(hosts_needed) +
                             " (" + counted + ")");
    }
  }
  r.finish();
  return p;
}

// cluster.node_interconnect: {"kind", "bandwidth", "latency", "host_links"}.
NodeInterconnect read_interconnect(ObjectReader& c, int64_t devices_per_node) {
  ObjectReader r(*c.get("node_interconnect"), c.path_of("node_interconnect"), c.file());
  NodeInterconnect link;
  const std::string kind = r.choice("kind", {"pcie", "nvlink", "nvswitch"});
  link.kind = kind == "pcie"     ? InterconnectKind::pcie
              : kind == "nvlink" ? InterconnectKind::nvlink
                                 : InterconnectKind::nvswitch;
  if (link.kind == InterconnectKind::nvlink) {
    if (devices_per_node > kCubeMeshDevices) {
      r.fail("kind", "is \"nvlink\" (a DGX-1's hybrid cube-mesh of 8 devices) on nodes of " +
                         std::to_string(devices_per_node) +
                         " devices, expected \"nvswitch\" or at most 8 devices_per_node");
    }
    link.links_per_device = r.optional_integer("links_per_device", 4, 6).value_or(6);
    if (link.links_per_device == 5) {
      r.fail("links_per_device", "is 5, expected 6 (V100's cube-mesh) or 4 (P100's)");
    }
  }
  link.bandwidth = r.bandwidth("bandwidth");
  link.latency = r.optional_seconds("latency").value_or(Seconds(0.0));
  link.host_links = r.optional_integer("host_links", 1, devices_per_node).value_or(1);
  r.finish();
  return link;
}

// cluster.devices_per_node, node_interconnect, nics_per_node and ps_placement.
NodeSpec read_nodes(ObjectReader& c, int64_t workers) {
  NodeSpec nodes;
  nodes.devices_per_node = c.optional_integer("devices_per_node", 1, kMaxDevicesPerNode).value_or(1);
  const int64_t per_node = nodes.devices_per_node;
  if (workers % per_node != 0) {
    c.fail("workers", "is " + std::to_string(workers) + ", expected a multiple of "
                      "devices_per_node (" + std::to_string(per_node) + ")");
  }
  if (c.has("node_interconnect")) nodes.interconnect = read_interconnect(c, per_node);
  nodes.nics_per_node = c.optional_integer("nics_per_node", 1, per_node).value_or(1);
  if (nodes.nics_per_node != 1 && nodes.nics_per_node != per_node) {
    c.fail("nics_per_node", "is " + std::to_string(nodes.nics_per_node) + ", expected 1 or "
                            "devices_per_node (" + std::to_string(per_node) + ")");
  }
  nodes.gpu_direct = c.optional_boolean("gpu_direct")
                         .value_or(per_node > 1 && nodes.nics_per_node == per_node);
  if (auto placement = c.optional_choice("ps_placement", {"separate", "colocated"})) {
    nodes.ps_placement =
        *placement == "separate" ? PsPlacement::separate : PsPlacement::colocated;
  }
  return nodes;
}

// cluster.price_per_hour: "32.77 USD".
std::optional<Price> read_price(ObjectReader& c) {
  const Json* value = c.get("price_per_hour");
  if (value == nullptr) return std::nullopt;
  std::optional<Price> price;
  if (value->is_string()) price = parse_price(value->get<std::string>());
  if (!price) {
    c.fail("price_per_hour", "is " + describe_json(*value) +
                                 ", expected a host's price an hour as an amount and an ISO 4217 "
                                 "currency code, such as \"32.77 USD\"");
  }
  return price;
}

NetworkModelSpec read_network_model(ObjectReader& r) {
  NetworkModelSpec spec;
  const Json* value = r.get("network_model");
  if (value == nullptr) return spec;
  if (value->is_string()) {
    const std::string name = *r.optional_choice("network_model", {"tcp", "ideal"});
    spec.kind = name == "tcp" ? NetworkModelKind::tcp : NetworkModelKind::ideal;
    return spec;
  }
  if (!value->is_object()) {
    r.fail("network_model", "is " + describe_json(*value) +
                                ", expected \"tcp\", \"ideal\" or {\"latency_factor\": ..., "
                                "\"bandwidth_factor\": ...}");
  }
  ObjectReader f(*value, r.path_of("network_model"), r.file());
  spec.kind = NetworkModelKind::factors;
  spec.latency_factor = f.number("latency_factor", 1e-3, 1e3);
  spec.bandwidth_factor = f.number("bandwidth_factor", 1e-3, 1.0);
  f.finish();
  return spec;
}

// "head": [LAYER, ...]: those layers and everything that reads them, by the head's name.
std::string read_head(ObjectReader& r, const LayerGraph& model) {
  const Json& value = *r.get("head");
  const std::string expected =
      "a non-empty array of layer names of " + model.name() + " (the head: them and every layer "
      "after them)";
  if (!value.is_array() || value.empty()) {
    r.fail("head", "is " + (value.is_array() ? std::string("an empty array") : describe_json(value)) +
                       ", expected " + expected);
  }
  std::vector<LayerId> roots;
  for (size_t i = 0; i < value.size(); ++i) {
    const Json& item = value[i];
    const auto id = item.is_string() ? model.find(item.get<std::string>()) : std::nullopt;
    if (!id) {
      std::vector<std::string> layers;
      for (const Layer& l : model.layers()) layers.push_back(l.name());
      throw InputError(r.file(), json_path(r.path_of("head"), i),
                       "is " + describe_json(item) + ", expected the name of a layer of " +
                           model.name() +
                           (item.is_string() ? did_you_mean(item.get<std::string>(), layers)
                                             : std::string()));
    }
    roots.push_back(*id);
  }
  try {
    return head_name(model, Head::closure(model, roots));
  } catch (const std::invalid_argument&) {
    r.fail("head", "takes every layer of " + model.name() +
                       " (with their descendants), expected layers that leave a tail before "
                       "the head");
  }
}

// A strategy's keys that only some strategies take: one line naming the key when given to another
// (looked up in `value` so that the keys the others take stay out of unknown-key messages).
void check_strategy_keys(const Json& value, const ObjectReader& r, std::string_view name,
                         bool has_ps, bool has_ring) {
  for (const char* key : {"algorithm", "nccl_algorithm"}) {
    if (!has_ring && value.contains(key)) {
      r.fail(key, "is given for " + std::string(name) + ", expected it only with allreduce or hybrid");
    }
  }
  if (!has_ps && value.contains("local_aggregation")) {
    r.fail("local_aggregation", "is given for " + std::string(name) +
                                    ", expected it only with ps, ralp or hybrid");
  }
  if (name != "ps" && value.contains("sync")) {
    r.fail("sync", "is given for " + std::string(name) + ", expected it only with ps");
  }
}

// A strategy's transport by name: one line naming the key and the accepted names otherwise.
Transport read_transport(const ObjectReader& r, const std::string& name) {
  if (auto transport = find_transport(name)) return *transport;
  const std::vector<std::string> names = available_transports();
  r.fail("transport", "is \"" + name + "\", expected one of: " + join(names) +
                          " (ralp transport list explains them)" + did_you_mean(name, names));
}

StrategySpec read_strategy(const Json& value, const std::string& path, const std::string& file,
                           const LayerGraph& model, int64_t devices_per_node) {
  StrategySpec s;
  std::string name;
  std::optional<ObjectReader> r;
  if (value.is_string()) {
    name = value.get<std::string>();
    bool known = false;
    for (const auto& n : kStrategyNames) known = known || n == name;
    if (!known) {
      throw InputError(file, path, "is " + describe_json(value) + ", expected one of: " +
                                       join(kStrategyNames) + " (or an object with \"name\")" +
                                       did_you_mean(name, kStrategyNames));
    }
  } else {
    r.emplace(value, path, file);
    name = r->choice("name", kStrategyNames);
  }
  s.kind = name == "ps"          ? StrategyKind::ps
           : name == "ralp"      ? StrategyKind::ralp
           : name == "allreduce" ? StrategyKind::allreduce
                                 : StrategyKind::hybrid;
  const bool has_cut = s.kind == StrategyKind::ralp || s.kind == StrategyKind::hybrid;
  const bool has_ps = s.kind != StrategyKind::allreduce;
  const bool has_ring = s.kind == StrategyKind::allreduce || s.kind == StrategyKind::hybrid;
  s.label = name;
  s.local_aggregation = has_ps && devices_per_node > 1;
  if (!r) return s;
  check_strategy_keys(value, *r, name, has_ps, has_ring);

  if (has_cut) {
    if (r->has("head") && r->has("cut")) {
      r->fail("head", "is given together with \"cut\", expected one of them (\"cut\": the "
                      "first head layer of the file's order, \"head\": layers that start the head)");
    }
    if (r->has("head")) s.cut = read_head(*r, model);
    const std::string cut = r->optional_string("cut").value_or(s.cut ? *s.cut : "auto");
    if (cut != "auto" && !s.cut) {
      const auto id = model.find(cut);
      if (!id || *id == 0) {
        std::vector<std::string> layers;
        for (LayerId l = 1; l < model.size(); ++l) layers.push_back(model.layer(l).name());
        r->fail("cut", "is \"" + cut + "\", expected \"auto\" or the name of a layer of " +
                           model.name() + " other than its first (the first head layer)" +
                           did_you_mean(cut, layers));
      }
      s.cut = cut;
    }
    if (auto mode = r->optional_choice("head_mode", {"per_worker", "all_workers"})) {
      s.head_mode = *mode == "per_worker" ? HeadMode::per_worker : HeadMode::all_workers;
    }
  }
  if (has_ps) {
    s.local_aggregation = r->optional_boolean("local_aggregation").value_or(s.local_aggregation);
    if (auto sharding = r->optional_choice("sharding", {"round_robin", "greedy", "balanced"})) {
      s.sharding = *sharding == "round_robin" ? ShardPlacement::round_robin
                   : *sharding == "greedy"    ? ShardPlacement::greedy
                                              : ShardPlacement::balanced;
    }
  }
  if (s.kind == StrategyKind::ps) {
    if (auto sync = r->optional_choice("sync", {"sum", "token_queues"})) {
      s.token_queues = *sync == "token_queues";
    }
  }
  if (has_ring) {
    if (auto t = r->optional_bytes("fusion_threshold", false)) s.fusion_threshold = *t;
    if (auto c = r->optional_seconds("cycle_time")) s.cycle_time = *c;
    if (auto m = r->optional_choice("ring_model", {"auto", "message", "coalesced"})) {
      s.ring_model = *m == "auto"      ? RingModel::automatic
                     : *m == "message" ? RingModel::message
                                       : RingModel::coalesced;
    }
    if (auto a = r->optional_choice("algorithm", {"ring", "hierarchical"})) {
      s.algorithm = *a == "ring" ? AllreduceAlgorithm::ring : AllreduceAlgorithm::hierarchical;
    }
    if (auto a = r->optional_choice("nccl_algorithm", {"auto", "ring", "tree"})) {
      s.nccl_algorithm = *a == "auto"   ? NcclAlgorithmChoice::automatic
                         : *a == "ring" ? NcclAlgorithmChoice::ring
                                        : NcclAlgorithmChoice::tree;
    }
  }
  if (auto transport = r->optional_string("transport")) {
    s.transport = read_transport(*r, *transport);
  }
  s.label = r->optional_string("label").value_or(default_strategy_label(name, s.cut));
  r->finish();
  return s;
}

CompressionSpec read_compression(ObjectReader& r) {
  CompressionSpec spec;
  const Json* value = r.get("compression");
  if (value == nullptr) return spec;
  ObjectReader c(*value, r.path_of("compression"), r.file());
  const std::string kind = c.choice("kind", {"none", "fp16", "int8", "topk"});
  spec.kind = kind == "none"   ? CompressionKind::none
              : kind == "fp16" ? CompressionKind::fp16
              : kind == "int8" ? CompressionKind::int8
                               : CompressionKind::topk;
  if (spec.kind == CompressionKind::topk) {
    spec.topk_ratio = c.optional_number("ratio", 1e-6, 1.0).value_or(spec.topk_ratio);
  }
  spec.encode_rate = c.optional_bandwidth("encode_rate");
  c.finish();
  return spec;
}

StragglerSpec read_stragglers(ObjectReader& r) {
  StragglerSpec spec;
  const Json* value = r.get("stragglers");
  if (value == nullptr) return spec;
  ObjectReader s(*value, r.path_of("stragglers"), r.file());
  const std::string kind = s.choice("kind", {"none", "lognormal", "bernoulli"});
  if (kind == "lognormal") {
    spec.kind = StragglerKind::lognormal;
    spec.sigma = s.number("sigma", 0.0, 10.0);
  } else if (kind == "bernoulli") {
    spec.kind = StragglerKind::bernoulli;
    spec.probability = s.number("probability", 0.0, 1.0);
    spec.slowdown = s.number("slowdown", 1.0, 1000.0);
  }
  s.finish();
  return spec;
}

TrainingSpec read_training(ObjectReader& r) {
  TrainingSpec spec;
  const Json* value = r.get("training");
  if (value == nullptr) return spec;
  ObjectReader t(*value, r.path_of("training"), r.file());
  spec.learning_rate = t.optional_number("learning_rate", 0.0, 100.0).value_or(spec.learning_rate);
  spec.momentum = t.optional_number("momentum", 0.0, 0.999).value_or(spec.momentum);
  if (auto timeout = t.optional_seconds("step_timeout", false)) spec.step_timeout = *timeout;
  spec.threads = static_cast<int>(t.optional_integer("threads", 1, 1024).value_or(spec.threads));
  spec.epochs = t.optional_integer("epochs", 1, kMaxEpochs).value_or(spec.epochs);
  spec.dataset_images =
      t.optional_integer("dataset_images", 1, kMaxDatasetImages).value_or(spec.dataset_images);
  t.finish();
  return spec;
}

PlacementSpec read_placement(ObjectReader& r) {
  PlacementSpec spec;
  const Json* value = r.get("placement");
  if (value == nullptr) return spec;
  ObjectReader p(*value, r.path_of("placement"), r.file());
  spec.split_threshold =
      p.optional_number("split_threshold", 0.0, 1.0).value_or(spec.split_threshold);
  p.finish();
  return spec;
}

// cluster.shared_devices: an array of one integer per host.
std::vector<int64_t> read_shared_devices(ObjectReader& c, int64_t hosts) {
  const Json* value = c.get("shared_devices");
  if (value == nullptr) return {};
  const std::string expected = "an array of " + std::to_string(hosts) +
                               " integers in [0, " + std::to_string(hosts - 1) +
                               "], one per host (parameter servers first, then workers)";
  if (!value->is_array()) {
    c.fail("shared_devices", "is " + describe_json(*value) + ", expected " + expected);
  }
  if (static_cast<int64_t>(value->size()) != hosts) {
    c.fail("shared_devices",
           "has " + std::to_string(value->size()) + " entries, expected " + expected);
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& e = (*value)[i];
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= hosts) {
      throw InputError(c.file(), json_path(c.path_of("shared_devices"), i),
                       "is " + describe_json(e) + ", expected an integer in [0, " +
                           std::to_string(hosts - 1) + "]");
    }
    out.push_back(e.get<int64_t>());
  }
  return out;
}

// cluster.message_cpu: {"send_ns_per_byte", "receive_ns_per_byte", "send_us_per_message",
// "receive_us_per_message"}, each optional.
MessageCpuSpec read_message_cpu(ObjectReader& c) {
  constexpr double kMaxNsPerByte = 1e6;
  constexpr double kMaxUsPerMessage = 1e6;
  constexpr double kSecondsPerNs = 1e-9;
  constexpr double kSecondsPerUs = 1e-6;
  constexpr double kMaxWaitingShare = 0.5;
  MessageCpuSpec spec;
  const Json* value = c.get("message_cpu");
  if (value == nullptr) return spec;
  ObjectReader m(*value, c.path_of("message_cpu"), c.file());
  spec.send_s_per_byte =
      m.optional_number("send_ns_per_byte", 0.0, kMaxNsPerByte).value_or(0.0) * kSecondsPerNs;
  spec.receive_s_per_byte =
      m.optional_number("receive_ns_per_byte", 0.0, kMaxNsPerByte).value_or(0.0) * kSecondsPerNs;
  spec.send_s_per_message =
      m.optional_number("send_us_per_message", 0.0, kMaxUsPerMessage).value_or(0.0) *
      kSecondsPerUs;
  spec.receive_s_per_message =
      m.optional_number("receive_us_per_message", 0.0, kMaxUsPerMessage).value_or(0.0) *
      kSecondsPerUs;
  spec.waiting_share = m.optional_number("waiting_share", 0.0, kMaxWaitingShare).value_or(0.0);
  m.finish();
  return spec;
}

// The precision each device that computes in it can run: the workers' always, the parameter
// servers' where a strategy computes a head on them.
void check_precision(const Scenario& s, const std::string& file) {
  const auto check = [&](const DeviceProfile& device, std::string_view role) {
    const PrecisionCheck c = precision_support(device, s.precision);
    if (c.support != PrecisionSupport::unsupported) return;
    std::string runs = "fp32";
    for (const Precision p : kPrecisions) {
      if (p != Precision::fp32 && precision_support(device, p).support != PrecisionSupport::unsupported) {
        runs += ", " + std::string(to_string(p));
      }
    }
    throw InputError(file, "/precision",
                     "is \"" + std::string(to_string(s.precision)) + "\", but the " +
                         std::string(role) + " \"" + device.name + "\" cannot run it (" + c.reason +
                         "); expected one of " + runs);
  };
  check(s.worker_device, "worker device");
  for (const StrategySpec& spec : s.strategies) {
    if (spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid) {
      check(s.ps_device, "parameter servers' device");
      return;
    }
  }
}

void check_roles(const Scenario& s, const std::string& file) {
  if (s.platform.kind != PlatformKind::file || s.platform.roles.empty()) return;
  for (const auto& [role, host] : s.platform.roles) {
    const auto index_of = [&](std::string_view prefix) -> std::optional<int64_t> {
      if (!role.starts_with(prefix)) return std::nullopt;
      const std::string digits = role.substr(prefix.size());
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
          digits.size() > 9) {
        return std::nullopt;
      }
      return std::stoll(digits);
    };
    const auto ps = index_of("ps-");
    const auto worker = index_of("worker-");
    const bool valid = (ps && *ps < s.parameter_servers) || (worker && *worker < s.workers);
    if (!valid) {
      const std::string workers = "worker-0..worker-" + std::to_string(s.workers - 1);
      throw InputError(file, json_path("/cluster/platform/roles", role),
                       "is not a role of this cluster, expected " +
                           (s.parameter_servers == 0
                                ? workers
                                : "ps-0..ps-" + std::to_string(s.parameter_servers - 1) + " or " +
                                      workers));
    }
  }
}

// The node keys of cluster, where they differ from one device per node with separate PS hosts.
void nodes_to_json(const NodeSpec& nodes, Json& cluster) {
  if (nodes.devices_per_node != 1) cluster["devices_per_node"] = nodes.devices_per_node;
  if (nodes.interconnect) {
    cluster["node_interconnect"] = {{"kind", std::string(to_string(nodes.interconnect->kind))},
                                    {"bandwidth", nodes.interconnect->bandwidth.value()},
                                    {"latency", nodes.interconnect->latency.value()},
                                    {"host_links", nodes.interconnect->host_links}};
    if (nodes.interconnect->kind == InterconnectKind::nvlink) {
      cluster["node_interconnect"]["links_per_device"] = nodes.interconnect->links_per_device;
    }
  }
  if (nodes.nics_per_node != 1) cluster["nics_per_node"] = nodes.nics_per_node;
  if (nodes.gpu_direct) cluster["gpu_direct"] = true;
  if (nodes.ps_placement != PsPlacement::separate) {
    cluster["ps_placement"] = std::string(to_string(nodes.ps_placement));
  }
}

// A strategy's node keys: written on nodes of several devices, or where they differ from the
// default.
void strategy_nodes_to_json(const StrategySpec& st, int64_t devices_per_node, Json& j) {
  const bool nodes = devices_per_node > 1;
  if (st.kind != StrategyKind::allreduce && (nodes || st.local_aggregation)) {
    j["local_aggregation"] = st.local_aggregation;
  }
  const bool ring = st.kind == StrategyKind::allreduce || st.kind == StrategyKind::hybrid;
  if (ring && (nodes || st.algorithm != AllreduceAlgorithm::ring)) {
    j["algorithm"] = std::string(to_string(st.algorithm));
  }
  if (ring && st.nccl_algorithm != NcclAlgorithmChoice::automatic) {
    j["nccl_algorithm"] = std::string(to_string(st.nccl_algorithm));
  }
}

}  // namespace

std::string_view to_string(AllreduceAlgorithm algorithm) {
  return algorithm == AllreduceAlgorithm::ring ? "ring" : "hierarchical";
}

std::string_view to_string(InterconnectKind kind) {
  return kind == InterconnectKind::pcie     ? "pcie"
         : kind == InterconnectKind::nvlink ? "nvlink"
                                            : "nvswitch";
}

std::string_view to_string(NcclAlgorithmChoice choice) {
  return choice == NcclAlgorithmChoice::automatic ? "auto"
         : choice == NcclAlgorithmChoice::ring    ? "ring"
                                                  : "tree";
}

std::string_view to_string(Fabric fabric) {
  return fabric == Fabric::ethernet ? "ethernet" : fabric == Fabric::roce ? "roce" : "infiniband";
}

std::string_view to_string(PsPlacement placement) {
  return placement == PsPlacement::separate ? "separate" : "colocated";
}

std::string_view to_string(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::ps:
      return "ps";
    case StrategyKind::ralp:
      return "ralp";
    case StrategyKind::allreduce:
      return "allreduce";
    case StrategyKind::hybrid:
      return "hybrid";
  }
  return "unknown";
}

std::string default_strategy_label(std::string_view kind, const std::optional<std::string>& cut) {
  return cut ? std::string(kind) + "@" + *cut : std::string(kind);
}

std::string_view to_string(ShardPlacement placement) {
  switch (placement) {
    case ShardPlacement::round_robin:
      return "round_robin";
    case ShardPlacement::greedy:
      return "greedy";
    case ShardPlacement::balanced:
      return "balanced";
  }
  return "unknown";
}

std::string_view to_string(HeadMode mode) {
  return mode == HeadMode::per_worker ? "per_worker" : "all_workers";
}

std::string_view to_string(RingModel model) {
  switch (model) {
    case RingModel::automatic:
      return "auto";
    case RingModel::message:
      return "message";
    case RingModel::coalesced:
      return "coalesced";
  }
  return "unknown";
}

int64_t topology_hosts(PlatformKind kind, const std::vector<std::vector<int64_t>>& groups) {
  // Saturates far above any simulable cluster, so that huge products cannot overflow.
  static constexpr int64_t kCap = int64_t{1} << 40;
  int64_t hosts = 1;
  const auto times = [&hosts](int64_t d) { hosts = std::min(hosts * d, kCap); };
  if (kind == PlatformKind::torus) {
    for (const int64_t d : groups.at(0)) times(d);
  } else if (kind == PlatformKind::fat_tree) {
    for (const int64_t d : groups.at(1)) times(d);
  } else if (kind == PlatformKind::dragonfly) {
    for (size_t g = 0; g < 4; ++g) times(groups.at(g)[0]);
  }
  return hosts;
}

std::string_view to_string(PlatformKind kind) {
  switch (kind) {
    case PlatformKind::star:
      return "star";
    case PlatformKind::racks:
      return "racks";
    case PlatformKind::fat_tree:
      return "fat_tree";
    case PlatformKind::torus:
      return "torus";
    case PlatformKind::dragonfly:
      return "dragonfly";
    case PlatformKind::file:
      return "file";
    case PlatformKind::rails:
      return "rails";
  }
  return "unknown";
}

std::optional<Price> parse_price(std::string_view text) {
  const size_t space = text.find_first_of(" \t");
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view number = text.substr(0, space);
  const size_t code_start = text.find_first_not_of(" \t", space);
  if (code_start == std::string_view::npos) return std::nullopt;
  const std::string_view code = text.substr(code_start);
  const bool iso_code = code.size() == 3 && std::all_of(code.begin(), code.end(), [](char ch) {
    return ch >= 'A' && ch <= 'Z';
  });
  double amount = 0.0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), amount);
  if (!iso_code || ec != std::errc() || end != number.data() + number.size() ||
      !std::isfinite(amount) || amount < 0.0) {
    return std::nullopt;
  }
  return Price{amount, std::string(code)};
}

std::string format_price(const Price& price) {
  char text[64];
  // Two decimals, as prices are quoted, unless the amount was given more finely.
  std::snprintf(text, sizeof text, "%.2f", price.amount);
  if (std::strtod(text, nullptr) != price.amount) std::snprintf(text, sizeof text, "%.6g", price.amount);
  return std::string(text) + " " + price.currency;
}

Scenario parse_scenario(const Json& value, const std::string& file,
                        const std::filesystem::path& base_dir) {
  ObjectReader r(value, "", file);
  const std::string name = r.string("name");
  std::string model_ref;
  LayerGraph model = read_model(r, base_dir, model_ref);
  Scenario scenario{.file = file, .name = name, .model_ref = model_ref, .model = std::move(model)};
  scenario.batch_per_worker = r.integer("batch_per_worker", 1, kMaxBatch);
  scenario.source = r.optional_string("source").value_or("");

  {
    const Json& cluster = r.require("cluster", "a cluster object");
    ObjectReader c(cluster, r.path_of("cluster"), file);
    scenario.workers = c.integer("workers", 1, kMaxWorkers);
    scenario.parameter_servers =
        c.optional_integer("parameter_servers", 0, kMaxParameterServers).value_or(1);
    scenario.worker_device = read_device(c, "worker_device", base_dir);
    scenario.ps_device =
        c.has("ps_device") ? read_device(c, "ps_device", base_dir) : scenario.worker_device;
    scenario.nodes = read_nodes(c, scenario.workers);
    // A generated topology's hosts are the nodes and the parameter servers of their own.
    const int64_t separate_ps = scenario.nodes.ps_placement == PsPlacement::separate
                                    ? scenario.parameter_servers
                                    : 0;
    const bool plain = scenario.nodes.devices_per_node == 1 &&
                       scenario.nodes.ps_placement == PsPlacement::separate;
    scenario.platform = read_platform(
        c, base_dir, scenario.workers / scenario.nodes.devices_per_node + separate_ps,
        plain ? "parameter servers + workers" : "parameter servers of their own + nodes");
    scenario.shared_devices =
        read_shared_devices(c, scenario.workers + scenario.parameter_servers);
    scenario.message_cpu = read_message_cpu(c);
    scenario.price_per_hour = read_price(c);
    c.finish();
  }
  scenario.network_model = read_network_model(r);
  if (is_rdma(scenario.platform.fabric)) {
    // RDMA transfers stream from their first byte: a route's latency once, no slow start.
    if (r.has("network_model") && scenario.network_model.kind == NetworkModelKind::tcp) {
      r.fail("network_model", "is \"tcp\" on a " +
                                  std::string(to_string(scenario.platform.fabric)) +
                                  " fabric, expected \"ideal\" or factors (RDMA pays no TCP "
                                  "slow start)");
    }
    if (!r.has("network_model")) scenario.network_model = {NetworkModelKind::factors, 1.0, 1.0};
  }

  const Json& strategies = r.require("strategies", "a non-empty array of strategies");
  if (!strategies.is_array() || strategies.empty()) {
    r.fail("strategies", "is " + describe_json(strategies) +
                             ", expected a non-empty array of strategies");
  }
  std::set<std::string> labels;
  for (size_t i = 0; i < strategies.size(); ++i) {
    const std::string path = json_path(r.path_of("strategies"), i);
    StrategySpec spec = read_strategy(strategies[i], path, file, scenario.model,
                                      scenario.nodes.devices_per_node);
    if (!labels.insert(spec.label).second) {
      throw InputError(file, path, "repeats the strategy \"" + spec.label +
                                       "\", expected a distinct \"label\" for each entry");
    }
    scenario.strategies.push_back(std::move(spec));
  }
  // Only all-reduce runs without a parameter server.
  if (scenario.parameter_servers == 0) {
    for (const StrategySpec& spec : scenario.strategies) {
      if (spec.kind == StrategyKind::allreduce) continue;
      throw InputError(file, "/cluster/parameter_servers",
                       "is 0, but the strategy \"" + spec.label +
                           "\" needs a parameter server; expected an integer in [1, " +
                           std::to_string(kMaxParameterServers) + "], or only allreduce strategies");
    }
  }

  scenario.steps = r.optional_integer("steps", 1, kMaxSteps).value_or(5);
  scenario.warmup_steps = r.optional_integer("warmup_steps", 0, kMaxSteps).value_or(1);
  scenario.seed = static_cast<uint64_t>(
      r.optional_integer("seed", 0, std::numeric_limits<int64_t>::max()).value_or(1));
  scenario.pcie_copies = r.optional_boolean("pcie_copies").value_or(true);
  scenario.compression = read_compression(r);
  scenario.stragglers = read_stragglers(r);
  scenario.training = read_training(r);
  scenario.placement = read_placement(r);
  scenario.precision =
      *parse_precision(r.optional_choice("precision", std::vector<std::string>(
                                                         precision_names().begin(),
                                                         precision_names().end()))
                           .value_or("fp32"));
  scenario.memory_check = r.optional_boolean("memory_check").value_or(true);
  r.finish();
  check_roles(scenario, file);
  check_precision(scenario, file);
  return scenario;
}

std::vector<std::string> precision_warnings(const Scenario& scenario) {
  std::vector<std::string> out;
  const auto warn = [&](const DeviceProfile& device) {
    const PrecisionCheck c = precision_support(device, scenario.precision);
    if (c.support != PrecisionSupport::slow) return;
    const std::string line = "warning: " + device.name + " runs " +
                             std::string(to_string(scenario.precision)) + " slowly (" + c.reason +
                             ")";
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(line);
  };
  warn(scenario.worker_device);
  for (const StrategySpec& spec : scenario.strategies) {
    if (spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid) {
      warn(scenario.ps_device);
      break;
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> shared_device_groups(const Scenario& scenario) {
  std::map<int64_t, std::vector<int64_t>> by_device;
  for (size_t h = 0; h < scenario.shared_devices.size(); ++h) {
    by_device[scenario.shared_devices[h]].push_back(static_cast<int64_t>(h));
  }
  std::vector<std::vector<int64_t>> groups;
  for (auto& [device, hosts] : by_device) {
    if (hosts.size() > 1) groups.push_back(std::move(hosts));
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

Scenario load_scenario(const std::filesystem::path& file) {
  return parse_scenario(read_json_file(file), file.string(), file.parent_path());
}

Json scenario_to_json(const Scenario& s) {
  Json strategies = Json::array();
  for (const auto& st : s.strategies) {
    Json j = {{"name", std::string(to_string(st.kind))}, {"label", st.label}};
    if (st.kind == StrategyKind::ralp || st.kind == StrategyKind::hybrid) {
      const std::optional<Head> head =
          st.cut ? std::optional<Head>(parse_head(s.model, *st.cut)) : std::nullopt;
      if (head && !head->is_suffix()) {
        Json roots = Json::array();
        for (const LayerId id : minimal_layers(s.model, *head)) roots.push_back(s.model.layer(id).name());
        j["head"] = roots;
      } else {
        j["cut"] = st.cut.value_or("auto");
      }
      j["head_mode"] = std::string(to_string(st.head_mode));
    }
    if (st.kind != StrategyKind::allreduce) j["sharding"] = std::string(to_string(st.sharding));
    if (st.kind == StrategyKind::allreduce || st.kind == StrategyKind::hybrid) {
      j["fusion_threshold"] = st.fusion_threshold.value();
      j["cycle_time"] = st.cycle_time.value();
      j["ring_model"] = std::string(to_string(st.ring_model));
    }
    strategy_nodes_to_json(st, s.nodes.devices_per_node, j);
    if (st.token_queues) j["sync"] = "token_queues";
    if (st.transport.name != "ideal") j["transport"] = st.transport.name;
    strategies.push_back(std::move(j));
  }
  const auto link = [](const LinkSpec& l) {
    return Json{{"bandwidth", l.bandwidth.value()}, {"latency", l.latency.value()}};
  };
  Json platform = {{"kind", std::string(to_string(s.platform.kind))}};
  if (s.platform.kind == PlatformKind::file) {
    platform["file"] = s.platform.file.string();
    platform["roles"] = s.platform.roles;
  } else {
    platform["nic_bandwidth"] = s.platform.nic.bandwidth.value();
    platform["latency"] = s.platform.nic.latency.value();
    if (s.platform.ps_nic) platform["ps_nic"] = link(*s.platform.ps_nic);
    if (s.platform.worker_nic) platform["worker_nic"] = link(*s.platform.worker_nic);
    if (s.platform.backbone) platform["backbone"] = link(*s.platform.backbone);
    if (s.platform.nic_burst.value() > 0.0) platform["nic_burst"] = s.platform.nic_burst.value();
    if (s.platform.kind == PlatformKind::racks) {
      platform["hosts_per_rack"] = s.platform.hosts_per_rack;
      platform["rack_uplink"] = link(*s.platform.rack_uplink);
    }
    if (!s.platform.topology.empty()) platform["topology"] = s.platform.topology;
    if (s.platform.kind == PlatformKind::rails) {
      platform["oversubscription"] = s.platform.oversubscription;
    }
  }
  if (s.platform.fabric != Fabric::ethernet) {
    platform["fabric"] = std::string(to_string(s.platform.fabric));
  }
  Json network;
  switch (s.network_model.kind) {
    case NetworkModelKind::tcp:
      network = "tcp";
      break;
    case NetworkModelKind::ideal:
      network = "ideal";
      break;
    case NetworkModelKind::factors:
      network = {{"latency_factor", s.network_model.latency_factor},
                 {"bandwidth_factor", s.network_model.bandwidth_factor}};
      break;
  }
  static constexpr const char* kCompression[] = {"none", "fp16", "int8", "topk"};
  static constexpr const char* kStragglers[] = {"none", "lognormal", "bernoulli"};
  Json compression = {{"kind", kCompression[static_cast<int>(s.compression.kind)]}};
  if (s.compression.kind == CompressionKind::topk) compression["ratio"] = s.compression.topk_ratio;
  if (s.compression.encode_rate) compression["encode_rate"] = s.compression.encode_rate->value();
  Json stragglers = {{"kind", kStragglers[static_cast<int>(s.stragglers.kind)]}};
  if (s.stragglers.kind == StragglerKind::lognormal) stragglers["sigma"] = s.stragglers.sigma;
  if (s.stragglers.kind == StragglerKind::bernoulli) {
    stragglers["probability"] = s.stragglers.probability;
    stragglers["slowdown"] = s.stragglers.slowdown;
  }
  Json out = {
      {"name", s.name},
      {"model", s.model_ref},
      {"batch_per_worker", s.batch_per_worker},
      {"cluster",
       {{"workers", s.workers},
        {"parameter_servers", s.parameter_servers},
        {"worker_device", s.worker_device.name},
        {"ps_device", s.ps_device.name},
        {"platform", platform}}},
      {"network_model", network},
      {"strategies", strategies},
      {"steps", s.steps},
      {"warmup_steps", s.warmup_steps},
      {"seed", s.seed},
      {"pcie_copies", s.pcie_copies},
      {"compression", compression},
      {"stragglers", stragglers},
      {"training",
       {{"learning_rate", s.training.learning_rate},
        {"momentum", s.training.momentum},
        {"step_timeout", s.training.step_timeout.value()},
        {"threads", s.training.threads},
        {"epochs", s.training.epochs},
        {"dataset_images", s.training.dataset_images}}},
      {"placement", {{"split_threshold", s.placement.split_threshold}}},
      {"precision", std::string(to_string(s.precision))},
      {"memory_check", s.memory_check},
  };
  nodes_to_json(s.nodes, out["cluster"]);
  if (!s.source.empty()) out["source"] = s.source;
  if (!s.shared_devices.empty()) out["cluster"]["shared_devices"] = s.shared_devices;
  if (s.price_per_hour) out["cluster"]["price_per_hour"] = format_price(*s.price_per_hour);
  if (s.message_cpu.charged() || s.message_cpu.waiting_share > 0.0) {
    out["cluster"]["message_cpu"] = message_cpu_to_json(s.message_cpu);
  }
  return out;
}

Json message_cpu_to_json(const MessageCpuSpec& spec) {
  constexpr double kNsPerSecond = 1e9;
  constexpr double kUsPerSecond = 1e6;
  Json out = {{"send_ns_per_byte", spec.send_s_per_byte * kNsPerSecond},
              {"receive_ns_per_byte", spec.receive_s_per_byte * kNsPerSecond},
              {"send_us_per_message", spec.send_s_per_message * kUsPerSecond},
              {"receive_us_per_message", spec.receive_s_per_message * kUsPerSecond}};
  if (spec.waiting_share > 0.0) out["waiting_share"] = spec.waiting_share;
  return out;
}

}  // namespace ralp
