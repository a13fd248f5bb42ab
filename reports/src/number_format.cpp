// Number formats: the spec parsed once, each number printed with snprintf from a printf format
// built here (never from the user's text), so that a bad spec is an error and not a crash.
#include "ralp/reports/number_format.hpp"

#include <charconv>
#include <cstdio>

#include "ralp/core/json_input.hpp"

namespace ralp::reports {
namespace {

constexpr int kMaxPrecision = 30;
constexpr const char* kExpected =
    "expected TEXT{SPEC}TEXT with SPEC empty or :[+][.N]T, T one of f, e, g, % (such as "
    "\"{:.2f}x\" or \"{:+.1%}\")";

// Undoes "{{" and "}}" in the text around the replacement field; a lone brace is an error.
bool unescape(const std::string& text, std::string& out) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '}') {
      if (i + 1 >= text.size() || text[i + 1] != c) return false;
      ++i;
    }
    out += c;
  }
  return true;
}

// The position of the replacement field's "{", skipping "{{" pairs; npos when there is none.
size_t field_start(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') continue;
    if (i + 1 < text.size() && text[i + 1] == '{') {
      ++i;
      continue;
    }
    return i;
  }
  return std::string::npos;
}

}  // namespace

std::string shortest_text(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

NumberFormat NumberFormat::parse(const std::string& text, const std::string& option) {
  const auto fail = [&] { return InputError("", option, "is \"" + text + "\", " + kExpected); };
  NumberFormat f;
  f.text_ = text;
  const size_t open = field_start(text);
  if (open == std::string::npos) throw fail();
  const size_t close = text.find('}', open);
  if (close == std::string::npos) throw fail();
  if (!unescape(text.substr(0, open), f.prefix_) || !unescape(text.substr(close + 1), f.suffix_)) {
    throw fail();
  }
  std::string spec = text.substr(open + 1, close - open - 1);
  if (spec.empty()) return f;
  if (spec.front() != ':' || spec.size() < 2) throw fail();
  size_t i = 1;
  if (spec[i] == '+') {
    f.plus_ = true;
    ++i;
  }
  if (i < spec.size() && spec[i] == '.') {
    if (spec.size() < i + 3) throw fail();  // a digit and the type must follow
    const char* first = spec.data() + i + 1;
    const char* last = spec.data() + spec.size() - 1;
    const auto [ptr, ec] = std::from_chars(first, last, f.precision_);
    if (ec != std::errc() || ptr != last || f.precision_ > kMaxPrecision) throw fail();
    i = spec.size() - 1;
  }
  if (i != spec.size() - 1) throw fail();
  f.type_ = spec.back();
  if (f.type_ != 'f' && f.type_ != 'e' && f.type_ != 'g' && f.type_ != '%') throw fail();
  return f;
}

std::string NumberFormat::operator()(double value) const {
  if (type_ == 0) return prefix_ + shortest_text(value) + suffix_;
  std::string spec = "%";
  if (plus_) spec += '+';
  spec += '.';
  spec += std::to_string(precision_);
  spec += type_ == '%' ? 'f' : type_;
  const double shown = type_ == '%' ? 100.0 * value : value;
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, spec.c_str(), shown);
  return prefix_ + buffer + (type_ == '%' ? "%" : "") + suffix_;
}

std::string NumberFormat::around(const std::string& number) const {
  return prefix_ + number + (type_ == '%' ? "%" : "") + suffix_;
}

}  // namespace ralp::reports
