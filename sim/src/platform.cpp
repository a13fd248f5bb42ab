// Star, racks, fat-tree, torus and dragonfly platforms, and platform files with role maps.
#include "platform.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "ralp/spec/nodes.hpp"

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

using NetPoint = simgrid::kernel::routing::NetPoint;

const sg4::Link* duplex_link(sg4::NetZone* zone, const std::string& name, double bandwidth,
                             double latency) {
  return zone->create_split_duplex_link(name, bandwidth)->set_latency(latency)->seal();
}

std::vector<sg4::LinkInRoute> reversed(std::vector<sg4::LinkInRoute> links) {
  std::reverse(links.begin(), links.end());
  for (auto& l : links) {
    l = sg4::LinkInRoute(l.get_link(), l.get_direction() == Direction::UP ? Direction::DOWN
                                                                            : Direction::UP);
  }
  return links;
}

// A node's hosts as members of a zone: each with its route to the node's host side, the NIC its
// traffic leaves by, and its links inside the node.
struct Member {
  NetPoint* point = nullptr;
  std::vector<sg4::LinkInRoute> to_host;
  const sg4::Link* nic = nullptr;
  int64_t nic_index = 0;                // which of the node's NICs (its rail on a rails platform)
  const sg4::Link* nvswitch = nullptr;  // the device's port on the node's switches
  int64_t device = -1;                  // index among the node's devices; -1 for a server
  int64_t root = -1;
  bool gpu_direct = false;  // its NIC traffic leaves from its PCIe switch
  // The links from the host to the far side of its NIC.
  [[nodiscard]] std::vector<sg4::LinkInRoute> to_nic() const {
    // GPUDirect RDMA: the NIC reads the device's memory through their PCIe switch.
    std::vector<sg4::LinkInRoute> out =
        gpu_direct ? std::vector<sg4::LinkInRoute>{to_host.front()} : to_host;
    out.emplace_back(nic, Direction::UP);
    return out;
  }
};

// Creates node `node`'s hosts and links in `zone`: its workers' hosts, its co-located parameter
// servers, the links between them (PCIe to the node's host links, NVLink or NVSwitch between
// devices) and its NICs. Links are named after the node and the hosts.
std::vector<Member> node_members(sg4::NetZone* zone, const Scenario& s, const NodeLayout& layout,
                                 int64_t node) {
  const std::string name = node_name(node);
  const double latency = interconnect_latency(s).value();
  const double device_bandwidth = device_link_bandwidth(s, s.worker_device).value();
  std::vector<const sg4::Link*> roots;
  for (int64_t r = 0; r < layout.host_links; ++r) {
    roots.push_back(duplex_link(zone, name + "-root-" + std::to_string(r), device_bandwidth, latency));
  }
  const LinkSpec& nic = nic_of(s.platform, false);
  std::vector<const sg4::Link*> nics;
  for (int64_t i = 0; i < layout.nics_per_node; ++i) {
    const std::string nic_name = layout.nics_per_node == 1
                                     ? name + "-nic"
                                     : worker_name(layout.first_worker(node) + i) + "-nic";
    nics.push_back(duplex_link(zone, nic_name, nic.bandwidth.value(), nic.latency.value()));
  }
  std::vector<Member> members;
  for (int64_t d = 0; d < layout.devices_per_node; ++d) {
    const int64_t w = layout.first_worker(node) + d;
    sg4::Host* host = zone->create_host(worker_name(w), kHostSpeed);
    host->seal();
    Member m;
    m.point = host->get_netpoint();
    m.device = d;
    m.root = layout.host_link_of_worker(w);
    const sg4::Link* pcie = duplex_link(zone, worker_name(w) + "-pcie", device_bandwidth, latency);
    m.to_host = {{pcie, Direction::UP}, {roots[static_cast<size_t>(m.root)], Direction::UP}};
    m.nic_index = layout.nic_of_worker(w);
    m.nic = nics[static_cast<size_t>(m.nic_index)];
    m.gpu_direct = layout.gpu_direct;
    if (s.nodes.interconnect && s.nodes.interconnect->kind == InterconnectKind::nvswitch) {
      m.nvswitch = duplex_link(zone, worker_name(w) + "-nvswitch", peer_link_bandwidth(s).value(),
                               latency);
    }
    members.push_back(std::move(m));
  }
  for (int64_t p = 0; p < layout.parameter_servers; ++p) {
    if (layout.node_of_ps(p) != node) continue;
    sg4::Host* host = zone->create_host(ps_name(p), kHostSpeed);
    host->seal();
    Member m;
    m.point = host->get_netpoint();
    const sg4::Link* link = duplex_link(zone, ps_name(p) + "-pcie",
                                        device_link_bandwidth(s, s.ps_device).value(), latency);
    m.to_host = {{link, Direction::UP}};
    m.nic_index = p % layout.nics_per_node;
    m.nic = nics[static_cast<size_t>(m.nic_index)];
    members.push_back(std::move(m));
  }
  return members;
}

// Adds the routes between the members of one node to `zone`.
void add_node_routes(sg4::NetZone* zone, const Scenario& s, const std::string& name,
                     const std::vector<Member>& members) {
  const double latency = interconnect_latency(s).value();
  for (size_t a = 0; a < members.size(); ++a) {
    const Member& ma = members[a];
    for (size_t b = a + 1; b < members.size(); ++b) {
      const Member& mb = members[b];
      std::vector<sg4::LinkInRoute> route;
      const bool devices = ma.device >= 0 && mb.device >= 0;
      const auto nvlink = devices ? direct_peer_bandwidth(s, ma.device, mb.device) : std::nullopt;
      if (ma.nvswitch && mb.nvswitch) {
        route = {{ma.nvswitch, Direction::UP}, {mb.nvswitch, Direction::DOWN}};
      } else if (nvlink) {
        // A cube-mesh pair's own NVLink links, as one link of their bandwidth.
        route = {{duplex_link(zone, name + "-nvlink-" + std::to_string(a) + "-" + std::to_string(b),
                              nvlink->value(), latency),
                  Direction::UP}};
      } else if (ma.root >= 0 && ma.root == mb.root) {
        // Two devices behind one PCIe switch: peer traffic stays below the host link.
        route = {ma.to_host.front(), reversed({mb.to_host.front()}).front()};
      } else {
        route = ma.to_host;
        for (const auto& l : reversed(mb.to_host)) route.push_back(l);
      }
      zone->add_route(ma.point, mb.point, nullptr, nullptr, route, true);
    }
  }
}

// Node `node` as a zone of `parent`. Returns the zone's netpoint and its gateway, the far side of
// its NICs.
std::pair<NetPoint*, NetPoint*> build_node(const sg4::NetZone* parent, const Scenario& s,
                                           const NodeLayout& layout, int64_t node) {
  const std::string name = node_name(node);
  auto* zone = sg4::create_full_zone(name);
  zone->set_parent(parent);
  NetPoint* gateway = zone->create_router(name + "-nics");
  const std::vector<Member> members = node_members(zone, s, layout, node);
  for (const Member& m : members) zone->add_route(m.point, gateway, nullptr, nullptr, m.to_nic(), true);
  add_node_routes(zone, s, name, members);
  zone->seal();
  return {zone->get_netpoint(), gateway};
}

// A separate parameter server on nodes' platforms: its host and NIC in a zone of their own (a
// star zone routes correctly only between members of one sort: zones, or hosts and routers).
std::pair<NetPoint*, NetPoint*> build_server(const sg4::NetZone* parent, const Scenario& s,
                                             int64_t shard) {
  const std::string name = ps_name(shard);
  auto* zone = sg4::create_full_zone(name + "-zone");
  zone->set_parent(parent);
  NetPoint* gateway = zone->create_router(name + "-gateway");
  sg4::Host* host = zone->create_host(name, kHostSpeed);
  host->seal();
  const LinkSpec& nic = nic_of(s.platform, true);
  const sg4::Link* link = duplex_link(zone, name + "-nic", nic.bandwidth.value(), nic.latency.value());
  zone->add_route(host->get_netpoint(), gateway, nullptr, nullptr, {{link, Direction::UP}}, true);
  zone->seal();
  return {zone->get_netpoint(), gateway};
}

// A rack's switch on nodes' platforms: a router in a zone of its own, the rack's gateway.
NetPoint* build_rack_switch(sg4::NetZone* rack, const std::string& name) {
  auto* zone = sg4::create_star_zone(name + "-zone");
  zone->set_parent(rack);
  NetPoint* gateway = zone->create_router(name);
  zone->add_route(gateway, nullptr, nullptr, nullptr, {}, true);
  zone->seal();
  rack->add_route(zone->get_netpoint(), nullptr, gateway, nullptr, {}, true);
  return gateway;
}

// Whether the scenario's hosts form nodes (several devices, or servers on the workers' nodes);
// else every host is its own machine with its own NIC, as the platforms have always been built.
bool on_nodes(const Scenario& s) {
  return s.nodes.devices_per_node > 1 || s.nodes.ps_placement == PsPlacement::colocated;
}

// Parameter servers on hosts of their own: the first members of a platform.
int64_t separate_servers(const Scenario& s) {
  return s.nodes.ps_placement == PsPlacement::separate ? s.parameter_servers : 0;
}

// The machines a platform connects: the separate parameter servers, then the nodes (one per
// worker when the scenario has no nodes).
int64_t platform_members(const Scenario& s) {
  return separate_servers(s) + s.workers / s.nodes.devices_per_node;
}

// Member i of a star-shaped zone: a separate server or a worker, each a host with its NIC, or a
// node, whose NICs are inside it.
void add_star_member(sg4::NetZone* zone, const Scenario& s, const NodeLayout& layout, int64_t i,
                     const sg4::Link* backbone) {
  const int64_t servers = separate_servers(s);
  if (!on_nodes(s)) {
    const bool server = i < servers;
    add_star_host(zone, server ? ps_name(i) : worker_name(i - servers), nic_of(s.platform, server),
                  backbone);
    return;
  }
  const auto [point, gateway] =
      i < servers ? build_server(zone, s, i) : build_node(zone, s, layout, i - servers);
  std::vector<sg4::LinkInRoute> route;
  if (backbone != nullptr) route.emplace_back(backbone);
  zone->add_route(point, nullptr, gateway, nullptr, route, true);
}

void build_star(const Scenario& s) {
  auto* zone = sg4::create_star_zone("cluster");
  const sg4::Link* backbone = nullptr;
  if (s.platform.backbone) {
    backbone = zone->create_link("backbone", s.platform.backbone->bandwidth.value())
                   ->set_latency(s.platform.backbone->latency.value())
                   ->seal();
  }
  const NodeLayout layout = node_layout(s);
  for (int64_t i = 0; i < platform_members(s); ++i) add_star_member(zone, s, layout, i, backbone);
  zone->seal();
}

// Racks of hosts_per_rack members (separate PS first, then workers or nodes, in order) whose
// traffic to other racks crosses the rack's split-duplex uplink to a core star.
void build_racks(const Scenario& s) {
  auto* core = sg4::create_star_zone("core");
  const NodeLayout layout = node_layout(s);
  const int64_t members = platform_members(s);
  const int64_t per_rack = s.platform.hosts_per_rack;
  const int64_t racks = (members + per_rack - 1) / per_rack;
  for (int64_t r = 0; r < racks; ++r) {
    const std::string rack_name = "rack-" + std::to_string(r);
    auto* rack = sg4::create_star_zone(rack_name);
    rack->set_parent(core);
    NetPoint* gateway = nullptr;
    if (on_nodes(s)) {
      gateway = build_rack_switch(rack, rack_name + "-switch");
    } else {
      gateway = rack->create_router(rack_name + "-switch");
      rack->add_route(gateway, nullptr, nullptr, nullptr, {}, true);
    }
    for (int64_t i = r * per_rack; i < std::min((r + 1) * per_rack, members); ++i) {
      add_star_member(rack, s, layout, i, nullptr);
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

// A rails platform (docs/fabrics.md): NIC i of every node on leaf switch i; a separate parameter
// server's NIC on leaf i mod NICs per node. Traffic between two NICs of one leaf stays on it
// (a leaf switches at full rate); between leaves it crosses both leaves' uplinks to the spines,
// each carrying 1 / oversubscription of its NICs' bandwidth. One zone of every host, its routes
// listed pair by pair.
void build_rails(const Scenario& s) {
  auto* zone = sg4::create_full_zone("cluster");
  const NodeLayout layout = node_layout(s);
  const LinkSpec& nic = nic_of(s.platform, false);
  const int64_t servers = separate_servers(s);
  const int64_t leaf_nics = layout.nodes + (servers + layout.nics_per_node - 1) / layout.nics_per_node;
  std::vector<const sg4::Link*> uplinks;
  for (int64_t i = 0; i < layout.nics_per_node; ++i) {
    const double bandwidth =
        nic.bandwidth.value() * static_cast<double>(leaf_nics) / s.platform.oversubscription;
    uplinks.push_back(duplex_link(zone, "leaf-" + std::to_string(i) + "-uplink", bandwidth,
                                  nic.latency.value()));
  }
  std::vector<Member> all;
  for (int64_t p = 0; p < servers; ++p) {
    sg4::Host* host = zone->create_host(ps_name(p), kHostSpeed);
    host->seal();
    const LinkSpec& ps_nic = nic_of(s.platform, true);
    Member m;
    m.point = host->get_netpoint();
    m.nic_index = p % layout.nics_per_node;
    m.nic = duplex_link(zone, ps_name(p) + "-nic", ps_nic.bandwidth.value(), ps_nic.latency.value());
    all.push_back(std::move(m));
  }
  std::vector<size_t> first_of_node;
  for (int64_t node = 0; node < layout.nodes; ++node) {
    std::vector<Member> members = node_members(zone, s, layout, node);
    add_node_routes(zone, s, node_name(node), members);
    first_of_node.push_back(all.size());
    for (Member& m : members) all.push_back(std::move(m));
  }
  first_of_node.push_back(all.size());
  const auto node_of = [&](size_t i) {
    return std::upper_bound(first_of_node.begin(), first_of_node.end(), i) - first_of_node.begin();
  };
  for (size_t a = 0; a < all.size(); ++a) {
    for (size_t b = a + 1; b < all.size(); ++b) {
      const bool servers_a = a < static_cast<size_t>(servers);
      if (!servers_a && node_of(a) == node_of(b)) continue;  // routed inside the node
      std::vector<sg4::LinkInRoute> route =
          all[a].to_host.empty() ? std::vector<sg4::LinkInRoute>{{all[a].nic, Direction::UP}}
                                 : all[a].to_nic();
      if (all[a].nic_index != all[b].nic_index) {
        route.emplace_back(uplinks[static_cast<size_t>(all[a].nic_index)], Direction::UP);
        route.emplace_back(uplinks[static_cast<size_t>(all[b].nic_index)], Direction::DOWN);
      }
      const auto back = all[b].to_host.empty()
                            ? std::vector<sg4::LinkInRoute>{{all[b].nic, Direction::UP}}
                            : all[b].to_nic();
      for (const auto& l : reversed(back)) route.push_back(l);
      zone->add_route(all[a].point, all[b].point, nullptr, nullptr, route, true);
    }
  }
  zone->seal();
}

// Fat-tree, torus and dragonfly zones: leaf `id` is a host named after its role (separate PS
// first, then workers) or a node; leaves beyond those are idle "spare-N" hosts.
void build_cluster_zone(const Scenario& s) {
  const auto names = role_names(s);
  const auto members = static_cast<unsigned long>(platform_members(s));
  const auto servers = static_cast<unsigned long>(separate_servers(s));
  const NodeLayout layout = node_layout(s);
  const auto leaf = [names, members, servers, layout, &s](
                        sg4::NetZone* zone, const std::vector<unsigned long>& /*coord*/,
                        unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
    if (on_nodes(s) && id >= servers && id < members) {
      return build_node(zone, s, layout, static_cast<int64_t>(id - servers));
    }
    const std::string name =
        id < members ? names[id] : "spare-" + std::to_string(id - members);
    sg4::Host* host = zone->create_host(name, kHostSpeed);
    host->seal();
    return std::make_pair(host->get_netpoint(), static_cast<NetPoint*>(nullptr));
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

// Bytes of a TCP window that never binds: gamma / (2 x latency) stays finite and far above any
// link's rate for every latency a scenario can hold.
constexpr double kNoTcpWindow = 1e100;

}  // namespace

void configure_network_model(const NetworkModelSpec& spec) {
  switch (spec.kind) {
    case NetworkModelKind::tcp:
      break;  // SimGrid's default LV08 model with its TCP factors.
    case NetworkModelKind::ideal:
    case NetworkModelKind::factors:
      sg4::Engine::set_config("network/model:CM02");
      sg4::Engine::set_config("network/crosstraffic", false);
      // No TCP window: a window too large to bind. A window of 0 would not do, as SimGrid 3.32
      // bounds a flow with latency by min(its set_rate, gamma / (2 x latency)), and a bound of 0
      // means none: every rate the simulator sets (a transport's link share, a CPU's pace) would
      // be dropped.
      sg4::Engine::set_config("network/TCP-gamma", kNoTcpWindow);
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
    case PlatformKind::rails:
      build_rails(s);
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
