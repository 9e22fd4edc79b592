// What the window's hardware line and About box say about this machine and build: cores, the threads
// LibTorch uses, the instruction sets the kernels picked (ATen's vectorised kernels, oneDNN's JIT), the
// memory, and the versions of LibTorch and oneDNN. Torch-free interface.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace tb::compile {

struct MachineInfo {
  int cores = 0;              // logical CPUs this process may run on
  int torch_threads = 0;      // LibTorch's intra-op threads
  std::string aten_isa;       // the vector kernels ATen dispatches to: DEFAULT, AVX2, AVX512
  std::string onednn_isa;     // what oneDNN's JIT generates for ("" when the build has no oneDNN)
  uint64_t memory_total = 0;      // bytes (MemTotal)
  uint64_t memory_available = 0;  // bytes (MemAvailable): what a run may take without swapping
  std::string torch_version;
  std::string onednn_version;  // "" without oneDNN
};

MachineInfo machine_info();

// Reads /proc/meminfo-style text: {MemTotal, MemAvailable} in bytes (0 where absent).
std::pair<uint64_t, uint64_t> parse_meminfo(const std::string& text);

}  // namespace tb::compile
