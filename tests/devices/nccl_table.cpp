// Prints NCCL's AllReduce choice by message size for DGX A100-like clusters, as docs/nccl.md shows:
//   build/tests/devices/nccl_table > docs/nccl-choice.txt
#include <cstdio>
#include <string>

#include "ralp/devices/nccl_tuning.hpp"

namespace {

using ralp::NcclMachine;

// A DGX A100: 8 A100s, 12 NVLinks each to the NVSwitches, PCIe Gen4 x16 (24 GB/s in NCCL's
// figure), 8 ConnectX-6 200 Gb/s InfiniBand NICs behind the GPUs' PCIe switches.
ralp::NcclTopology dgx_a100(int64_t nodes) {
  ralp::NcclTopology t;
  t.nodes = nodes;
  t.gpus_per_node = 8;
  t.intra = ralp::NcclIntraLink::nvlink;
  t.nvlinks_per_gpu = 12;
  t.pcie_bandwidth = ralp::BytesPerSecond(24e9);
  t.nics_per_node = 8;
  t.nic_bandwidth = ralp::BytesPerSecond(200e9 / 8);
  t.arch = ralp::NcclArch::ampere;
  return t;
}

std::string size_name(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

void print_machine(const char* title, const NcclMachine& m) {
  std::printf("%s: %lld ranks on %lld node(s), %lld channels x %.1f GB/s\n", title,
              static_cast<long long>(m.ranks), static_cast<long long>(m.nodes),
              static_cast<long long>(m.channels), m.bw_intra.value() / 1e9);
  std::printf("  %-6s %-7s %12s %14s\n", "algo", "proto", "latency us", "algbw GB/s");
  for (const auto& c : ralp::nccl_allreduce_costs(m)) {
    std::printf("  %-6s %-7s %12.2f %14.2f\n", std::string(ralp::to_string(c.algorithm)).c_str(),
                std::string(ralp::to_string(c.protocol)).c_str(), c.latency.value() * 1e6,
                c.bandwidth.value() / 1e9);
  }
  std::printf("  %-9s %-6s %-7s %14s\n", "size", "algo", "proto", "time us");
  for (int64_t bytes = 1024; bytes <= (int64_t{1} << 30); bytes *= 4) {
    const auto c = ralp::nccl_allreduce_choice(m, bytes);
    std::printf("  %-9s %-6s %-7s %14.1f\n", size_name(bytes).c_str(),
                std::string(ralp::to_string(c.algorithm)).c_str(),
                std::string(ralp::to_string(c.protocol)).c_str(), c.time(bytes).value() * 1e6);
  }
  std::printf("\n");
}

}  // namespace

int main() {
  std::printf(
      "NCCL 2.30.7 tuning model, AllReduce, per-rank buffer size "
      "(devices/src/nccl_tuning.cpp)\n\n");
  print_machine("1 DGX A100", ralp::nccl_machine(dgx_a100(1)));
  print_machine("4 DGX A100", ralp::nccl_machine(dgx_a100(4)));
  print_machine("16 DGX A100", ralp::nccl_machine(dgx_a100(16)));
  return 0;
}
