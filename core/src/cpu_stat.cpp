// Steal time per CPU from /proc/stat.
#include "ralp/core/cpu_stat.hpp"

#include <fstream>
#include <sstream>

namespace ralp {

std::map<int, CpuTimes> parse_cpu_times(const std::string& proc_stat) {
  // cpuN user nice system idle iowait irq softirq steal guest guest_nice; guest time is counted
  // in user time already.
  constexpr size_t kColumns = 8;
  constexpr size_t kIdle = 3;
  constexpr size_t kIowait = 4;
  constexpr size_t kSteal = 7;
  std::map<int, CpuTimes> out;
  std::istringstream in(proc_stat);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream words(line.substr(3));
    int cpu = 0;
    if (!(words >> cpu)) continue;
    CpuTimes t;
    int64_t value = 0;
    for (size_t i = 0; i < kColumns && words >> value; ++i) {
      if (i != kIdle && i != kIowait) t.wanted += value;
      if (i == kSteal) t.steal = value;
    }
    out[cpu] = t;
  }
  return out;
}

std::map<int, CpuTimes> read_cpu_times() {
  std::ifstream in("/proc/stat");
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_cpu_times(text.str());
}

std::optional<double> steal_pct(const std::map<int, CpuTimes>& before,
                                const std::map<int, CpuTimes>& after, const std::vector<int>& cpus) {
  std::vector<int> named = cpus;
  if (named.empty()) {
    for (const auto& [cpu, times] : before) named.push_back(cpu);
  }
  int64_t steal = 0;
  int64_t wanted = 0;
  for (const int cpu : named) {
    const auto b = before.find(cpu);
    const auto a = after.find(cpu);
    if (b == before.end() || a == after.end()) return std::nullopt;
    steal += a->second.steal - b->second.steal;
    wanted += a->second.wanted - b->second.wanted;
  }
  if (wanted <= 0) return std::nullopt;
  return 100.0 * static_cast<double>(steal) / static_cast<double>(wanted);
}

}  // namespace ralp
