// The CLI's model and profile commands: JSON fields, determinism, exit statuses.
#include <gtest/gtest.h>

#include "../support/run_command.hpp"
#include "ralp/core/json_input.hpp"

namespace ralp {
namespace {

using testing::ralp_binary;
using testing::run_command;

TEST(Cli, ModelShowJsonHasTheDocumentedFields) {
  const auto result = run_command(ralp_binary() + " model show vgg16 --batch 2 --json");
  ASSERT_EQ(result.status, 0) << result.err;
  const Json j = parse_json_text(result.out, "stdout");
  EXPECT_EQ(j["name"], "vgg16");
  EXPECT_EQ(j["params"], 138357544);
  ASSERT_EQ(j["layers"].size(), 40u);
  const Json& conv = j["layers"][0];
  for (const char* key :
       {"name", "type", "output_shape", "params", "fwd_flops", "activation_bytes"}) {
    EXPECT_TRUE(conv.contains(key)) << key;
  }
  EXPECT_EQ(conv["output_shape"], Json::array({64, 224, 224}));
  // Batch 2: 2 * 64*224*224 floats of 4 bytes.
  EXPECT_EQ(conv["activation_bytes"].get<double>(), 2.0 * 64 * 224 * 224 * 4);
}

TEST(Cli, SameInputSameBytes) {
  for (const char* args : {" model show googlenet --batch 8 --json --device v100",
                           " model export inception_v3", " profile show gtx1080ti"}) {
    const auto first = run_command(ralp_binary() + args);
    const auto second = run_command(ralp_binary() + args);
    ASSERT_EQ(first.status, 0) << args << first.err;
    EXPECT_EQ(first.out, second.out) << args;
    EXPECT_FALSE(first.out.empty());
  }
}

TEST(Cli, UnknownModelAndUsageErrorsExitTwo) {
  const auto unknown = run_command(ralp_binary() + " model show vgg17");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err.rfind("error: vgg17: neither a zoo model", 0), 0u)
      << unknown.err;
  EXPECT_EQ(run_command(ralp_binary() + " model show vgg16 --batch 0").status, 2);
  EXPECT_EQ(run_command(ralp_binary() + " nosuchcommand").status, 2);
  EXPECT_EQ(run_command(ralp_binary() + " --help").status, 0);
}

}  // namespace
}  // namespace ralp
