#include "ralp/devices/transport.hpp"

#include <set>
#include <string_view>

namespace ralp {
namespace {

constexpr double kMicro = 1e-6;
constexpr double kNano = 1e-9;
// Bounds a transport file's numbers must keep: a message under a second, a byte under a
// microsecond, a share in (0, 1].
constexpr double kMaxMessageUs = 1e6;
constexpr double kMaxNsPerByte = 1e3;
constexpr double kMinLinkShare = 1e-3;

std::vector<std::filesystem::path> transport_search_path() {
  return search_path("RALP_TRANSPORT_PATH", RALP_TRANSPORT_DIR);
}

}  // namespace

Transport ideal_transport() {
  Transport t;
  t.summary = "wire speed under the scenario's network model: no CPU time, every link's full share";
  t.source = "none: the network model alone";
  return t;
}

std::vector<std::string> available_transports() {
  std::set<std::string> names{"ideal"};
  for (const auto& dir : transport_search_path()) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".json") names.insert(it->path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

std::optional<Transport> find_transport(const std::string& name) {
  if (name == "ideal") return ideal_transport();
  for (const auto& dir : transport_search_path()) {
    const auto candidate = dir / (name + ".json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return load_transport(candidate);
  }
  return std::nullopt;
}

Transport load_transport(const std::filesystem::path& file) {
  const Json value = read_json_file(file);
  ObjectReader r(value, "", file.string());
  Transport t;
  t.name = r.string("name");
  if (t.name != file.stem().string()) {
    r.fail("name", "is \"" + t.name + "\", expected the file's name \"" + file.stem().string() +
                       "\"");
  }
  t.summary = r.string("summary");
  t.source = r.string("source");
  t.message_s = r.number("message_us", 0.0, kMaxMessageUs) * kMicro;
  t.s_per_byte = r.number("cpu_ns_per_byte", 0.0, kMaxNsPerByte) * kNano;
  t.link_share = r.number("link_share", kMinLinkShare, 1.0);
  if (const Json* fitted = r.get("fitted")) {
    const std::set<std::string> known{"message_us", "cpu_ns_per_byte", "link_share"};
    if (!fitted->is_array()) {
      r.fail("fitted", "is " + describe_json(*fitted) + ", expected an array of parameter names");
    }
    for (size_t i = 0; i < fitted->size(); ++i) {
      const Json& f = (*fitted)[i];
      if (!f.is_string() || !known.contains(f.get<std::string>())) {
        throw InputError(file.string(), json_path(r.path_of("fitted"), i),
                         "is " + describe_json(f) +
                             ", expected message_us, cpu_ns_per_byte or link_share");
      }
      t.fitted.push_back(f.get<std::string>());
    }
  }
  r.finish();
  return t;
}

Json transport_to_json(const Transport& t) {
  return Json{{"name", t.name},
              {"summary", t.summary},
              {"source", t.source},
              {"message_us", t.message_s / kMicro},
              {"cpu_ns_per_byte", t.s_per_byte / kNano},
              {"link_share", t.link_share},
              {"fitted", t.fitted}};
}

}  // namespace ralp
