// Strict JSON parsing and the ObjectReader that validates scenario, model and profile files.
#include "ralp/core/json_input.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace ralp {
namespace {

constexpr size_t kMaxDescribedLength = 40;
// nlohmann's exception id for a number that overflows a double.
constexpr int kNumberOverflowId = 406;

// Tracks the JSON pointer of the value being parsed so that a duplicate key can be named.
class DuplicateKeyFinder {
 public:
  bool on_event(Json::parse_event_t event, const Json& parsed) {
    using Event = Json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        begin_value();
        frames_.push_back({.is_object = event == Event::object_start});
        break;
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        break;
      case Event::key: {
        Frame& frame = frames_.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second && !duplicate_) {
          duplicate_ = current_path();
        }
        break;
      }
      case Event::value:
        begin_value();
        break;
    }
    return true;
  }

  [[nodiscard]] const std::optional<std::string>& duplicate() const { return duplicate_; }

  // The path of the value being read: in an array, the element after those already started.
  [[nodiscard]] std::string reading_path() const {
    std::string path;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& frame = frames_[i];
      const bool innermost = i + 1 == frames_.size();
      path = frame.is_object ? json_path(path, frame.key)
                             : json_path(path, innermost ? frame.count : frame.index);
    }
    return path;
  }

 private:
  struct Frame {
    bool is_object = false;
    std::string key;             // objects: the key being read
    std::set<std::string> keys;  // objects: keys seen so far
    size_t index = 0;            // arrays: the element being read
    size_t count = 0;            // arrays: elements started so far
  };

  // A value starting inside an array is that array's next element.
  void begin_value() {
    if (!frames_.empty() && !frames_.back().is_object) {
      frames_.back().index = frames_.back().count++;
    }
  }

  [[nodiscard]] std::string current_path() const {
    std::string path;
    for (const auto& frame : frames_) {
      path = frame.is_object ? json_path(path, frame.key) : json_path(path, frame.index);
    }
    return path;
  }

  std::vector<Frame> frames_;
  std::optional<std::string> duplicate_;
};

bool is_integer(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15;
}

std::string range_text(int64_t min, int64_t max) {
  if (max == std::numeric_limits<int64_t>::max()) return "an integer >= " + std::to_string(min);
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string number_range_text(double min, double max) {
  if (max == std::numeric_limits<double>::max()) return "a number >= " + number_text(min);
  return "a number in [" + number_text(min) + ", " + number_text(max) + "]";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  return out;
}

// Control characters (a key may hold a newline) as escapes, so that a message is one line.
std::string one_line(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string message_of(const std::string& file, const std::string& path,
                       const std::string& problem) {
  const std::string where = path.empty() ? problem : path + " " + problem;
  return one_line(file.empty() ? where : file + ": " + where);
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

InputError::InputError(std::string file, std::string path, std::string problem)
    : std::runtime_error(message_of(file, path, problem)),
      file_(std::move(file)),
      path_(std::move(path)),
      problem_(std::move(problem)) {}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment over three rows of the dynamic-programming table.
  std::vector<size_t> before(b.size() + 1);
  std::vector<size_t> previous(b.size() + 1);
  std::vector<size_t> current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = lower(a[i - 1]) == lower(b[j - 1]);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  const size_t allowed = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  bool tied = false;
  for (const auto& candidate : candidates) {
    if (candidate == word) continue;
    // Words far apart in length cannot be close; skipping them bounds the work on long input.
    const size_t longer = std::max(candidate.size(), word.size());
    const size_t shorter = std::min(candidate.size(), word.size());
    if (longer - shorter > allowed) continue;
    const size_t distance = edit_distance(word, candidate);
    // A word of n characters within n edits of a candidate shares nothing with it ("z", "b").
    if (distance >= shorter) continue;
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
      tied = false;
    } else if (best && distance == best_distance && *best != candidate) {
      tied = true;
    }
  }
  // Two equally close candidates ("vgg17": vgg11, vgg16, vgg19) are a guess, not a hint.
  return tied ? std::nullopt : best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto match = closest_match(word, candidates);
  return match ? " (did you mean \"" + *match + "\"?)" : "";
}

std::string json_path(const std::string& parent, std::string_view key) {
  std::string escaped;
  for (const char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return parent + "/" + escaped;
}

std::string json_path(const std::string& parent, size_t index) {
  return parent + "/" + std::to_string(index);
}

Json parse_json_text(std::string_view text, const std::string& label) {
  DuplicateKeyFinder finder;
  Json value;
  try {
    value = Json::parse(
        text.begin(), text.end(),
        [&finder](int /*depth*/, Json::parse_event_t event, Json& parsed) {
          return finder.on_event(event, parsed);
        },
        /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3, column
    // 5: syntax error ..."; keep the part after the bracketed id.
    std::string message = e.what();
    if (const auto end = message.find("] "); end != std::string::npos) {
      message = message.substr(end + 2);
    }
    // A number beyond a double's range (1e400) is valid JSON that nlohmann refuses with
    // "number overflow parsing '1e400'" and no position; the callback knows where it was.
    static constexpr std::string_view kOverflow = "number overflow parsing '";
    if (e.id == kNumberOverflowId && message.starts_with(kOverflow) && message.ends_with('\'')) {
      const std::string number =
          message.substr(kOverflow.size(), message.size() - kOverflow.size() - 1);
      const std::string path = finder.reading_path();
      const std::string problem =
          "is " + number + ", expected a number within a double's range (about +-1.8e308)";
      throw InputError(label, path, path.empty() ? "the document " + problem : problem);
    }
    throw InputError(label, "", "not valid JSON: " + message);
  }
  if (finder.duplicate()) {
    throw InputError(label, *finder.duplicate(), "appears twice, expected each key once");
  }
  return value;
}

std::vector<std::filesystem::path> search_path(const char* variable,
                                               const std::filesystem::path& fallback) {
  std::vector<std::filesystem::path> out;
  if (const char* env = std::getenv(variable); env != nullptr && *env != '\0') {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const auto part = rest.substr(0, colon);
      if (!part.empty()) out.emplace_back(std::string(part));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  out.push_back(fallback);
  return out;
}

Json read_json_file(const std::filesystem::path& file) {
  std::error_code ec;
  std::ifstream in(file, std::ios::binary);
  // A folder opens like a file on Linux and then reads as nothing.
  if (!in || !std::filesystem::is_regular_file(file, ec)) {
    throw InputError(file.string(), "", "cannot be read (missing or not a file)");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(file.string(), "", "cannot be read");
  return parse_json_text(buffer.str(), file.string());
}

std::string describe_json(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    default:
      break;
  }
  std::string text = value.dump();
  if (text.size() > kMaxDescribedLength) {
    // Cut before a character, not inside one: UTF-8 continuation bytes are 10xxxxxx.
    size_t end = kMaxDescribedLength;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
    text = text.substr(0, end) + "...";
  }
  return text;
}

ObjectReader::ObjectReader(const Json& value, std::string path, std::string file)
    : value_(value), path_(std::move(path)), file_(std::move(file)) {
  if (!value_.is_object()) {
    const std::string problem = "is " + describe_json(value_) + ", expected an object";
    throw InputError(file_, path_, path_.empty() ? "the document " + problem : problem);
  }
}

bool ObjectReader::has(std::string_view key) {
  known_.emplace(key);
  return value_.contains(key);
}

const Json* ObjectReader::get(std::string_view key) {
  known_.emplace(key);
  const auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

const Json& ObjectReader::require(std::string_view key, std::string_view expectation) {
  const Json* value = get(key);
  if (value == nullptr) {
    // A present key that no accessor asked for yet and that is close to this one is likely it,
    // misspelt.
    std::vector<std::string> unknown;
    for (const auto& [present, item] : value_.items()) {
      if (!known_.contains(present)) unknown.push_back(present);
    }
    std::string hint;
    for (const auto& present : unknown) {
      if (closest_match(present, {std::string(key)})) {
        hint = " (found \"" + present + "\": did you mean \"" + std::string(key) + "\"?)";
        break;
      }
    }
    throw InputError(file_, path_of(key),
                     "is missing, expected " + std::string(expectation) + hint);
  }
  return *value;
}

std::string ObjectReader::path_of(std::string_view key) const { return json_path(path_, key); }

void ObjectReader::fail(std::string_view key, const std::string& problem) const {
  throw InputError(file_, path_of(key), problem);
}

std::optional<int64_t> ObjectReader::optional_integer(std::string_view key, int64_t min,
                                                      int64_t max) {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!is_integer(*v)) fail(key, "is " + describe_json(*v) + ", expected " + range_text(min, max));
  const int64_t n = v->is_number_float() ? static_cast<int64_t>(v->get<double>())
                    : v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
                        ? std::numeric_limits<int64_t>::max()
                        : v->get<int64_t>();
  if (n < min || n > max) fail(key, "is " + describe_json(*v) + ", expected " + range_text(min, max));
  return n;
}

int64_t ObjectReader::integer(std::string_view key, int64_t min, int64_t max) {
  require(key, range_text(min, max));
  return *optional_integer(key, min, max);
}

std::optional<double> ObjectReader::optional_number(std::string_view key, double min, double max) {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    fail(key, "is " + describe_json(*v) + ", expected " + number_range_text(min, max));
  }
  const double d = v->get<double>();
  if (!(d >= min && d <= max)) {
    fail(key, "is " + describe_json(*v) + ", expected " + number_range_text(min, max));
  }
  return d;
}

double ObjectReader::number(std::string_view key, double min, double max) {
  require(key, number_range_text(min, max));
  return *optional_number(key, min, max);
}

std::optional<std::string> ObjectReader::optional_string(std::string_view key) {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string() || v->get<std::string>().empty()) {
    fail(key, "is " + describe_json(*v) + ", expected a non-empty string");
  }
  return v->get<std::string>();
}

std::string ObjectReader::string(std::string_view key) {
  require(key, "a non-empty string");
  return *optional_string(key);
}

std::optional<bool> ObjectReader::optional_boolean(std::string_view key) {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) fail(key, "is " + describe_json(*v) + ", expected true or false");
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::optional_choice(std::string_view key,
                                                         const std::vector<std::string>& choices) {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) {
    for (const auto& choice : choices) {
      if (v->get<std::string>() == choice) return choice;
    }
  }
  fail(key, "is " + describe_json(*v) + ", expected one of: " + join(choices) +
                (v->is_string() ? did_you_mean(v->get<std::string>(), choices) : ""));
}

std::string ObjectReader::choice(std::string_view key, const std::vector<std::string>& choices) {
  require(key, "one of: " + join(choices));
  return *optional_choice(key, choices);
}

namespace {

// The accepted forms as units.hpp reads them: a lower-case b is bits, an upper-case B bytes.
constexpr const char* kBandwidthExpectation =
    "a bandwidth such as \"10Gbps\", \"10Gb/s\", \"10Gbit/s\" (bits) or \"1.25GB/s\", "
    "\"1GiB/s\" (bytes), or a number of bytes per second";
constexpr const char* kSizeExpectation =
    "a size such as \"64MiB\", \"1GiB\", \"3.2MB\", \"4kB\" (bytes, with an upper-case B), or a "
    "number of bytes";

template <class Parse>
auto read_quantity(ObjectReader& reader, const Json* v, std::string_view key, Parse parse,
                   const char* expectation, bool allow_zero) -> decltype(parse("")) {
  if (v == nullptr) return std::nullopt;
  decltype(parse("")) parsed;
  if (v->is_string()) {
    parsed = parse(v->get<std::string>());
  } else if (v->is_number() && v->get<double>() >= 0.0 && std::isfinite(v->get<double>())) {
    parsed = typename decltype(parsed)::value_type(v->get<double>());
  }
  if (!parsed || (!allow_zero && parsed->value() <= 0.0)) {
    reader.fail(key, "is " + describe_json(*v) + ", expected " + expectation +
                         (allow_zero ? "" : " greater than 0"));
  }
  return parsed;
}

}  // namespace

std::optional<Seconds> ObjectReader::optional_seconds(std::string_view key, bool allow_zero) {
  return read_quantity(*this, get(key), key, parse_seconds,
                       "a duration such as \"50us\" or a number of seconds", allow_zero);
}

std::optional<Bytes> ObjectReader::optional_bytes(std::string_view key, bool allow_zero) {
  return read_quantity(*this, get(key), key, parse_bytes, kSizeExpectation, allow_zero);
}

std::optional<BytesPerSecond> ObjectReader::optional_bandwidth(std::string_view key) {
  return read_quantity(*this, get(key), key, parse_bandwidth, kBandwidthExpectation, false);
}

std::optional<FlopsPerSecond> ObjectReader::optional_flops_rate(std::string_view key) {
  return read_quantity(*this, get(key), key, parse_flops_rate,
                       "a rate such as \"11.3TFLOPS\" or a number of FLOP/s", false);
}

BytesPerSecond ObjectReader::bandwidth(std::string_view key) {
  require(key, kBandwidthExpectation);
  return *optional_bandwidth(key);
}

Seconds ObjectReader::seconds(std::string_view key, bool allow_zero) {
  require(key, "a duration such as \"50us\"");
  return *optional_seconds(key, allow_zero);
}

void ObjectReader::finish() const {
  for (const auto& [key, value] : value_.items()) {
    if (!known_.contains(key)) {
      std::vector<std::string> accepted(known_.begin(), known_.end());
      throw InputError(file_, json_path(path_, key),
                       accepted.empty() ? "is not a known key, expected no keys here"
                                        : "is not a known key, expected one of: " +
                                              join(accepted) + did_you_mean(key, accepted));
    }
  }
}

}  // namespace ralp
