// Reading the device times of a measured run back.
#include "ralp/results/measured_result.hpp"

#include <limits>

namespace ralp {

std::map<std::string, DeviceTimes> read_device_times(const std::string& file) {
  const Json root = read_json_file(file);
  if (!root.is_object() || !root.contains("results") || !root.at("results").is_array()) {
    throw InputError(file, "/results", "is missing; expected the JSON of ralp cluster --json");
  }
  std::map<std::string, DeviceTimes> out;
  const Json& results = root.at("results");
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string path = json_path("/results", i);
    const Json& r = results.at(i);
    if (!r.is_object()) throw InputError(file, path, "is " + describe_json(r) + ", expected an object");
    if (!r.contains("strategy") || !r.at("strategy").is_string()) {
      throw InputError(file, json_path(path, "strategy"), "is missing; expected the strategy's label");
    }
    const std::string label = r.at("strategy").get<std::string>();
    const std::string list_path = json_path(path, "device_times");
    if (!r.contains("device_times")) {
      throw InputError(file, list_path,
                       "is missing; expected the device times of a measured run (ralp cluster "
                       "--json writes them)");
    }
    const Json& list = r.at("device_times");
    if (!list.is_array()) {
      throw InputError(file, list_path, "is " + describe_json(list) + ", expected an array");
    }
    DeviceTimes times{list_path, {}};
    for (size_t k = 0; k < list.size(); ++k) {
      ObjectReader o(list.at(k), json_path(list_path, k), file);
      DeviceOpTime t;
      t.host = o.string("host");
      t.op = static_cast<int32_t>(o.integer("op", 0, std::numeric_limits<int32_t>::max()));
      t.label = o.string("label");
      t.seconds = o.number("seconds", 0.0, std::numeric_limits<double>::max());
      o.finish();
      times.ops.push_back(std::move(t));
    }
    if (!out.emplace(label, std::move(times)).second) {
      throw InputError(file, json_path(path, "strategy"),
                       "is \"" + label + "\" again; expected each strategy once");
    }
  }
  return out;
}

}  // namespace ralp
