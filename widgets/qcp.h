// QCustomPlot, included under QT_NO_KEYWORDS: its header still spells `signals:` and `foreach`,
// which that define removes, so they are mapped to the Q_ macros for the length of the include.
#pragma once

#ifndef signals
#define signals Q_SIGNALS
#define TB_QCP_UNDEF_SIGNALS
#endif
#ifndef foreach
#define foreach Q_FOREACH
#define TB_QCP_UNDEF_FOREACH
#endif

#include <qcustomplot.h>

#ifdef TB_QCP_UNDEF_SIGNALS
#undef signals
#undef TB_QCP_UNDEF_SIGNALS
#endif
#ifdef TB_QCP_UNDEF_FOREACH
#undef foreach
#undef TB_QCP_UNDEF_FOREACH
#endif
