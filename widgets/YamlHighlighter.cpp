#include "YamlHighlighter.h"

namespace tb::ui {

namespace {
QTextCharFormat makeFormat(const QColor& color, bool bold = false, bool italic = false) {
  QTextCharFormat f;
  f.setForeground(color);
  if (bold) f.setFontWeight(QFont::Bold);
  f.setFontItalic(italic);
  return f;
}
}  // namespace

YamlHighlighter::YamlHighlighter(QTextDocument* document)
    : QSyntaxHighlighter(document),
      // A key: optional indentation and list dash, then a plain or quoted name, then ':' and a blank.
      key_(R"(^(\s*(?:-\s+)?)((?:"[^"]*"|'[^']*'|[^\s#'"{}\[\],][^#:]*?))\s*:(?=\s|$))"),
      number_(R"(^[-+]?(?:\d[\d_]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|0x[0-9a-fA-F]+|\.inf|\.nan)$)"),
      keyword_(R"(^(?:true|false|True|False|TRUE|FALSE|yes|no|on|off|null|Null|NULL|~)$)"),
      interpolation_(R"(\$\{[^}]*\})") {
  formats_[int(Role::Key)] = makeFormat(QColor(0x1f, 0x4e, 0x9e), true);
  formats_[int(Role::ComponentKey)] = makeFormat(QColor(0x8a, 0x2b, 0xb0), true);
  formats_[int(Role::ComponentValue)] = makeFormat(QColor(0x00, 0x7a, 0x7a), true);
  formats_[int(Role::Comment)] = makeFormat(QColor(0x80, 0x80, 0x80), false, true);
  formats_[int(Role::String)] = makeFormat(QColor(0x2e, 0x7d, 0x32));
  formats_[int(Role::Number)] = makeFormat(QColor(0xc0, 0x56, 0x00));
  formats_[int(Role::Keyword)] = makeFormat(QColor(0xad, 0x14, 0x57), true);
  formats_[int(Role::Interpolation)] = makeFormat(QColor(0x6a, 0x1b, 0x9a), false, true);
  formats_[int(Role::Marker)] = makeFormat(QColor(0x80, 0x80, 0x80), true);
}

QTextCharFormat YamlHighlighter::format(Role role) const { return formats_[int(role)]; }

// Index of a `#` that starts a comment (at line start or after a blank, outside quotes), or -1.
int YamlHighlighter::commentStart(const QString& text) {
  QChar quote;
  for (int i = 0; i < text.size(); ++i) {
    const QChar c = text[i];
    if (!quote.isNull()) {
      if (c == quote) quote = QChar();
      continue;
    }
    if (c == '"' || c == '\'') {
      // Quotes only open a string at the start of a scalar, not inside a word like don't.
      if (i == 0 || text[i - 1].isSpace() || text[i - 1] == ':' || text[i - 1] == '[' || text[i - 1] == ',' ||
          text[i - 1] == '{')
        quote = c;
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1].isSpace())) return i;
  }
  return -1;
}

void YamlHighlighter::highlightBlock(const QString& text) {
  const int comment = commentStart(text);
  const int end = comment < 0 ? int(text.size()) : comment;
  if (comment >= 0) setFormat(comment, int(text.size()) - comment, formats_[int(Role::Comment)]);

  const QString code = text.left(end);
  if (code.trimmed() == "---" || code.trimmed() == "...") {
    setFormat(0, end, formats_[int(Role::Marker)]);
    return;
  }

  int valueStart = 0;
  bool componentValue = false;
  const auto m = key_.match(code);
  if (m.hasMatch()) {
    const bool component = m.captured(2) == "_component_";
    setFormat(m.capturedStart(2), m.capturedLength(2), formats_[int(component ? Role::ComponentKey : Role::Key)]);
    valueStart = int(m.capturedEnd(0));
    componentValue = component;
  } else {
    // A list item without a key: `- value`.
    int i = 0;
    while (i < code.size() && code[i].isSpace()) ++i;
    if (i < code.size() && code[i] == '-' && (i + 1 == code.size() || code[i + 1].isSpace())) valueStart = i + 1;
  }
  colorValue(code, valueStart, end, componentValue);
}

// Colours the scalar(s) between start and end; flow lists `[a, 1, "b"]` are split on commas.
void YamlHighlighter::colorValue(const QString& text, int start, int end, bool componentValue) {
  int i = start;
  while (i < end) {
    while (i < end && (text[i].isSpace() || text[i] == '[' || text[i] == ']' || text[i] == ',' ||
                       text[i] == '{' || text[i] == '}'))
      ++i;
    if (i >= end) break;
    int j = i;
    if (text[i] == '"' || text[i] == '\'') {
      const QChar q = text[i];
      j = i + 1;
      while (j < end && text[j] != q) ++j;
      j = std::min(end, j + 1);
      setFormat(i, j - i, formats_[int(Role::String)]);
    } else {
      const bool inFlow = text.lastIndexOf('[', i) > text.lastIndexOf(']', i) ||
                          text.lastIndexOf('{', i) > text.lastIndexOf('}', i);
      while (j < end && !(inFlow && (text[j] == ',' || text[j] == ']' || text[j] == '}'))) ++j;
      int k = j;
      while (k > i && text[k - 1].isSpace()) --k;
      const QString word = text.mid(i, k - i);
      if (componentValue)
        setFormat(i, k - i, formats_[int(Role::ComponentValue)]);
      else if (number_.match(word).hasMatch())
        setFormat(i, k - i, formats_[int(Role::Number)]);
      else if (keyword_.match(word).hasMatch())
        setFormat(i, k - i, formats_[int(Role::Keyword)]);
    }
    // Interpolations stand out inside strings and plain scalars alike.
    auto it = interpolation_.globalMatch(text.mid(i, j - i));
    while (it.hasNext()) {
      const auto im = it.next();
      setFormat(i + int(im.capturedStart()), int(im.capturedLength()), formats_[int(Role::Interpolation)]);
    }
    i = j;
  }
}

}  // namespace tb::ui
