#include "MetricTile.h"

#include <QFontMetrics>
#include <QLabel>
#include <QVBoxLayout>

namespace tb::ui {

MetricTile::MetricTile(const QString& caption, QWidget* parent)
    : QFrame(parent), value_(new QLabel("–", this)), caption_(new QLabel(caption, this)),
      detail_(new QLabel(this)) {
  setFrameShape(QFrame::StyledPanel);
  setObjectName("MetricTile");
  QFont big = value_->font();
  bigPointSize_ = big.pointSizeF() * 1.9;
  big.setPointSizeF(bigPointSize_);
  big.setBold(true);
  value_->setFont(big);
  value_->setAlignment(Qt::AlignCenter);
  value_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  value_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // the font fits the width, not the reverse
  caption_->setAlignment(Qt::AlignCenter);
  caption_->setWordWrap(true);
  QFont small = caption_->font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  detail_->setFont(small);
  detail_->setAlignment(Qt::AlignCenter);
  detail_->setWordWrap(true);
  detail_->setVisible(false);
  QPalette muted = caption_->palette();
  muted.setColor(QPalette::WindowText, muted.color(QPalette::PlaceholderText));
  detail_->setPalette(muted);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(10, 6, 10, 6);
  layout->setSpacing(0);
  layout->addWidget(value_);
  layout->addWidget(caption_);
  layout->addWidget(detail_);
  setMinimumWidth(90);
}

void MetricTile::setValue(const QString& value) {
  value_->setText(value);
  fitValue();
}

void MetricTile::resizeEvent(QResizeEvent* event) {
  QFrame::resizeEvent(event);
  fitValue();
}

void MetricTile::fitValue() {
  QFont f = value_->font();
  const int room = std::max(1, contentsRect().width() - 20);
  double size = bigPointSize_;
  for (f.setPointSizeF(size); size > 6 && QFontMetrics(f).horizontalAdvance(value_->text()) > room; f.setPointSizeF(size))
    size -= 0.5;
  value_->setFont(f);
}

bool MetricTile::valueFits() const {
  return QFontMetrics(value_->font()).horizontalAdvance(value_->text()) <= value_->contentsRect().width();
}
QString MetricTile::value() const { return value_->text(); }
void MetricTile::setCaption(const QString& caption) { caption_->setText(caption); }
QString MetricTile::caption() const { return caption_->text(); }
QString MetricTile::detail() const { return detail_->text(); }

void MetricTile::setDetail(const QString& detail) {
  detail_->setText(detail);
  detail_->setVisible(!detail.isEmpty());
}

}  // namespace tb::ui
