// Strict JSON input: parsing with line/column errors and duplicate-key detection, and a reader
// that validates keys, types and ranges and names the file and JSON path of the first problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ralp/core/units.hpp"

namespace ralp {

using Json = nlohmann::json;

// Bad input: the file, the JSON path (a JSON pointer) and the problem, e.g.
// InputError("s.json", "/cluster/workers", "is 0, expected an integer >= 1") prints as
// "s.json: /cluster/workers is 0, expected an integer >= 1". With an empty path the problem is
// the file's as a whole: "s.json: cannot be read". With an empty file the path stands alone, as
// a command-line option does: InputError("", "--workers", "is 0, ...") prints as
// "--workers is 0, ...". Control characters in the message are escaped (\n, \u001b), so that it
// always prints on one line. Only main turns it into an exit code.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string path, std::string problem);
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  std::string path_;
  std::string problem_;
};

// Reads and parses a JSON file. Throws InputError when the file cannot be read, on a syntax error
// (with line and column) and on a key that appears twice in one object.
Json read_json_file(const std::filesystem::path& file);

// Where named JSON files (profiles, transports) are looked up, in order: the colon-separated
// folders of environment variable `variable`, then `fallback`.
std::vector<std::filesystem::path> search_path(const char* variable,
                                               const std::filesystem::path& fallback);
// The same for text already in memory; `label` names it in errors.
Json parse_json_text(std::string_view text, const std::string& label);

// A short description of a JSON value for error messages: 0, "abc", an array, an object, null.
std::string describe_json(const Json& value);

// Edit distance between two words (insertions, deletions, substitutions and swaps of adjacent
// characters each count 1), ignoring ASCII case.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` when it is close enough to be a likely typo (distance 1 for
// words of up to 4 characters, 2 up to 8, 3 beyond, and fewer edits than either word has
// characters; never `word` itself), and only when no other candidate is as close.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);
// " (did you mean \"X\"?)" for the closest match, or "" when none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Validates one JSON object. Each accessor, has() included, marks its key as accepted; finish()
// rejects the rest, listing every accepted key. Accessors throw InputError naming the key's path
// and the expectation; a required key that is missing names a present, unknown key close to it
// ("did you mean"), and a value outside a choice the closest choice.
class ObjectReader {
 public:
  // Throws unless `value` is an object.
  ObjectReader(const Json& value, std::string path, std::string file);

  // Whether the key is present; marks it accepted.
  [[nodiscard]] bool has(std::string_view key);
  // The raw value (nullptr when absent); marks the key known.
  const Json* get(std::string_view key);
  const Json& require(std::string_view key, std::string_view expectation);

  int64_t integer(std::string_view key, int64_t min, int64_t max);
  std::optional<int64_t> optional_integer(std::string_view key, int64_t min, int64_t max);
  double number(std::string_view key, double min, double max);
  std::optional<double> optional_number(std::string_view key, double min, double max);
  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  // One of `choices`; the error lists them.
  std::string choice(std::string_view key, const std::vector<std::string>& choices);
  std::optional<std::string> optional_choice(std::string_view key,
                                             const std::vector<std::string>& choices);

  // Quantities: a string with a unit or a plain non-negative number in SI base units; strictly
  // positive unless `allow_zero`.
  std::optional<Seconds> optional_seconds(std::string_view key, bool allow_zero = true);
  std::optional<Bytes> optional_bytes(std::string_view key, bool allow_zero = true);
  std::optional<BytesPerSecond> optional_bandwidth(std::string_view key);
  std::optional<FlopsPerSecond> optional_flops_rate(std::string_view key);
  BytesPerSecond bandwidth(std::string_view key);
  Seconds seconds(std::string_view key, bool allow_zero = true);

  // Path of a child key, for nested readers and errors: "/cluster" + "workers".
  [[nodiscard]] std::string path_of(std::string_view key) const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& file() const { return file_; }
  [[noreturn]] void fail(std::string_view key, const std::string& problem) const;

  // Throws on the first key (in the object's order) that no accessor asked for.
  void finish() const;

 private:
  const Json& value_;
  std::string path_;
  std::string file_;
  std::set<std::string, std::less<>> known_;
};

// Joins a JSON pointer and a key or index, escaping '~' and '/' as RFC 6901 says.
std::string json_path(const std::string& parent, std::string_view key);
std::string json_path(const std::string& parent, size_t index);

}  // namespace ralp
