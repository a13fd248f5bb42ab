// Command-line overrides of a scenario, applied to its JSON and validated by the scenario parser.
#include "ralp/spec/scenario_overrides.hpp"

#include "ralp/spec/memory_plan.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace ralp {
namespace {

const std::vector<std::string> kKinds{"ps", "ralp", "allreduce", "hybrid"};

std::string option_of(const std::string& name) { return "--" + name; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// Text typed for a number: the JSON number it reads as, else the text as a string (which the
// parser then reports: --workers is "many", expected ...).
Json number_or_text(const std::string& text) {
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_number()) return parsed;
  return text;
}

// The label a strategy entry of the file gets, or nullopt for an entry the parser will reject.
std::optional<std::string> label_of(const Json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (!entry.is_object()) return std::nullopt;
  const auto label = entry.find("label");
  if (label != entry.end() && label->is_string()) return label->get<std::string>();
  const auto name = entry.find("name");
  if (name == entry.end() || !name->is_string()) return std::nullopt;
  const auto cut = entry.find("cut");
  std::optional<std::string> fixed_cut;
  if (cut != entry.end() && cut->is_string() && cut->get<std::string>() != "auto") {
    fixed_cut = cut->get<std::string>();
  }
  // A head's name as the parser gives it when the list holds its minimal layers in the model's
  // order and is not a suffix of it (as scenario_to_json writes a head); the parser, which has
  // the model, names other lists by their closure.
  const auto head = entry.find("head");
  if (head != entry.end() && head->is_array() && !head->empty()) {
    std::string name;
    for (const Json& layer : *head) {
      if (!layer.is_string()) return std::nullopt;
      name += (name.empty() ? "" : "+") + layer.get<std::string>();
    }
    fixed_cut = head->size() == 1 ? name + "+" : name;
  }
  return default_strategy_label(name->get<std::string>(), fixed_cut);
}

std::optional<std::string> kind_of(const Json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object()) {
    const auto name = entry.find("name");
    if (name != entry.end() && name->is_string()) return name->get<std::string>();
  }
  return std::nullopt;
}

// The overridden scenario and how to name the errors about it.
struct Applied {
  Json value;
  std::map<std::string, std::string> option_at;  // JSON path -> the option that set it
  // --strategy keeps one entry of the file: /strategies/0 was /strategies/N there.
  std::optional<size_t> kept_strategy;
};

bool has_object(const Json& value, const std::string& pointer) {
  if (pointer.empty()) return value.is_object();
  const Json::json_pointer p(pointer);
  return value.contains(p) && value.at(p).is_object();
}

// Sets `key` of the object at `parent` when that is an object; otherwise the file's own error
// (cluster is missing, or an array) is the one to report, and the parser will.
void set_in(Applied& a, const std::string& parent, const std::string& key, Json value,
            const std::string& name) {
  if (!has_object(a.value, parent)) return;
  Json& holder = parent.empty() ? a.value : a.value.at(Json::json_pointer(parent));
  holder[key] = std::move(value);
  a.option_at[json_path(parent, key)] = option_of(name);
}

void keep_strategy(Applied& a, const std::string& file, const std::string& wanted) {
  const bool is_kind = std::find(kKinds.begin(), kKinds.end(), wanted) != kKinds.end();
  if (!a.value.contains("strategies")) {
    // No strategies to choose from: the choice is a new strategy of that kind.
    if (!is_kind) {
      throw InputError("", "--strategy",
                       "is \"" + wanted + "\", expected one of: " + join(kKinds) +
                           did_you_mean(wanted, kKinds));
    }
    a.value["strategies"] = Json::array({wanted});
    return;
  }
  Json& entries = a.value["strategies"];
  if (!entries.is_array()) return;  // the parser reports the file's strategies
  std::vector<std::string> labels;
  std::optional<size_t> found;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto label = label_of(entries[i]);
    if (label) labels.push_back(*label);
    if (!found && label == wanted) found = i;
  }
  for (size_t i = 0; i < entries.size() && !found; ++i) {
    if (kind_of(entries[i]) == wanted) found = i;
  }
  if (found) {
    entries = Json::array({entries[*found]});
    a.kept_strategy = *found;
    return;
  }
  if (is_kind) {
    entries = Json::array({wanted});
    a.option_at["/strategies/0"] = "--strategy";
    return;
  }
  std::vector<std::string> choices = labels;
  for (const auto& kind : kKinds) {
    if (std::find(choices.begin(), choices.end(), kind) == choices.end()) choices.push_back(kind);
  }
  throw InputError("", "--strategy",
                   "is \"" + wanted + "\", expected a strategy of " + file + " (" + join(labels) +
                       ") or a kind (" + join(kKinds) + ")" + did_you_mean(wanted, choices));
}

void set_cuts(Applied& a, const std::string& file, const std::string& cut) {
  bool any = false;
  if (a.value.contains("strategies") && a.value["strategies"].is_array()) {
    Json& entries = a.value["strategies"];
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto kind = kind_of(entries[i]);
      if (kind != "ralp" && kind != "hybrid") continue;
      if (entries[i].is_string()) entries[i] = Json{{"name", *kind}};
      entries[i].erase("cut");
      entries[i].erase("head");
      // "a+b" is the head {a, b} with their descendants, as outputs name such heads.
      if (cut.find('+') != std::string::npos && cut != "auto") {
        Json roots = Json::array();
        for (size_t start = 0; start <= cut.size();) {
          const size_t plus = std::min(cut.find('+', start), cut.size());
          if (plus > start) {
            const std::string path = json_path(json_path("/strategies", i), "head");
            a.option_at[json_path(path, roots.size())] = "--cut";
            roots.push_back(cut.substr(start, plus - start));
          }
          start = plus + 1;
        }
        entries[i]["head"] = roots;
        a.option_at[json_path(json_path("/strategies", i), "head")] = "--cut";
      } else {
        entries[i]["cut"] = cut;
        a.option_at[json_path(json_path("/strategies", i), "cut")] = "--cut";
      }
      any = true;
    }
  }
  if (!any) {
    throw InputError("", "--cut",
                     "is \"" + cut + "\", but no strategy of " + file +
                         " takes a cut; expected a ralp or hybrid strategy to apply it to");
  }
}

void set_link_value(Applied& a, const std::string& key, const ScenarioOverride& o) {
  const std::string platform = "/cluster/platform";
  if (!has_object(a.value, platform)) return;
  const Json& object = a.value.at(Json::json_pointer(platform));
  const auto kind = object.find("kind");
  if (kind != object.end() && *kind == "file") {
    throw InputError("", option_of(o.name),
                     "is \"" + o.value +
                         "\", but the platform is a SimGrid platform file (kind \"file\"), whose "
                         "links set their own; expected a generated platform");
  }
  set_in(a, platform, key, number_or_text(o.value), o.name);
}

// A key of the scenario's training object, which the override creates where the file has none.
void set_training_value(Applied& a, const std::string& key, const ScenarioOverride& o) {
  if (!a.value.contains("training")) a.value["training"] = Json::object();
  set_in(a, "/training", key, number_or_text(o.value), o.name);
}

// The node interconnect's bandwidth; a scenario without one has nothing to override.
void set_interconnect_bandwidth(Applied& a, const ScenarioOverride& o) {
  const std::string interconnect = "/cluster/node_interconnect";
  if (!has_object(a.value, "/cluster")) return;
  if (!has_object(a.value, interconnect)) {
    throw InputError("", option_of(o.name),
                     "is \"" + o.value +
                         "\", but the scenario has no cluster.node_interconnect; expected a "
                         "scenario of nodes of several devices");
  }
  set_in(a, interconnect, "bandwidth", number_or_text(o.value), o.name);
}

// Fewer workers than a node's devices (a sweep that starts below one node, --workers 1 on a
// scenario of 8-GPU servers): one node of that many devices, its NICs and host links clipped to
// them. Only where --workers is given and --devices-per-node is not.
void fit_nodes_to_workers(Applied& a) {
  if (!has_object(a.value, "/cluster")) return;
  Json& cluster = a.value.at(Json::json_pointer("/cluster"));
  const auto workers = cluster.find("workers");
  const auto per_node = cluster.find("devices_per_node");
  if (workers == cluster.end() || per_node == cluster.end() || !workers->is_number_integer() ||
      !per_node->is_number_integer()) {
    return;
  }
  const int64_t w = workers->get<int64_t>();
  const int64_t d = per_node->get<int64_t>();
  if (w < 1 || w >= d) return;
  cluster["devices_per_node"] = w;
  const auto nics = cluster.find("nics_per_node");
  if (nics != cluster.end() && nics->is_number_integer() && nics->get<int64_t>() == d) {
    cluster["nics_per_node"] = w;
  }
  const auto link = cluster.find("node_interconnect");
  if (link != cluster.end() && link->is_object()) {
    const auto host_links = link->find("host_links");
    if (host_links != link->end() && host_links->is_number_integer() &&
        host_links->get<int64_t>() > w) {
      (*link)["host_links"] = w;
    }
  }
}

// Every strategy's transport (a strategy given by name becomes an object).
void set_transports(Applied& a, const std::string& transport) {
  if (!a.value.contains("strategies") || !a.value["strategies"].is_array()) return;
  Json& entries = a.value["strategies"];
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].is_string()) entries[i] = Json{{"name", entries[i]}};
    if (!entries[i].is_object()) continue;  // the parser reports it
    entries[i]["transport"] = transport;
    a.option_at[json_path(json_path("/strategies", i), "transport")] = "--transport";
  }
}

Applied apply(const Json& scenario, const std::string& file,
              const std::vector<ScenarioOverride>& overrides) {
  std::map<std::string, const ScenarioOverride*> by_name;
  std::vector<std::string> names;
  for (const auto& option : scenario_override_options()) names.push_back(option.name);
  for (const auto& o : overrides) {
    if (std::find(names.begin(), names.end(), o.name) == names.end()) {
      throw InputError("", option_of(o.name),
                       "is not an override, expected one of: " + join(names) +
                           did_you_mean(o.name, names));
    }
    if (!by_name.emplace(o.name, &o).second) {
      throw InputError("", option_of(o.name), "is given twice, expected it once");
    }
  }
  Applied a{.value = scenario};
  if (!a.value.is_object()) return a;  // the parser reports the document itself
  for (const auto& name : names) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    const ScenarioOverride& o = *it->second;
    if (name == "workers") {
      set_in(a, "/cluster", "workers", number_or_text(o.value), name);
    } else if (name == "parameter-servers") {
      set_in(a, "/cluster", "parameter_servers", number_or_text(o.value), name);
    } else if (name == "devices-per-node") {
      set_in(a, "/cluster", "devices_per_node", number_or_text(o.value), name);
    } else if (name == "batch") {
      set_in(a, "", "batch_per_worker", number_or_text(o.value), name);
    } else if (name == "bandwidth") {
      set_link_value(a, "nic_bandwidth", o);
    } else if (name == "latency") {
      set_link_value(a, "latency", o);
    } else if (name == "network-model") {
      set_in(a, "", "network_model", o.value, name);
    } else if (name == "strategy") {
      keep_strategy(a, file, o.value);
    } else if (name == "cut") {
      set_cuts(a, file, o.value);
    } else if (name == "transport") {
      set_transports(a, o.value);
    } else if (name == "nics-per-node") {
      set_in(a, "/cluster", "nics_per_node", number_or_text(o.value), name);
    } else if (name == "ps-placement") {
      set_in(a, "/cluster", "ps_placement", o.value, name);
    } else if (name == "worker-device") {
      set_in(a, "/cluster", "worker_device", o.value, name);
    } else if (name == "ps-device") {
      set_in(a, "/cluster", "ps_device", o.value, name);
    } else if (name == "interconnect-bandwidth") {
      set_interconnect_bandwidth(a, o);
    } else if (name == "price-per-hour") {
      set_in(a, "/cluster", "price_per_hour", o.value, name);
    } else if (name == "epochs") {
      set_training_value(a, "epochs", o);
    } else if (name == "dataset-images") {
      set_training_value(a, "dataset_images", o);
    } else if (name == "precision") {
      set_in(a, "", "precision", o.value, name);
    }
  }
  if (by_name.contains("workers") && !by_name.contains("devices-per-node")) {
    fit_nodes_to_workers(a);
  }
  return a;
}

// An error found in the overridden scenario, named as the user wrote it.
InputError renamed(const InputError& e, const Applied& a) {
  if (const auto it = a.option_at.find(e.path()); it != a.option_at.end()) {
    return InputError("", it->second, e.problem());
  }
  static const std::string kKept = "/strategies/0";
  if (a.kept_strategy && e.path().starts_with(kKept) &&
      (e.path().size() == kKept.size() || e.path()[kKept.size()] == '/')) {
    return InputError(e.file(),
                      json_path("/strategies", *a.kept_strategy) + e.path().substr(kKept.size()),
                      e.problem());
  }
  return e;
}

}  // namespace

const std::vector<OverrideOption>& scenario_override_options() {
  static const std::vector<OverrideOption> kOptions{
      {"workers", "N", "Workers (replaces /cluster/workers)"},
      {"parameter-servers", "P",
       "Parameter servers (replaces /cluster/parameter_servers; 0 for allreduce only)"},
      {"devices-per-node", "D",
       "Devices per node, the workers grouped in order (replaces /cluster/devices_per_node)"},
      {"batch", "B", "Images per worker per step (replaces /batch_per_worker)"},
      {"bandwidth", "RATE",
       "NIC bandwidth, e.g. 10Gbps (replaces /cluster/platform/nic_bandwidth; ps_nic and "
       "worker_nic keep a bandwidth of their own)"},
      {"latency", "TIME", "NIC latency, e.g. 50us (replaces /cluster/platform/latency)"},
      {"network-model", "MODEL", "tcp or ideal (replaces /network_model)"},
      {"strategy", "S",
       "Only this strategy: a label of the scenario, else a kind (ps, ralp, allreduce, hybrid) "
       "with default options"},
      {"transport", "T",
       "How every strategy's framework moves its bytes: ideal (wire speed) or a transport of "
       "ralp transport list (replaces /strategies/*/transport)"},
      {"cut", "LAYER", "First head layer of every ralp and hybrid strategy, or auto, or A+B (the head: layers A and B with their descendants)"},
      {"nics-per-node", "N", "NICs per node: 1 or devices_per_node (replaces /cluster/nics_per_node)"},
      {"ps-placement", "WHERE",
       "separate (parameter servers on hosts of their own) or colocated (on the nodes; replaces "
       "/cluster/ps_placement)"},
      {"worker-device", "PROFILE", "Workers' device profile (replaces /cluster/worker_device)"},
      {"ps-device", "PROFILE", "Parameter servers' device profile (replaces /cluster/ps_device)"},
      {"interconnect-bandwidth", "RATE",
       "Bandwidth of the links inside a node (replaces /cluster/node_interconnect/bandwidth)"},
      {"price-per-hour", "PRICE",
       "What a host costs an hour, e.g. \"32.77 USD\" (replaces /cluster/price_per_hour)"},
      {"epochs", "N", "Epochs of the training run (replaces /training/epochs; default 90)"},
      {"dataset-images", "N",
       "Images an epoch reads (replaces /training/dataset_images; default ImageNet-1k's "
       "1,281,167)"},
      {"precision", "P",
       "What the step computes in: fp32, tf32, fp16 or bf16 (mixed precision with FP32 master "
       "weights; replaces /precision; default fp32)"},
  };
  return kOptions;
}

Json apply_scenario_overrides(const Json& scenario, const std::string& file,
                              const std::vector<ScenarioOverride>& overrides) {
  return apply(scenario, file, overrides).value;
}

Scenario parse_scenario(const Json& value, const std::string& file,
                        const std::filesystem::path& base_dir,
                        const std::vector<ScenarioOverride>& overrides) {
  const Applied applied = apply(value, file, overrides);
  try {
    Scenario scenario = parse_scenario(applied.value, file, base_dir);
    (void)check_memory(scenario);  // throws where memory_check refuses
    return scenario;
  } catch (const InputError& e) {
    // Errors inside files the scenario points to (a model file) keep their own names.
    if (e.file() != file) throw;
    throw renamed(e, applied);
  }
}

Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<ScenarioOverride>& overrides) {
  return parse_scenario(read_json_file(file), file.string(), file.parent_path(), overrides);
}

}  // namespace ralp
