#include "AppIcon.h"

#include <QPainter>
#include <QPainterPath>
#include <QPixmap>

namespace tb::ui {

namespace {
QPixmap paintIcon(int size) {
  QPixmap pixmap(size, size);
  pixmap.fill(Qt::transparent);
  QPainter p(&pixmap);
  p.setRenderHint(QPainter::Antialiasing);
  p.scale(size / 64.0, size / 64.0);  // drawn on the SVG's 64x64 grid
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(0x1e, 0x2a, 0x44));
  p.drawRoundedRect(QRectF(2, 2, 60, 60), 12, 12);
  p.setPen(QPen(QColor(255, 255, 255, 40), 1));
  for (int y : {18, 30, 42}) p.drawLine(QPointF(12, y), QPointF(54, y));
  // A falling loss curve, and the steady part drawn bolder: the product in one line.
  QPainterPath curve;
  curve.moveTo(12, 14);
  curve.cubicTo(20, 40, 30, 44, 54, 47);
  p.setPen(QPen(QColor(0xff, 0x9f, 0x1c), 4, Qt::SolidLine, Qt::RoundCap));
  p.setBrush(Qt::NoBrush);
  p.drawPath(curve);
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(0x5c, 0xc8, 0xff));
  p.drawEllipse(QPointF(54, 47), 4.5, 4.5);
  p.setPen(QPen(QColor(255, 255, 255, 200), 2.5, Qt::SolidLine, Qt::RoundCap));
  p.drawLine(QPointF(12, 54), QPointF(54, 54));
  return pixmap;
}
}  // namespace

QIcon appIcon() {
  QIcon icon;
  for (int size : {16, 32, 48, 64, 128, 256}) icon.addPixmap(paintIcon(size));
  return icon;
}

}  // namespace tb::ui
