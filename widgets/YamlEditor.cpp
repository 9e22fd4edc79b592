#include "YamlEditor.h"

#include <QHelpEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTextBlock>
#include <QToolTip>

#include "YamlHighlighter.h"

namespace tb::ui {

// The gutter left of the text; it asks the editor to paint it.
class LineNumberArea : public QWidget {
 public:
  explicit LineNumberArea(YamlEditor* editor) : QWidget(editor), editor_(editor) { setMouseTracking(true); }
  QSize sizeHint() const override { return {editor_->lineNumberAreaWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { editor_->paintLineNumbers(event); }
  bool event(QEvent* event) override {
    if (event->type() == QEvent::ToolTip) {
      auto* help = static_cast<QHelpEvent*>(event);
      const QString message = editor_->messageAtLine(editor_->lineAt(QPoint(0, help->pos().y())));
      if (message.isEmpty())
        QToolTip::hideText();
      else
        QToolTip::showText(help->globalPos(), message, this);
      return true;
    }
    return QWidget::event(event);
  }

 private:
  YamlEditor* editor_;
};

YamlEditor::YamlEditor(QWidget* parent)
    : QPlainTextEdit(parent), lineNumbers_(new LineNumberArea(this)), highlighter_(new YamlHighlighter(document())) {
  QFont mono("monospace");
  mono.setStyleHint(QFont::TypeWriter);
  setFont(mono);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setTabStopDistance(fontMetrics().horizontalAdvance(' ') * 2);
  setMouseTracking(true);
  connect(this, &QPlainTextEdit::blockCountChanged, this, [this] { setViewportMargins(lineNumberAreaWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, &YamlEditor::updateLineNumberArea);
  connect(this, &QPlainTextEdit::cursorPositionChanged, this, &YamlEditor::updateSelections);
  setViewportMargins(lineNumberAreaWidth(), 0, 0, 0);
}

int YamlEditor::lineNumberAreaWidth() const {
  int digits = 1;
  for (int n = std::max(1, blockCount()); n >= 10; n /= 10) ++digits;
  return 10 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * std::max(3, digits);
}

void YamlEditor::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  const QRect cr = contentsRect();
  lineNumbers_->setGeometry(QRect(cr.left(), cr.top(), lineNumberAreaWidth(), cr.height()));
}

void YamlEditor::updateLineNumberArea(const QRect& rect, int dy) {
  if (dy)
    lineNumbers_->scroll(0, dy);
  else
    lineNumbers_->update(0, rect.y(), lineNumbers_->width(), rect.height());
}

void YamlEditor::paintLineNumbers(QPaintEvent* event) {
  QPainter painter(lineNumbers_);
  const QColor background = palette().color(QPalette::AlternateBase);
  painter.fillRect(event->rect(), background);
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  int bottom = top + qRound(blockBoundingRect(block).height());
  const int width = lineNumbers_->width() - 4;
  while (block.isValid() && top <= event->rect().bottom()) {
    if (block.isVisible() && bottom >= event->rect().top()) {
      const int line = block.blockNumber() + 1;
      const bool hasError = !messageAtLine(line).isEmpty();
      if (hasError) painter.fillRect(QRect(0, top, lineNumbers_->width(), bottom - top), QColor(255, 215, 215));
      painter.setPen(hasError ? QColor(180, 0, 0) : palette().color(QPalette::PlaceholderText));
      painter.drawText(0, top, width, fontMetrics().height(), Qt::AlignRight, QString::number(line));
    }
    block = block.next();
    top = bottom;
    bottom = top + qRound(blockBoundingRect(block).height());
  }
}

void YamlEditor::setMarks(const QList<EditorMark>& marks) {
  marks_ = marks;
  updateSelections();
  lineNumbers_->update();
}

QString YamlEditor::messageAtLine(int line) const {
  QStringList messages;
  for (const auto& m : marks_)
    if (m.line == line) messages << m.message;
  return messages.join('\n');
}

// Rebuilds the extra selections: the current line, then one wavy underline per mark that starts at
// the mark's column and covers the token there (at least one character, so it is visible).
void YamlEditor::updateSelections() {
  errorSelections_.clear();
  for (const auto& mark : marks_) {
    const QTextBlock block = document()->findBlockByNumber(mark.line - 1);
    if (!block.isValid()) continue;
    const QString text = block.text();
    const int col = std::clamp(mark.column - 1, 0, int(std::max<qsizetype>(0, text.size())));
    int end = col;
    while (end < text.size() && !text[end].isSpace() && text[end] != ':' && text[end] != ',') ++end;
    if (end == col) end = std::min<int>(int(text.size()), col + 1);
    QTextEdit::ExtraSelection sel;
    sel.cursor = QTextCursor(block);
    sel.cursor.setPosition(block.position() + col);
    sel.cursor.setPosition(block.position() + end, QTextCursor::KeepAnchor);
    sel.format.setUnderlineStyle(QTextCharFormat::WaveUnderline);
    sel.format.setUnderlineColor(QColor(220, 0, 0));
    sel.format.setToolTip(mark.message);
    if (end == col) sel.format.setBackground(QColor(255, 215, 215));  // empty line: shade it instead
    errorSelections_ << sel;
  }
  QList<QTextEdit::ExtraSelection> all;
  if (!isReadOnly()) {
    QTextEdit::ExtraSelection current;
    current.format.setBackground(palette().color(QPalette::AlternateBase));
    current.format.setProperty(QTextFormat::FullWidthSelection, true);
    current.cursor = textCursor();
    current.cursor.clearSelection();
    all << current;
  }
  all << errorSelections_;
  setExtraSelections(all);
}

int YamlEditor::lineAt(const QPoint& viewportPos) const {
  return cursorForPosition(QPoint(0, viewportPos.y())).blockNumber() + 1;
}

bool YamlEditor::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QPoint inViewport = viewport()->mapFrom(this, help->pos());
    const QString message = messageAtLine(lineAt(inViewport));
    if (message.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), message, this);
    return true;
  }
  return QPlainTextEdit::event(event);
}

void YamlEditor::goToLine(int line, int column) {
  const QTextBlock block = document()->findBlockByNumber(std::max(0, line - 1));
  if (!block.isValid()) return;
  QTextCursor c(block);
  c.setPosition(block.position() + std::clamp(column - 1, 0, int(block.text().size())));
  setTextCursor(c);
  centerCursor();
  setFocus();
}

void YamlEditor::replaceTextKeepingView(const QString& text) {
  if (text == toPlainText()) return;
  const int position = textCursor().position();
  const int scroll = verticalScrollBar()->value();
  // One undoable edit, so Ctrl+Z takes a form change back.
  QTextCursor all(document());
  all.beginEditBlock();
  all.select(QTextCursor::Document);
  all.insertText(text);
  all.endEditBlock();
  QTextCursor c(document());
  c.setPosition(std::min(position, int(text.size())));
  setTextCursor(c);
  verticalScrollBar()->setValue(scroll);
}

}  // namespace tb::ui
