// libFuzzer entry point over the scenario and model parsers: bad input must come out as an
// InputError; any other exception (it reaches std::terminate), crash or sanitizer report is a
// finding. scripts/fuzz builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/model/model_file.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/scenario_overrides.hpp"

namespace {

const std::filesystem::path kBaseDir = RALP_FUZZ_BASE_DIR;
constexpr const char* kLabel = "fuzz.json";

// Overrides that touch every kind of value, so that their application is fuzzed too.
const std::vector<ralp::ScenarioOverride> kOverrides{
    {"workers", "3"},        {"parameter-servers", "1"}, {"batch", "2"},
    {"bandwidth", "10Gbps"}, {"latency", "5us"},         {"network-model", "ideal"},
    {"strategy", "ralp"},    {"cut", "auto"}};

template <class Parse>
void allow_input_error(Parse parse) {
  try {
    parse();
  } catch (const ralp::InputError&) {
    // Bad input, reported as the project reports it.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ralp::Json value;
  try {
    value = ralp::parse_json_text(text, kLabel);
  } catch (const ralp::InputError&) {
    return 0;
  }
  allow_input_error([&] { ralp::parse_scenario(value, kLabel, kBaseDir); });
  allow_input_error([&] { ralp::parse_scenario(value, kLabel, kBaseDir, kOverrides); });
  allow_input_error([&] { ralp::parse_model(value, "", kLabel); });
  return 0;
}
