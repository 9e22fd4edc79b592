#include "MetricTile.h"

#include <QLabel>
#include <QVBoxLayout>

namespace tb::ui {

MetricTile::MetricTile(const QString& caption, QWidget* parent)
    : QFrame(parent), value_(new QLabel("–", this)), caption_(new QLabel(caption, this)),
      detail_(new QLabel(this)) {
  setFrameShape(QFrame::StyledPanel);
  setObjectName("MetricTile");
  QFont big = value_->font();
  big.setPointSizeF(big.pointSizeF() * 1.9);
  big.setBold(true);
  value_->setFont(big);
  value_->setAlignment(Qt::AlignCenter);
  value_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  caption_->setAlignment(Qt::AlignCenter);
  QFont small = caption_->font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  detail_->setFont(small);
  detail_->setAlignment(Qt::AlignCenter);
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
  setMinimumWidth(120);
}

void MetricTile::setValue(const QString& value) { value_->setText(value); }
QString MetricTile::value() const { return value_->text(); }
void MetricTile::setCaption(const QString& caption) { caption_->setText(caption); }
QString MetricTile::caption() const { return caption_->text(); }

void MetricTile::setDetail(const QString& detail) {
  detail_->setText(detail);
  detail_->setVisible(!detail.isEmpty());
}

}  // namespace tb::ui
