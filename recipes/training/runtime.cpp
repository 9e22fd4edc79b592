#include "training/runtime.h"

#include <random>
#include <stdexcept>
#include <algorithm>
#include <thread>

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include "config/schema.h"

namespace tb::training {

std::string Runtime::dtype_name() const { return dtype == c10::ScalarType::BFloat16 ? "bf16" : "fp32"; }

Runtime read_runtime(const config::Config& cfg) {
  const std::string device = config::setting_string(cfg, "device");
  if (device != "cpu") {
    if (device.rfind("cuda", 0) == 0 && !torch::cuda::is_available())
      throw std::runtime_error("device '" + device + "' asked for, but this LibTorch has no CUDA; use device: cpu");
    if (device.rfind("cuda", 0) != 0) throw std::runtime_error("unknown device '" + device + "' (cpu or cuda)");
    throw std::runtime_error("the single-device recipes run on the CPU in this build; use device: cpu");
  }
  Runtime r;
  const std::string dtype = config::setting_string(cfg, "dtype");
  if (dtype == "fp32" || dtype == "float32")
    r.dtype = c10::ScalarType::Float;
  else if (dtype == "bf16" || dtype == "bfloat16")
    r.dtype = c10::ScalarType::BFloat16;
  else
    throw std::runtime_error("dtype '" + dtype + "' is not supported (fp32 or bf16)");
  // More threads than cores only wait on each other (1000 on two cores made a step take minutes).
  const int64_t asked = config::setting_int(cfg, "num_threads");
  if (asked < 1) throw std::runtime_error("num_threads must be at least 1 (it is " + std::to_string(asked) + ")");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.threads_asked = static_cast<int>(std::min<int64_t>(asked, 1 << 20));
  r.num_threads = std::min(r.threads_asked, cores);
  if (const auto seed = config::setting_optional_int(cfg, "seed")) {
    r.seed = static_cast<uint64_t>(*seed);
  } else {
    // Below 2^53 so that the seed survives a trip through JSON readers that use doubles.
    r.seed = std::random_device{}() | (uint64_t(std::random_device{}() & 0x1fffff) << 32);
    r.seed_picked = true;
  }
  return r;
}

void apply_runtime(const Runtime& runtime) {
  at::set_num_threads(runtime.num_threads);
  at::GradMode::set_enabled(true);
  torch::manual_seed(runtime.seed);
}

std::string threads_warning(const Runtime& runtime) {
  if (runtime.threads_asked <= runtime.num_threads) return {};
  return "num_threads: " + std::to_string(runtime.threads_asked) + " asked, this machine has " +
         std::to_string(runtime.num_threads) + " cores: training uses " + std::to_string(runtime.num_threads) +
         " (threads beyond the cores only wait on each other)";
}

std::string seed_message(const Runtime& runtime) {
  return "seed " + std::to_string(runtime.seed) +
         (runtime.seed_picked ? " (picked for this run: the config says seed: null; checkpoints record it)" : "");
}

}  // namespace tb::training
