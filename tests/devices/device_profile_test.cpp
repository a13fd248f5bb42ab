// Device profiles: every shipped profile loads and round-trips; measured fields survive too; the
// host a measured profile names against this machine's CPU.
#include "ralp/devices/device_profile.hpp"

#include <sstream>

#include <gtest/gtest.h>

namespace ralp {
namespace {

TEST(DeviceProfile, ShippedProfilesLoadAndRoundTrip) {
  const auto names = available_profiles();
  for (const char* expected : {"gtx1080ti", "p100", "v100", "a100", "h100", "h200", "cpu-core"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    const DeviceProfile p = load_device_profile(*find_profile(name));
    EXPECT_EQ(p.name, name);
    EXPECT_GT(p.peak_flops.value(), 0.0);
    const DeviceProfile back = parse_device_profile(device_profile_to_json(p), "", "back");
    EXPECT_EQ(back, p) << name;
  }
}

TEST(DeviceProfile, DatasheetFigures) {
  // a100 is the published a100-40gb profile: its datasheet figures with fitted efficiencies.
  const DeviceProfile p = load_device_profile(*find_profile("a100"));
  EXPECT_EQ(p.source, ProfileSource::published);
  EXPECT_DOUBLE_EQ(p.peak_flops.value(), 6912.0 * 2 * 1410e6);  // cores x 2 x boost clock
  EXPECT_DOUBLE_EQ(p.memory_bandwidth.value(), 1555e9);
  // Defaults: summing gradients moves 3 arrays per gradient byte at the memory efficiency.
  EXPECT_DOUBLE_EQ(p.gradient_sum_rate.value(), 1555e9 * p.memory_efficiency / 3);
}

TEST(DeviceProfile, PrecisionPeaksAndMemoryCapacity) {
  const DeviceProfile a100 = load_device_profile(*find_profile("a100"));
  EXPECT_DOUBLE_EQ(a100.memory_capacity->value(), 40e9);
  EXPECT_DOUBLE_EQ(precision_peak(a100, Precision::tf32).value(), 156e12);
  EXPECT_DOUBLE_EQ(precision_peak(a100, Precision::bf16).value(), 312e12);
  EXPECT_DOUBLE_EQ(precision_peak(a100, Precision::fp32).value(), 6912.0 * 2 * 1410e6);
  for (const Precision p : kPrecisions) {
    EXPECT_EQ(precision_support(a100, p).support, PrecisionSupport::native) << to_string(p);
  }
  // A GPU without tensor-core peaks: no TF32 or BF16; FP16 runs, slowly.
  DeviceProfile old = a100;
  old.precision_peaks.clear();
  EXPECT_EQ(precision_support(old, Precision::tf32).support, PrecisionSupport::unsupported);
  EXPECT_EQ(precision_support(old, Precision::bf16).support, PrecisionSupport::unsupported);
  EXPECT_EQ(precision_support(old, Precision::fp16).support, PrecisionSupport::slow);
  EXPECT_DOUBLE_EQ(precision_peak(old, Precision::fp16).value(), 6912.0 * 2 * 1410e6);
  // A CPU: BF16 only where listed or measured, never FP16 or TF32.
  DeviceProfile cpu = load_device_profile(*find_profile("cpu-core"));
  EXPECT_EQ(precision_support(cpu, Precision::bf16).support, PrecisionSupport::unsupported);
  EXPECT_EQ(precision_support(cpu, Precision::fp16).support, PrecisionSupport::unsupported);
  cpu.precision_fitted[Precision::bf16][LayerKind::conv2d] = {FlopsPerSecond(1e11),
                                                             BytesPerSecond(1e10)};
  EXPECT_EQ(precision_support(cpu, Precision::bf16).support, PrecisionSupport::native);
  EXPECT_EQ(precision_support(cpu, Precision::tf32).support, PrecisionSupport::unsupported);
  // Round trip of every new field.
  cpu.source = ProfileSource::measured;
  cpu.memory_capacity = Bytes(64e9);
  cpu.measured.push_back({"relu<4x1x1", LayerKind::relu, 8, Seconds(1e-6), Seconds(2e-6),
                          Seconds(0.0), 0.05, std::nullopt, Precision::bf16});
  EXPECT_EQ(parse_device_profile(device_profile_to_json(cpu), "", "x"), cpu);
}

TEST(DeviceProfile, PublishedProfilesCarryTheirFit) {
  // k80: one GK210, 2,496 cores x 2 x 875 MHz, derived from m40 with one architecture efficiency.
  const DeviceProfile p = load_device_profile(*find_profile("k80"));
  EXPECT_EQ(p.source, ProfileSource::published);
  EXPECT_DOUBLE_EQ(p.peak_flops.value(), 2496.0 * 2 * 875e6);
  EXPECT_EQ(p.multiprocessors, 13);
  ASSERT_TRUE(p.kernel_model && p.published);
  EXPECT_EQ(p.published->derived_from, "m40");
  EXPECT_NE(p.published->architecture_row.find("EC2 p2.8xlarge"), std::string::npos);
  EXPECT_NE(p.published->source.find("DeepBench"), std::string::npos);
  EXPECT_EQ(load_device_profile(*find_profile("p100")).published->derived_from, "");
}

TEST(DeviceProfile, MeasuredFieldsRoundTrip) {
  DeviceProfile p = load_device_profile(*find_profile("cpu-core"));
  p.source = ProfileSource::measured;
  p.measured.push_back({"relu<4x1x1", LayerKind::relu, 8, Seconds(1e-6), Seconds(2e-6),
                        Seconds(0.0), 0.05});
  p.measured.push_back({"relu<8x1x1", LayerKind::relu, 8, Seconds(1e-6), Seconds(2e-6),
                        Seconds(0.0), 0.05, InStepTimes{Seconds(3e-6), Seconds(4e-6), Seconds(0.0)}});
  p.fitted[LayerKind::conv2d] = {FlopsPerSecond(1.1e11), BytesPerSecond(2e10)};
  p.fitted_launch_overhead = Seconds(3e-6);
  p.end_to_end.push_back({"vgg16", 8, Seconds(4.0), Seconds(3.9)});
  p.provenance.emplace("threads", std::string(1, '2'));
  EXPECT_EQ(parse_device_profile(device_profile_to_json(p), "", "x"), p);
  p.time_sharing.push_back({"vgg16", 8, Seconds(4.0), Seconds(8.4)});
  p.time_sharing_slowdown = 1.05;
  EXPECT_EQ(parse_device_profile(device_profile_to_json(p), "", "x"), p);
  p.host = ProfileHost{"AMD EPYC (family 25, model 1)", "", 2};
  EXPECT_EQ(parse_device_profile(device_profile_to_json(p), "", "x"), p);
  p.host = ProfileHost{"Intel Xeon (family 6, model 143)", "NVIDIA H200", 1};
  EXPECT_EQ(parse_device_profile(device_profile_to_json(p), "", "x"), p);
}

// A measured profile written before profiles had a host names its CPU in the provenance.
TEST(DeviceProfile, HostFromAnOlderProfilesProvenance) {
  DeviceProfile p = load_device_profile(*find_profile("cpu-core"));
  p.source = ProfileSource::measured;
  p.fitted[LayerKind::conv2d] = {FlopsPerSecond(1.1e11), BytesPerSecond(2e10)};
  p.provenance = {{"cpu_model", "AMD EPYC (family 26, model 2)"}, {"threads", "2"}};
  const DeviceProfile back = parse_device_profile(device_profile_to_json(p), "", "x");
  ASSERT_TRUE(back.host);
  EXPECT_EQ(*back.host, (ProfileHost{"AMD EPYC (family 26, model 2)", "", 2}));
}

TEST(DeviceProfile, ShippedMeasuredProfilesNameTheirHost) {
  for (const auto& name : available_profiles()) {
    const DeviceProfile p = load_device_profile(*find_profile(name));
    if (p.source != ProfileSource::measured) continue;
    ASSERT_TRUE(p.host) << name;
    // Named after the host: its CPU model and thread count.
    EXPECT_EQ(name.find("amd-epyc-family-26-model-2-"), 0U) << name;
    EXPECT_EQ(p.host->cpu_model, "AMD EPYC (family 26, model 2)") << name;
    EXPECT_NE(name.find(std::to_string(p.host->threads) + "-thread"), std::string::npos) << name;
  }
}

// Two blocks of a two-core machine's /proc/cpuinfo, shortened.
constexpr const char* kCpuinfo =
    "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
    "model name\t: AMD EPYC 7B13 64-Core Processor\nstepping\t: 0\n\n"
    "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
    "model name\t: other\n";

TEST(ThisMachine, CpuModelFromCpuinfo) {
  std::istringstream two(kCpuinfo);
  EXPECT_EQ(cpu_model_from_cpuinfo(two), "AMD EPYC 7B13 64-Core Processor (family 25, model 1)");
  std::istringstream name_only("model name\t: Some CPU\n");
  EXPECT_EQ(cpu_model_from_cpuinfo(name_only), "Some CPU");
  std::istringstream none("processor\t: 0\nBogoMIPS\t: 50.00\n");
  EXPECT_EQ(cpu_model_from_cpuinfo(none), "unknown CPU");
  EXPECT_FALSE(this_machine_cpu_model().empty());
}

DeviceProfile measured_cpu(const std::string& name, const std::string& cpu) {
  DeviceProfile p;
  p.name = name;
  p.kind = DeviceKind::cpu;
  p.source = ProfileSource::measured;
  p.host = ProfileHost{cpu, "", 1};
  return p;
}

TEST(ThisMachine, WarnsOnceWhenAMeasuredCpuProfileComesFromAnotherCpu) {
  const DeviceProfile zen5 = measured_cpu("zen5-1t", "AMD EPYC (family 26, model 2)");
  const DeviceProfile here = measured_cpu("here-1t", "AMD EPYC (family 25, model 1)");
  DeviceProfile datasheet = measured_cpu("cpu-core", "AMD EPYC (family 26, model 2)");
  datasheet.source = ProfileSource::datasheet;
  DeviceProfile gpu = measured_cpu("h200", "AMD EPYC (family 26, model 2)");
  gpu.kind = DeviceKind::gpu;
  const std::string this_cpu = "AMD EPYC (family 25, model 1)";

  const DeviceProfile* same_twice[] = {&zen5, &zen5};
  EXPECT_EQ(foreign_host_warning(same_twice, this_cpu),
            "warning: measured CPU profile 'zen5-1t' from AMD EPYC (family 26, model 2), but "
            "this machine's CPU is AMD EPYC (family 25, model 1): its times may not hold here "
            "(ralp calibrate measures them here)");
  const DeviceProfile* quiet[] = {&here, &datasheet, &gpu};
  EXPECT_EQ(foreign_host_warning(quiet, this_cpu), std::nullopt);
  const DeviceProfile other = measured_cpu("xeon-2t", "Intel Xeon (family 6, model 143)");
  const DeviceProfile* both[] = {&zen5, &other};
  EXPECT_EQ(foreign_host_warning(both, this_cpu),
            "warning: measured CPU profiles 'zen5-1t' from AMD EPYC (family 26, model 2), "
            "'xeon-2t' from Intel Xeon (family 6, model 143), but this machine's CPU is AMD EPYC "
            "(family 25, model 1): their times may not hold here (ralp calibrate measures them "
            "here)");
}

TEST(DeviceProfile, ErrorsNameThePath) {
  const Json bad = parse_json_text(
      R"({"name": "x", "kind": "tpu", "peak_flops": "1TFLOPS", "memory_bandwidth": "1GB/s"})",
      "p.json");
  try {
    parse_device_profile(bad, "", "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "p.json: /kind is \"tpu\", expected one of: cpu, gpu");
  }
  // Time sharing cannot make a device faster than its equal share.
  const Json faster = parse_json_text(
      R"({"name": "x", "kind": "cpu", "peak_flops": "1TFLOPS", "memory_bandwidth": "1GB/s",
          "time_sharing_slowdown": 0.9})",
      "p.json");
  EXPECT_THROW(parse_device_profile(faster, "", "p.json"), InputError);
}

}  // namespace
}  // namespace ralp
