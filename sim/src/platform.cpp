// Star, racks, fat-tree, torus and dragonfly platforms, and platform files with role maps.
#include "platform.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace sg4 = simgrid::s4u;

namespace ralp::sim {
namespace {

using Direction = sg4::LinkInRoute::Direction;

std::string ps_name(int64_t i) { return "ps-" + std::to_string(i); }
std::string worker_name(int64_t i) { return "worker-" + std::to_string(i); }

// Role names in platform order: the parameter servers first, then the workers.
std::vector<std::string> role_names(const Scenario& s) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < s.parameter_servers; ++i) names.push_back(ps_name(i));
  for (int64_t i = 0; i < s.workers; ++i) names.push_back(worker_name(i));
  return names;
}

const LinkSpec& nic_of(const PlatformSpec& p, bool is_ps) {
  if (is_ps && p.ps_nic) return *p.ps_nic;
  if (!is_ps && p.worker_nic) return *p.worker_nic;
  return p.nic;
}

// A host with its own split-duplex NIC link inside a star zone.
sg4::Host* add_star_host(sg4::NetZone* zone, const std::string& name, const LinkSpec& nic,
                         const sg4::Link* backbone) {
  sg4::Host* host = zone->create_host(name, kHostSpeed);
  host->seal();
  const sg4::Link* link = zone->create_split_duplex_link(name + "-nic", nic.bandwidth.value())
                              ->set_latency(nic.latency.value())
                              ->seal();
  std::vector<sg4::LinkInRoute> route{{link, Direction::UP}};
  if (backbone != nullptr) route.emplace_back(backbone);
  zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, route, true);
  return host;
}

void build_star(const Scenario& s) {
  auto* zone = sg4::create_star_zone("cluster");
  const sg4::Link* backbone = nullptr;
  if (s.platform.backbone) {
    backbone = zone->create_link("backbone", s.platform.backbone->bandwidth.value())
                   ->set_latency(s.platform.backbone->latency.value())
                   ->seal();
  }
  const auto names = role_names(s);
  for (size_t i = 0; i < names.size(); ++i) {
    const bool is_ps = static_cast<int64_t>(i) < s.parameter_servers;
    add_star_host(zone, names[i], nic_of(s.platform, is_ps), backbone);
  }
  zone->seal();
}

// Racks of hosts_per_rack hosts (PS first, then workers, in order) whose traffic to other racks
// crosses the rack's split-duplex uplink to a core star.
void build_racks(const Scenario& s) {
  auto* core = sg4::create_star_zone("core");
  const auto names = role_names(s);
  const int64_t per_rack = s.platform.hosts_per_rack;
  const int64_t racks = (static_cast<int64_t>(names.size()) + per_rack - 1) / per_rack;
  for (int64_t r = 0; r < racks; ++r) {
    const std::string rack_name = "rack-" + std::to_string(r);
    auto* rack = sg4::create_star_zone(rack_name);
    rack->set_parent(core);
    auto* gateway = rack->create_router(rack_name + "-switch");
    rack->add_route(gateway, nullptr, nullptr, nullptr, {}, true);
    for (int64_t i = r * per_rack; i < std::min<int64_t>((r + 1) * per_rack, names.size()); ++i) {
      add_star_host(rack, names[static_cast<size_t>(i)], nic_of(s.platform, i < s.parameter_servers),
                    nullptr);
    }
    rack->seal();
    const sg4::Link* uplink =
        core->create_split_duplex_link(rack_name + "-uplink",
                                       s.platform.rack_uplink->bandwidth.value())
            ->set_latency(s.platform.rack_uplink->latency.value())
            ->seal();
    core->add_route(rack->get_netpoint(), nullptr, gateway, nullptr, {{uplink, Direction::UP}},
                    true);
  }
  core->seal();
}

// Fat-tree, torus and dragonfly zones: leaf `id` is a host named after its role (PS first, then
// workers; leaves beyond those are idle "spare-N" hosts).
void build_cluster_zone(const Scenario& s) {
  const auto names = role_names(s);
  const auto leaf = [names](sg4::NetZone* zone, const std::vector<unsigned long>& /*coord*/,
                            unsigned long id) {
    const std::string name =
        id < names.size() ? names[id] : "spare-" + std::to_string(id - names.size());
    sg4::Host* host = zone->create_host(name, kHostSpeed);
    host->seal();
    return std::make_pair(host->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  const sg4::ClusterCallbacks callbacks(leaf);
  const auto& g = s.platform.topology_groups;
  const auto u = [](const std::vector<int64_t>& v) {
    return std::vector<unsigned int>(v.begin(), v.end());
  };
  const double bandwidth = s.platform.nic.bandwidth.value();
  const double latency = s.platform.nic.latency.value();
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  sg4::NetZone* zone = nullptr;
  switch (s.platform.kind) {
    case PlatformKind::fat_tree:
      zone = sg4::create_fatTree_zone(
          "cluster", nullptr,
          sg4::FatTreeParams(static_cast<unsigned>(g[0][0]), u(g[1]), u(g[2]), u(g[3])), callbacks,
          bandwidth, latency, policy);
      break;
    case PlatformKind::torus:
      zone = sg4::create_torus_zone("cluster", nullptr,
                                    std::vector<unsigned long>(g[0].begin(), g[0].end()),
                                    callbacks, bandwidth, latency, policy);
      break;
    case PlatformKind::dragonfly:
      zone = sg4::create_dragonfly_zone(
          "cluster", nullptr,
          sg4::DragonflyParams({static_cast<unsigned>(g[0][0]), static_cast<unsigned>(g[0][1])},
                               {static_cast<unsigned>(g[1][0]), static_cast<unsigned>(g[1][1])},
                               {static_cast<unsigned>(g[2][0]), static_cast<unsigned>(g[2][1])},
                               static_cast<unsigned>(g[3][0])),
          callbacks, bandwidth, latency, policy);
      break;
    default:
      break;
  }
  zone->seal();
}

Platform roles_from_file(sg4::Engine& engine, const Scenario& s) {
  const std::string file_key = "/cluster/platform/file";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(s.platform.file, ec)) {
    throw InputError(s.file, file_key,
                     "names " + s.platform.file.string() + ", which cannot be read");
  }
  try {
    engine.load_platform(s.platform.file.string());
  } catch (const std::exception& e) {
    throw InputError(s.platform.file.string(), "", std::string("is not a valid SimGrid platform: ") +
                                                       e.what());
  }
  std::vector<std::string> hosts;
  for (const auto* host : engine.get_all_hosts()) hosts.push_back(host->get_name());
  std::sort(hosts.begin(), hosts.end());
  const auto names = role_names(s);
  Platform out;
  size_t next_free = 0;
  std::vector<std::string> taken;
  for (const auto& [role, host] : s.platform.roles) taken.push_back(host);
  for (size_t i = 0; i < names.size(); ++i) {
    std::string host_name;
    if (const auto it = s.platform.roles.find(names[i]); it != s.platform.roles.end()) {
      host_name = it->second;
      if (!std::binary_search(hosts.begin(), hosts.end(), host_name)) {
        throw InputError(s.file, json_path("/cluster/platform/roles", names[i]),
                         "is \"" + host_name + "\", expected a host of " +
                             s.platform.file.string());
      }
    } else {
      // Roles without an entry take the remaining hosts in name order.
      while (next_free < hosts.size() &&
             std::find(taken.begin(), taken.end(), hosts[next_free]) != taken.end()) {
        ++next_free;
      }
      if (next_free >= hosts.size()) {
        throw InputError(s.file, "/cluster/platform/file",
                         "names " + s.platform.file.string() + ", which has " +
                             std::to_string(hosts.size()) + " hosts, expected at least " +
                             std::to_string(names.size()) + " (parameter servers + workers)");
      }
      host_name = hosts[next_free++];
    }
    sg4::Host* host = engine.host_by_name(host_name);
    (static_cast<int64_t>(i) < s.parameter_servers ? out.ps : out.workers).push_back(host);
  }
  return out;
}

}  // namespace

void configure_network_model(const NetworkModelSpec& spec) {
  switch (spec.kind) {
    case NetworkModelKind::tcp:
      break;  // SimGrid's default LV08 model with its TCP factors.
    case NetworkModelKind::ideal:
    case NetworkModelKind::factors:
      sg4::Engine::set_config("network/model:CM02");
      sg4::Engine::set_config("network/crosstraffic", false);
      sg4::Engine::set_config("network/TCP-gamma", 0.0);
      sg4::Engine::set_config("network/latency-factor", spec.latency_factor);
      sg4::Engine::set_config("network/bandwidth-factor", spec.bandwidth_factor);
      break;
  }
}

Platform build_platform(sg4::Engine& engine, const Scenario& s) {
  switch (s.platform.kind) {
    case PlatformKind::star:
      build_star(s);
      break;
    case PlatformKind::racks:
      build_racks(s);
      break;
    case PlatformKind::fat_tree:
    case PlatformKind::torus:
    case PlatformKind::dragonfly:
      build_cluster_zone(s);
      break;
    case PlatformKind::file:
      return roles_from_file(engine, s);
  }
  Platform out;
  for (int64_t i = 0; i < s.parameter_servers; ++i) {
    out.ps.push_back(engine.host_by_name(ps_name(i)));
  }
  for (int64_t i = 0; i < s.workers; ++i) out.workers.push_back(engine.host_by_name(worker_name(i)));
  return out;
}

}  // namespace ralp::sim
