// The config editor: a QPlainTextEdit with YAML colours, line numbers, and error marks — a wavy
// underline at line:col (extra selections) with the message as tooltip, and a red line number.
#pragma once

#include <QList>
#include <QPlainTextEdit>
#include <QString>

namespace tb::ui {

class YamlHighlighter;

// One problem to show in the text. line and column are 1-based, as in `file:line:col: message`.
struct EditorMark {
  int line = 0;
  int column = 0;
  QString message;
};

class YamlEditor : public QPlainTextEdit {
  Q_OBJECT
 public:
  explicit YamlEditor(QWidget* parent = nullptr);

  void setMarks(const QList<EditorMark>& marks);
  const QList<EditorMark>& marks() const { return marks_; }
  // The wavy-underline selections that show the marks (one per mark, in order).
  QList<QTextEdit::ExtraSelection> errorSelections() const { return errorSelections_; }
  // The message of the mark on this 1-based line, empty when there is none.
  QString messageAtLine(int line) const;

  void goToLine(int line, int column = 1);
  // Replaces the whole text without scrolling away from the current position (form edits).
  void replaceTextKeepingView(const QString& text);
  YamlHighlighter* highlighter() const { return highlighter_; }

  int lineNumberAreaWidth() const;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;

 private:
  friend class LineNumberArea;
  void paintLineNumbers(QPaintEvent* event);
  void updateLineNumberArea(const QRect& rect, int dy);
  void updateSelections();
  int lineAt(const QPoint& viewportPos) const;

  QWidget* lineNumbers_;
  YamlHighlighter* highlighter_;
  QList<EditorMark> marks_;
  QList<QTextEdit::ExtraSelection> errorSelections_;
};

}  // namespace tb::ui
