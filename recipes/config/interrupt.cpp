#include "config/interrupt.h"

namespace tb::config {

namespace {
thread_local const std::atomic<bool>* t_flag = nullptr;
}

InterruptScope::InterruptScope(const std::atomic<bool>* flag) : previous_(t_flag) { t_flag = flag; }

InterruptScope::~InterruptScope() { t_flag = previous_; }

void check_interrupt() {
  if (t_flag && t_flag->load(std::memory_order_relaxed)) throw Interrupted();
}

}  // namespace tb::config
