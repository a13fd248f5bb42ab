// Plain-text tables for the terminal: left-aligned text columns, right-aligned numbers.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ralp::reports {

class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::right;
  };

  explicit TextTable(std::vector<Column> columns);
  void add_row(std::vector<std::string> cells);  // one cell per column
  void add_separator();
  void print(std::ostream& out) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a separator
};

// Number formatting shared by the commands: "138,357,544", "30.97 G", "1.234".
std::string with_commas(long long value);
std::string fixed(double value, int decimals);
std::string si(double value, const char* unit);  // "30.9 GFLOP"

}  // namespace ralp::reports
