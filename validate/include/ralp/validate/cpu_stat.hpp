// What the hypervisor took from this machine's cores while a point ran: the steal time that
// Linux counts per CPU in /proc/stat. On a virtual machine whose host runs other guests too, the
// kernels run slower by about that share, which no profile measured earlier can know.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ralp::validate {

// One CPU's counters from /proc/stat, in its ticks: the steal time and all the time counted.
struct CpuTimes {
  int64_t steal = 0;
  int64_t total = 0;
};

// The "cpuN" lines of /proc/stat's text, by CPU number (the "cpu" line of all CPUs is left out;
// a line too short to have a steal column counts none).
std::map<int, CpuTimes> parse_cpu_times(const std::string& proc_stat);
// This machine's, now; empty where /proc/stat cannot be read.
std::map<int, CpuTimes> read_cpu_times();

// The steal time over all the time counted on `cpus` between two readings, in percent; nullopt
// when no time was counted there (or a CPU is missing from a reading).
std::optional<double> steal_pct(const std::map<int, CpuTimes>& before,
                                const std::map<int, CpuTimes>& after, const std::vector<int>& cpus);

}  // namespace ralp::validate
