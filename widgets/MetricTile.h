// A big number with a caption under it: loss, tokens/s, step, ETA. The number's font shrinks to fit a
// narrow tile (a 1024-pixel-wide window) rather than cutting the text.
#pragma once

#include <QFrame>

class QLabel;

namespace tb::ui {

class MetricTile : public QFrame {
  Q_OBJECT
 public:
  explicit MetricTile(const QString& caption, QWidget* parent = nullptr);

  void setValue(const QString& value);
  QString value() const;
  void setCaption(const QString& caption);
  QString caption() const;
  QString detail() const;
  // Shown under the caption in a smaller font, e.g. "steady steps only".
  void setDetail(const QString& detail);
  // Whether the whole value is visible at the tile's current width.
  bool valueFits() const;
  QLabel* valueLabel() const { return value_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void fitValue();
  double bigPointSize_ = 0;
  QLabel* value_;
  QLabel* caption_;
  QLabel* detail_;
};

}  // namespace tb::ui
