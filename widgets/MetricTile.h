// A big number with a caption under it: loss, tokens/s, step, ETA.
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
  // Shown under the caption in a smaller font, e.g. "steady steps only".
  void setDetail(const QString& detail);

 private:
  QLabel* value_;
  QLabel* caption_;
  QLabel* detail_;
};

}  // namespace tb::ui
