// Strict JSON input: duplicate keys with their paths, syntax errors with positions, readers.
#include "ralp/core/json_input.hpp"

#include <gtest/gtest.h>

namespace ralp {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonInput, DuplicateKeysAreNamedByTheirPath) {
  EXPECT_EQ(error_of(R"({"a": [1, {"x": 1}, {"x": 2, "y": [0, {"z": 1, "z": 2}]}]})"),
            "f.json: /a/2/y/1/z appears twice, expected each key once");
  EXPECT_EQ(error_of(R"({"a/b": {"~": 1, "~": 2}})"),
            "f.json: /a~1b/~0 appears twice, expected each key once");
  // The same key in sibling objects is fine.
  EXPECT_EQ(error_of(R"([{"x": 1}, {"x": 2}])"), "no error");
}

TEST(JsonInput, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(error_of("{\n  \"a\": 1,\n  \"b\": ]\n}"),
            "f.json: not valid JSON: parse error at line 3, column 8: syntax error while parsing "
            "value - unexpected ']'; expected '[', '{', or a literal");
}

TEST(JsonInput, AFolderIsNotAFile) {
  const std::string folder = RALP_TEST_DATA_DIR "/data";
  try {
    read_json_file(folder);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), folder + ": cannot be read (missing or not a file)");
  }
}

TEST(JsonInput, NumbersBeyondADoubleNameTheirPath) {
  // nlohmann refuses 1e400 with a message of its own and no position; the path stands in.
  EXPECT_EQ(error_of(R"({"steps": 1e400})"),
            "f.json: /steps is 1e400, expected a number within a double's range (about "
            "+-1.8e308)");
  EXPECT_EQ(error_of(R"({"a": [{"b": 1}, {"c": [0, 1, -1e999]}]})"),
            "f.json: /a/1/c/2 is -1e999, expected a number within a double's range (about "
            "+-1.8e308)");
  EXPECT_EQ(error_of("[1e400]"),
            "f.json: /0 is 1e400, expected a number within a double's range (about +-1.8e308)");
  EXPECT_EQ(error_of("1e400"),
            "f.json: the document is 1e400, expected a number within a double's range (about "
            "+-1.8e308)");
  // Tiny numbers round to zero, as in every JSON reader.
  EXPECT_EQ(error_of(R"({"steps": 1e-400})"), "no error");
}

TEST(JsonInput, MessagesAreOneLine) {
  const Json value = parse_json_text("{\"a\\nb\\u001b\": 1}", "f.json");
  ObjectReader r(value, "", "f.json");
  try {
    r.finish();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f.json: /a\\nb\\u001b is not a known key, expected no keys here");
    EXPECT_EQ(e.path(), "/a\nb\x1b");  // the accessor keeps the key as it is
  }
  // Without a file the path stands alone, as a command-line option does.
  EXPECT_STREQ(InputError("", "--workers", "is 0, expected an integer >= 1").what(),
               "--workers is 0, expected an integer >= 1");
}

TEST(JsonInput, LongValuesAreCutBetweenCharacters) {
  // The quote and 38 letters, then "é" in bytes 39 and 40: a cut after 40 bytes would split it.
  const Json value = std::string(38, 'a') + "\u00e9bc";
  EXPECT_EQ(describe_json(value), "\"" + std::string(38, 'a') + "...");
}

TEST(JsonInput, EditDistanceCountsTyposOnce) {
  EXPECT_EQ(edit_distance("steps", "steps"), 0u);
  EXPECT_EQ(edit_distance("stepz", "steps"), 1u);     // substitution
  EXPECT_EQ(edit_distance("stps", "steps"), 1u);      // insertion
  EXPECT_EQ(edit_distance("stpes", "steps"), 1u);     // adjacent swap
  EXPECT_EQ(edit_distance("VGG16", "vgg16"), 0u);     // case
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(closest_match("simulat", {"model", "scenario", "simulate"}), "simulate");
  EXPECT_EQ(closest_match("Simulate", {"model", "simulate"}), "simulate");
  // Ties and far words give no hint; neither does a one-letter word.
  EXPECT_EQ(closest_match("vgg17", {"vgg11", "vgg16", "vgg19"}), std::nullopt);
  EXPECT_EQ(closest_match("horovod", {"ps", "ralp", "allreduce", "hybrid"}), std::nullopt);
  EXPECT_EQ(closest_match("z", {"b", "e"}), std::nullopt);
  // Three edits, one more than a 6-letter word allows, and nothing closer.
  EXPECT_EQ(closest_match("naMexx", {"namxyz"}), std::nullopt);
  EXPECT_EQ(closest_match("naMexx", {"namxyz", "name"}), "name");
  EXPECT_EQ(did_you_mean("allreduse", {"ps", "allreduce"}), " (did you mean \"allreduce\"?)");
  EXPECT_EQ(did_you_mean("x", {"ps", "allreduce"}), "");
}

TEST(JsonInput, ReaderSuggestsTheKeyMeant) {
  const Json value = parse_json_text(R"({"worker": 8, "platfrom": {}, "kind": "tpc"})", "f");
  {
    ObjectReader r(value, "/cluster", "f");
    try {
      r.integer("workers", 1, 8);
      FAIL();
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(),
                   "f: /cluster/workers is missing, expected an integer in [1, 8] (found "
                   "\"worker\": did you mean \"workers\"?)");
    }
    try {
      r.choice("kind", {"tcp", "ideal"});
      FAIL();
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(),
                   "f: /cluster/kind is \"tpc\", expected one of: tcp, ideal (did you mean "
                   "\"tcp\"?)");
    }
  }
  {
    // Keys asked about with has() are accepted keys too, present or not.
    ObjectReader r(value, "/cluster", "f");
    EXPECT_TRUE(r.has("worker"));
    EXPECT_FALSE(r.has("platform"));
    r.get("kind");
    try {
      r.finish();
      FAIL();
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(),
                   "f: /cluster/platfrom is not a known key, expected one of: kind, platform, "
                   "worker (did you mean \"platform\"?)");
    }
  }
}

TEST(JsonInput, ReaderChecksTypesRangesAndUnknownKeys) {
  const Json value = parse_json_text(
      R"({"n": 3, "s": "x", "b": true, "q": "10Gbps", "t": "5us", "e": "blue", "z": 1})", "f");
  ObjectReader r(value, "/o", "f");
  EXPECT_EQ(r.integer("n", 1, 5), 3);
  EXPECT_EQ(r.string("s"), "x");
  EXPECT_EQ(r.optional_boolean("b"), true);
  EXPECT_DOUBLE_EQ(r.bandwidth("q").value(), 1.25e9);
  EXPECT_DOUBLE_EQ(r.seconds("t").value(), 5e-6);
  try {
    r.choice("e", {"red", "green"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f: /o/e is \"blue\", expected one of: red, green");
  }
  try {
    r.finish();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f: /o/z is not a known key, expected one of: b, e, n, q, s, t");
  }
  try {
    r.integer("n", 4, 5);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f: /o/n is 3, expected an integer in [4, 5]");
  }
  try {
    r.integer("missing", 1, 2);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f: /o/missing is missing, expected an integer in [1, 2]");
  }
}

}  // namespace
}  // namespace ralp
