// Device profiles: every shipped profile loads and round-trips; measured fields survive too.
#include "ralp/core/device_profile.hpp"

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
  const DeviceProfile p = load_device_profile(*find_profile("gtx1080ti"));
  EXPECT_EQ(p.source, ProfileSource::datasheet);
  EXPECT_DOUBLE_EQ(p.peak_flops.value(), 11.34e12);
  EXPECT_DOUBLE_EQ(p.memory_bandwidth.value(), 484e9);
  // Defaults: summing gradients moves 3 arrays per gradient byte at 75% of 484 GB/s.
  EXPECT_DOUBLE_EQ(p.gradient_sum_rate.value(), 484e9 * 0.75 / 3);
}

TEST(DeviceProfile, MeasuredFieldsRoundTrip) {
  DeviceProfile p = load_device_profile(*find_profile("cpu-core"));
  p.source = ProfileSource::measured;
  p.measured.push_back({"relu<4x1x1", LayerKind::relu, 8, Seconds(1e-6), Seconds(2e-6),
                        Seconds(0.0), 0.05});
  p.fitted[LayerKind::conv2d] = {FlopsPerSecond(1.1e11), BytesPerSecond(2e10)};
  p.fitted_launch_overhead = Seconds(3e-6);
  p.end_to_end.push_back({"vgg16", 8, Seconds(4.0), Seconds(3.9)});
  p.provenance.emplace("threads", std::string(1, '2'));
  EXPECT_EQ(parse_device_profile(device_profile_to_json(p), "", "x"), p);
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
}

}  // namespace
}  // namespace ralp
