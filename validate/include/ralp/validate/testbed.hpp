// Hosts on one machine for validation: Linux network namespaces joined by a bridge in a namespace
// of its own, addresses from a private /24 that exists only inside them, and each host's link
// shaped with tc token-bucket filters in both directions. Every name starts with a prefix unique to
// the run ("ralpv-<pid>-"); everything is removed on destruction, and the namespaces of runs whose
// process is gone are found by that prefix and removed at the next start. Nothing outside the
// namespaces it creates is touched.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ralp::validate {

// A link rate as tc writes it ("100mbit", "1gbit", "2.5gbit"), in bits per second.
struct LinkRate {
  double bits_per_s = 0.0;
  std::string text;  // as given, for labels and file names
  [[nodiscard]] double bytes_per_s() const { return bits_per_s / 8.0; }
  friend bool operator==(const LinkRate&, const LinkRate&) = default;
};
// Parses "100mbit", "1gbit", "500kbit", "2.5gbit" (also "Mbit", "Gbps"); nullopt otherwise.
std::optional<LinkRate> parse_link_rate(const std::string& text);

// The token bucket's burst for a rate: 64 KiB, or 2 ms of the rate when larger (256 KB at 1 Gbit).
double tbf_burst_bytes(const LinkRate& rate);

// The command prefix that runs a command inside namespace `ns`: {"ip", "netns", "exec", ns}.
std::vector<std::string> in_namespace(const std::string& ns);

// The name prefix of every namespace validation creates, and this process's own one.
inline constexpr const char* kPrefixStem = "ralpv-";
std::string own_prefix();

// Namespaces named kPrefixStem + "<pid>-..." whose process no longer exists, from `names` (as
// `ip netns list` prints them, first word per line), in the order given.
std::vector<std::string> stale_namespaces(const std::vector<std::string>& names);
// The names `ip netns list` prints; empty when there are none or ip is missing.
std::vector<std::string> list_namespaces();
// Kills every process inside `ns` and deletes it; errors are ignored (it may be half gone).
void remove_namespace(const std::string& ns);
// Removes every stale namespace of earlier runs; returns their names.
std::vector<std::string> remove_stale_namespaces();

// Why namespaces cannot be made here, in one line ("needs root: ..."), or nullopt when they can.
// It creates and deletes one namespace named with the own prefix to find out.
std::optional<std::string> namespaces_unavailable();

class NamespaceTestbed {
 public:
  // The first three octets of the private /24 that exists only inside the namespaces.
  static constexpr const char* kSubnet = "10.213.7";

  // Creates `hosts` host namespaces (addresses kSubnet.1, .2, ...) and a bridge namespace
  // (kSubnet.254 on the bridge, from which mpirun starts the hosts' daemons). Throws
  // std::runtime_error naming the failed command (after removing what it had made).
  NamespaceTestbed(const std::string& prefix, int hosts);
  ~NamespaceTestbed();
  NamespaceTestbed(const NamespaceTestbed&) = delete;
  NamespaceTestbed& operator=(const NamespaceTestbed&) = delete;

  // Shapes every host's link to `rate` in both directions (its egress on its own end of the veth,
  // its ingress on the bridge's end), replacing any earlier shaping.
  void shape(const LinkRate& rate);

  [[nodiscard]] int hosts() const { return static_cast<int>(hosts_.size()); }
  [[nodiscard]] const std::string& host_namespace(int host) const { return hosts_.at(host); }
  [[nodiscard]] const std::string& bridge_namespace() const { return bridge_; }
  [[nodiscard]] std::string address(int host) const;  // "10.213.7.1"
  [[nodiscard]] static std::string cidr();             // "10.213.7.0/24"
  // Every namespace this testbed made, bridge first.
  [[nodiscard]] std::vector<std::string> namespaces() const;

  // Kills every process in the namespaces and deletes them. Safe to call twice; never throws.
  void teardown() noexcept;

 private:
  void run(const std::vector<std::string>& argv);

  std::string prefix_;
  std::string bridge_;
  std::vector<std::string> hosts_;
  bool torn_down_ = false;
};

}  // namespace ralp::validate
