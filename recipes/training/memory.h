// Memory statistics for `log_peak_memory_stats`: live and peak bytes of CPU tensor storage (an
// allocator that counts, installed once), and the process's resident peak for context.
#pragma once

#include <cstdint>

namespace tb::training {

// Installs the counting CPU allocator (idempotent, thread-safe). Tensors allocated before this are
// not counted while alive, which is harmless: the recipes install it before building the model.
void install_memory_tracking();

// A training step frees and reallocates the same large activation blocks every step. glibc's defaults
// hand blocks over 128 KiB (the threshold grows only to 32 MiB) straight back to the kernel, so each
// step page-faults its activations in again: on stories15M LoRA that was over half the step (sys time).
// This keeps freed blocks in the heap (no mmap per block, no trimming), as PyTorch's caching allocators
// do on GPUs. Costs some resident memory (peak RSS +38% on that bench). TUNEBENCH_MALLOC=system keeps
// glibc's defaults. Returns whether it changed anything.
bool keep_freed_memory_in_process();
// The opposite, for building and loading a model: every block over 128 KiB its own mmap, given back when
// freed, the heap's top trimmed, and the free heap given back now. The threshold is fixed: glibc's own
// grows to 32 MiB as blocks are freed, after which a build's fp32 transients (cast to bf16 piece by
// piece) land in the heap between the weights and stay resident (Qwen2.5 0.5B LoRA: 1.73 GiB after the
// build, 1.15 with the threshold fixed, for 0.97 GiB of weights). Nothing with TUNEBENCH_MALLOC=system.
void return_freed_memory();

// keep_freed_memory_in_process() for the training loop only (the recipes call return_freed_memory() before
// they build the model): with freed memory kept, building and loading a model left every transient of the
// build resident (a 7B LoRA run peaked at 20.8 GiB for 12.6 GiB of weights). At the scope's end
// return_freed_memory(), so the window's next model build does not pay for this run's heap.
class KeepFreedMemory {
 public:
  KeepFreedMemory() : kept_(keep_freed_memory_in_process()) {}
  ~KeepFreedMemory() {
    if (kept_) return_freed_memory();
  }
  KeepFreedMemory(const KeepFreedMemory&) = delete;
  KeepFreedMemory& operator=(const KeepFreedMemory&) = delete;

 private:
  bool kept_;
};

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
