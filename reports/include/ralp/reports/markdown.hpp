// A Markdown document built in order: headings, paragraphs, tables, images and code blocks.
#pragma once

#include <string>
#include <vector>

namespace ralp::reports {

class MarkdownDocument {
 public:
  enum class Align { left, right };

  void heading(int level, const std::string& text);  // level 1..6
  void paragraph(const std::string& text);
  void bullets(const std::vector<std::string>& items);
  void code_block(const std::string& text, const std::string& language = "");
  void image(const std::string& alt, const std::string& path);
  // A table; `align` has one entry per column (missing entries: right). Cells containing '|' are
  // escaped. Rows shorter than the header are padded with empty cells.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
             const std::vector<Align>& align = {});

  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  void separate();
  std::string text_;
};

// "|" -> "\|", newlines -> spaces.
std::string escape_cell(const std::string& cell);

}  // namespace ralp::reports
