// The namespace testbed: ip and tc run as child processes, only ever inside the namespaces made
// here (`ip -n NS` or `ip netns exec NS`), so the machine's own network is never touched.
#include "ralp/validate/testbed.hpp"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "ralp/validate/process.hpp"

namespace ralp::validate {
namespace {

constexpr double kMinBurstBytes = 65536.0;
constexpr double kBurstSeconds = 0.002;
constexpr const char* kTbfLatency = "100ms";
// The most bytes one TCP connection may keep queued below its socket on a host
// (net.ipv4.tcp_limit_output_bytes, set in each host's namespace). The shaper is one FIFO queue,
// and this machine's Linux lets a connection queue 4 MiB there: a parameter server's pulls to one
// worker filled it before the other's, and a host's acknowledgements waited behind its own data.
// With 64 KiB the connections take turns, as on a fair link, at the same goodput (`ralp cluster
// --trace` shows when each pull reaches its worker).
constexpr const char* kQueuedBytesPerConnection = "65536";
constexpr double kCommandTimeoutS = 30.0;
constexpr int kBridgeHost = 254;
constexpr int kMaxHosts = 200;

// Clean-up commands run to the end even after Ctrl-C.
const ProcessOptions kCleanUp{.timeout_s = kCommandTimeoutS, .uninterruptible = true};

std::string host_device() { return "eth0"; }
std::string bridge_port(int host) {
  std::string name = "h";  // appended, not "h" + ...: GCC 12 warns (-Wrestrict) on the latter
  name += std::to_string(host);
  return name;
}

// A process that has exited but is not reaped yet still answers kill(pid, 0).
bool is_zombie(long pid) {
  const std::string line = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  if (line.empty()) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

}  // namespace

std::optional<LinkRate> parse_link_rate(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return std::nullopt;
  double value = 0.0;
  try {
    size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit;
  for (size_t j = i; j < text.size(); ++j) {
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[j])));
  }
  double scale = 0.0;
  if (unit == "kbit" || unit == "kbps") scale = 1e3;
  if (unit == "mbit" || unit == "mbps") scale = 1e6;
  if (unit == "gbit" || unit == "gbps") scale = 1e9;
  if (scale == 0.0 || !(value > 0.0)) return std::nullopt;
  return LinkRate{value * scale, text};
}

double tbf_burst_bytes(const LinkRate& rate) {
  return std::max(kMinBurstBytes, std::ceil(rate.bytes_per_s() * kBurstSeconds));
}

std::vector<std::string> in_namespace(const std::string& ns) { return {"ip", "netns", "exec", ns}; }

std::string own_prefix() { return std::string(kPrefixStem) + std::to_string(getpid()) + "-"; }

std::vector<std::string> stale_namespaces(const std::vector<std::string>& names) {
  std::vector<std::string> stale;
  const std::string stem = kPrefixStem;
  for (const auto& name : names) {
    if (name.rfind(stem, 0) != 0) continue;
    const size_t dash = name.find('-', stem.size());
    if (dash == std::string::npos || dash == stem.size()) continue;
    const std::string digits = name.substr(stem.size(), dash - stem.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    const bool alive = (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) &&
                       !is_zombie(pid);
    if (!alive) stale.push_back(name);
  }
  return stale;
}

std::vector<std::string> list_namespaces() {
  ProcessResult r;
  try {
    r = run_process({"ip", "netns", "list"}, {.timeout_s = kCommandTimeoutS});
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception&) {
    return {};
  }
  std::vector<std::string> names;
  if (r.status != 0) return names;
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    if (words >> first) names.push_back(first);
  }
  return names;
}

void remove_namespace(const std::string& ns) {
  // Processes outlive the namespace's name: kill them first (twice, for any they forked).
  for (int round = 0; round < 2; ++round) {
    ProcessResult pids;
    try {
      pids = run_process({"ip", "netns", "pids", ns}, kCleanUp);
    } catch (const std::exception&) {
      break;
    }
    std::istringstream in(pids.output);
    long pid = 0;
    bool any = false;
    while (in >> pid) {
      if (pid > 1 && pid != getpid()) {
        kill(static_cast<pid_t>(pid), SIGKILL);
        any = true;
      }
    }
    if (!any) break;
    usleep(100 * 1000);
  }
  try {
    run_process({"ip", "netns", "delete", ns}, kCleanUp);
  } catch (const std::exception&) {
  }
}

std::vector<std::string> remove_stale_namespaces() {
  auto stale = stale_namespaces(list_namespaces());
  for (const auto& ns : stale) remove_namespace(ns);
  return stale;
}

std::optional<std::string> namespaces_unavailable() {
  if (geteuid() != 0) return "needs root to create network namespaces (run it with sudo)";
  const std::string probe = own_prefix() + "probe";
  ProcessResult r;
  try {
    r = run_process({"ip", "netns", "add", probe}, {.timeout_s = kCommandTimeoutS});
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    return std::string("cannot run ip (install iproute2): ") + e.what();
  }
  if (r.status == 127) return "cannot run ip: install iproute2";
  if (r.status != 0) {
    return "cannot create a network namespace: " + last_lines(r.output, 1);
  }
  remove_namespace(probe);
  return std::nullopt;
}

NamespaceTestbed::NamespaceTestbed(const std::string& prefix, int hosts)
    : prefix_(prefix), bridge_(prefix + "br") {
  if (hosts < 1 || hosts > kMaxHosts) {
    throw std::runtime_error("a testbed has 1 to " + std::to_string(kMaxHosts) + " hosts");
  }
  try {
    run({"ip", "netns", "add", bridge_});
    run({"ip", "-n", bridge_, "link", "set", "lo", "up"});
    run({"ip", "-n", bridge_, "link", "add", "br0", "type", "bridge"});
    run({"ip", "-n", bridge_, "addr", "add",
         std::string(kSubnet) + "." + std::to_string(kBridgeHost) + "/24", "dev", "br0"});
    run({"ip", "-n", bridge_, "link", "set", "br0", "up"});
    for (int h = 0; h < hosts; ++h) {
      const std::string ns = prefix_ + "h" + std::to_string(h);
      run({"ip", "netns", "add", ns});
      hosts_.push_back(ns);
      run({"ip", "-n", ns, "link", "set", "lo", "up"});
      run({"ip", "netns", "exec", ns, "sh", "-c",
           std::string("echo ") + kQueuedBytesPerConnection +
               " > /proc/sys/net/ipv4/tcp_limit_output_bytes"});
      run({"ip", "-n", ns, "link", "add", host_device(), "type", "veth", "peer", "name",
           bridge_port(h), "netns", bridge_});
      run({"ip", "-n", ns, "addr", "add", address(h) + "/24", "dev", host_device()});
      run({"ip", "-n", ns, "link", "set", host_device(), "up"});
      run({"ip", "-n", bridge_, "link", "set", bridge_port(h), "master", "br0"});
      run({"ip", "-n", bridge_, "link", "set", bridge_port(h), "up"});
    }
  } catch (...) {
    teardown();
    throw;
  }
}

NamespaceTestbed::~NamespaceTestbed() { teardown(); }

void NamespaceTestbed::run(const std::vector<std::string>& argv) {
  const ProcessResult r = run_process(argv, {.timeout_s = kCommandTimeoutS});
  if (r.status != 0) {
    throw std::runtime_error(shell_quote(argv) + " failed (status " + std::to_string(r.status) +
                             "): " + last_lines(r.output, 2));
  }
}

void NamespaceTestbed::shape(const LinkRate& rate) {
  char rate_text[64], burst_text[64];
  std::snprintf(rate_text, sizeof rate_text, "%.0fbit", rate.bits_per_s);
  std::snprintf(burst_text, sizeof burst_text, "%.0fb", tbf_burst_bytes(rate));
  for (int h = 0; h < hosts(); ++h) {
    run({"tc", "-n", hosts_[h], "qdisc", "replace", "dev", host_device(), "root", "tbf", "rate",
         rate_text, "burst", burst_text, "latency", kTbfLatency});
    run({"tc", "-n", bridge_, "qdisc", "replace", "dev", bridge_port(h), "root", "tbf", "rate",
         rate_text, "burst", burst_text, "latency", kTbfLatency});
  }
}

std::string NamespaceTestbed::address(int host) const {
  return std::string(kSubnet) + "." + std::to_string(host + 1);
}

std::string NamespaceTestbed::cidr() { return std::string(kSubnet) + ".0/24"; }

std::vector<std::string> NamespaceTestbed::namespaces() const {
  std::vector<std::string> all{bridge_};
  all.insert(all.end(), hosts_.begin(), hosts_.end());
  return all;
}

void NamespaceTestbed::teardown() noexcept {
  if (torn_down_) return;
  torn_down_ = true;
  // Hosts first: their veths' bridge ends go with them.
  for (auto it = hosts_.rbegin(); it != hosts_.rend(); ++it) remove_namespace(*it);
  remove_namespace(bridge_);
}

}  // namespace ralp::validate
