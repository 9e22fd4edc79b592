#include "compile/machine_info.h"

#include <sched.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#ifdef TB_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace tb::compile {

namespace {

// LibTorch says which vector kernels it dispatches to in its configuration text ("CPU capability usage:
// AVX2"); the function behind it is not exported.
std::string aten_isa_name() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const auto at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const auto end = config.find('\n', at);
  return config.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
}

#ifdef TB_HAVE_ONEDNN
std::string onednn_isa_name() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2 VNNI";
    case dnnl_cpu_isa_avx512_core: return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX-512 VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX-512 BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX-512 AMX";
    default: return "other";
  }
}
#endif

}  // namespace

std::pair<uint64_t, uint64_t> parse_meminfo(const std::string& text) {
  std::istringstream in(text);
  std::string key;
  uint64_t value = 0, total = 0, available = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:") total = value * 1024;
    if (key == "MemAvailable:") available = value * 1024;
  }
  return {total, available};
}

MachineInfo machine_info() {
  // What cannot change while the process runs is read once (the window asks on every setup edit).
  static const MachineInfo fixed = [] {
    MachineInfo m;
    cpu_set_t set;
    m.cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : int(std::thread::hardware_concurrency());
    m.aten_isa = aten_isa_name();
    m.torch_version = TORCH_VERSION;
#ifdef TB_HAVE_ONEDNN
    m.onednn_isa = onednn_isa_name();
    const dnnl_version_t* v = dnnl_version();
    m.onednn_version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#endif
    return m;
  }();
  MachineInfo m = fixed;
  m.torch_threads = at::get_num_threads();
  std::ifstream meminfo("/proc/meminfo");
  std::stringstream text;
  text << meminfo.rdbuf();
  std::tie(m.memory_total, m.memory_available) = parse_meminfo(text.str());
  return m;
}

}  // namespace tb::compile
