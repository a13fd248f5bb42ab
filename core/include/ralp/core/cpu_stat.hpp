// What the hypervisor took from this machine's cores: the steal time that Linux counts per CPU in
// /proc/stat. On a virtual machine whose host runs other guests too, work runs slower by about
// that share while the CPUs want to run, and a thread's CPU time leaves it out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ralp {

// One CPU's counters from /proc/stat, in its ticks: the steal time, and the time the CPU wanted
// to run (user, nice, system, irq, softirq and steal: all but idle and iowait).
struct CpuTimes {
  int64_t steal = 0;
  int64_t wanted = 0;
};

// The "cpuN" lines of /proc/stat's text, by CPU number (the "cpu" line of all CPUs is left out;
// a line too short to have a steal column counts none).
std::map<int, CpuTimes> parse_cpu_times(const std::string& proc_stat);
// This machine's, now; empty where /proc/stat cannot be read.
std::map<int, CpuTimes> read_cpu_times();

// The steal time over the time `cpus` wanted to run between two readings, in percent (all CPUs
// of the readings when `cpus` is empty); nullopt when they did not want to run (or a CPU is
// missing from a reading).
std::optional<double> steal_pct(const std::map<int, CpuTimes>& before,
                                const std::map<int, CpuTimes>& after, const std::vector<int>& cpus);

}  // namespace ralp
