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
