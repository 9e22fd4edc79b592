// Memory statistics for `log_peak_memory_stats`: live and peak bytes of CPU tensor storage (an
// allocator that counts, installed once), and the process's resident peak for context.
#pragma once

#include <cstdint>

namespace tb::training {

// Installs the counting CPU allocator (idempotent, thread-safe). Tensors allocated before this are
// not counted while alive, which is harmless: the recipes install it before building the model.
void install_memory_tracking();

struct MemoryStats {
  int64_t live_bytes = 0;  // tensor storage alive now
  int64_t peak_bytes = 0;  // highest live_bytes since the last reset
};
MemoryStats memory_stats();
// Starts a new peak window at the current live bytes.
void reset_peak_memory();

// The process's peak resident set (VmHWM) in bytes; 0 where /proc is unavailable.
int64_t process_peak_rss_bytes();

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace tb::training
