// Syntax colours for YAML configs: keys, `_component_` and its value, comments, strings, numbers,
// booleans/null, `${...}` interpolations and document markers. Line based: configs are small and a
// line-at-a-time pass keeps typing responsive.
#pragma once

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace tb::ui {

class YamlHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  enum class Role { Key, ComponentKey, ComponentValue, Comment, String, Number, Keyword, Interpolation, Marker };
  explicit YamlHighlighter(QTextDocument* document);

  // The format used for a role (tests and the legend use it).
  QTextCharFormat format(Role role) const;

 protected:
  void highlightBlock(const QString& text) override;

 private:
  void colorValue(const QString& text, int start, int end, bool componentValue);
  static int commentStart(const QString& text);

  QTextCharFormat formats_[9];
  QRegularExpression key_;
  QRegularExpression number_;
  QRegularExpression keyword_;
  QRegularExpression interpolation_;
};

}  // namespace tb::ui
