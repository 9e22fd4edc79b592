// The settings a process applies before it builds a model from a config (training, eval, generate):
// the device, the compute dtype, the intra-op threads and the seed. Threads, grad mode and the seed
// are per thread in LibTorch, so apply_runtime() runs on the thread that trains.
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/ScalarType.h>

#include "config/config.h"

namespace tb::training {

struct Runtime {
  c10::ScalarType dtype = c10::ScalarType::Float;  // `dtype`: fp32 or bf16
  int num_threads = 1;                             // `num_threads`, default: every core; at most the cores
  int threads_asked = 1;                           // what the config said (more than the cores: clamped)
  uint64_t seed = 0;                               // `seed`
  bool seed_picked = false;                        // `seed: null`: picked at random for this run
  std::string dtype_name() const;                  // "fp32" or "bf16", as the config spells it
};

// Reads device, dtype, num_threads and seed; `seed: null` (the schema's default) picks a random seed.
// Throws std::runtime_error with a one-line reason for a value this build cannot honour.
Runtime read_runtime(const config::Config& cfg);

// On the calling thread: the intra-op thread count, grad mode on, and the global generator seeded.
void apply_runtime(const Runtime& runtime);

// The warning a run logs when num_threads was more than the cores; empty when it was not.
std::string threads_warning(const Runtime& runtime);

// The line a run logs about its seed ("seed 1234 (picked: the config says seed: null)").
std::string seed_message(const Runtime& runtime);

}  // namespace tb::training
