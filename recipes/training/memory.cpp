#include "training/memory.h"

#include <atomic>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>

#include <malloc.h>

#include <cstdlib>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/version.h>

namespace tb::training {
namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

// Each block carries its size in a header as wide as the CPU alignment, so the data stays aligned
// and the context is the data pointer itself (raw_allocate/raw_deleter keep working).
constexpr size_t kHeader = 64;

void count_alloc(int64_t n) {
  const int64_t now = g_live.fetch_add(n) + n;
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

void counting_delete(void* data) {
  if (!data) return;
  char* block = static_cast<char*>(data) - kHeader;
  g_live.fetch_sub(static_cast<int64_t>(*reinterpret_cast<size_t*>(block)));
  c10::free_cpu(block);
}

// LibTorch 2.3 made allocate() non-const and added copy_data(); support both.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define TB_ALLOCATE_CONST
#else
#define TB_ALLOCATE_CONST const
#endif

struct CountingCpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) TB_ALLOCATE_CONST override {
    char* block = static_cast<char*>(c10::alloc_cpu(n + kHeader));
    *reinterpret_cast<size_t*>(block) = n;
    count_alloc(static_cast<int64_t>(n));
    void* data = block + kHeader;
    return {data, data, &counting_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counting_delete; }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif
};

}  // namespace

bool keep_freed_memory_in_process() {
  const char* mode = std::getenv("TUNEBENCH_MALLOC");
  if (mode && std::string(mode) == "system") return false;
  // Large blocks from the heap instead of one mmap each, and the heap's top never given back.
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  return no_mmap && no_trim;
}

void return_freed_memory() {
  const char* mode = std::getenv("TUNEBENCH_MALLOC");
  if (mode && std::string(mode) == "system") return;
  mallopt(M_MMAP_MAX, 65536);               // glibc's default
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);    // glibc's initial value, now fixed
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);    // glibc's default pairing (twice the mmap threshold)
  malloc_trim(0);
}

void install_memory_tracking() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingCpuAllocator allocator;
    c10::SetCPUAllocator(&allocator, /*priority=*/1);
  });
}

MemoryStats memory_stats() { return {g_live.load(), g_peak.load()}; }

void reset_peak_memory() { g_peak.store(g_live.load()); }

int64_t process_peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace tb::training
