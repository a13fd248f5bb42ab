// Number formats for the tables of `ralp report pivot` and `ralp report summary`: a subset of the
// format strings of Python and C++20 ("{:.2f}x", "{:+.1%}", "{:.6g}", "{}"), printed with the C
// library, so that a cell shows the digits printf would.
#pragma once

#include <string>

namespace ralp::reports {

// The shortest text that reads back as the same double: "8", "0.5", "1e+22", "inf".
std::string shortest_text(double value);

class NumberFormat {
 public:
  // "{}": the shortest text (shortest_text).
  NumberFormat() = default;

  // TEXT{SPEC}TEXT, with "{{" and "}}" for braces in the text, and SPEC empty (shortest text) or
  // ":[+][.N]T": T is f (fixed), e (exponent), g (general) or % (times 100, fixed, then "%"); a
  // "+" signs positive numbers; N digits (default 6, at most 30). Throws InputError naming
  // `option` for anything else, and for a text with no {} or two of them.
  static NumberFormat parse(const std::string& text, const std::string& option);

  [[nodiscard]] std::string operator()(double value) const;
  // The format's text around `number` as written: "{:.2f}x" gives "2.3x" for "2.3".
  [[nodiscard]] std::string around(const std::string& number) const;
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::string text_ = "{}";
  std::string prefix_;
  std::string suffix_;
  char type_ = 0;  // 0 (shortest), 'f', 'e', 'g' or '%'
  int precision_ = 6;
  bool plus_ = false;
};

}  // namespace ralp::reports
