// The application icon, painted in code (the same design as packaging/tunebench.svg) so the window
// needs no image plugin.
#pragma once

#include <QIcon>

namespace tb::ui {
QIcon appIcon();
}
