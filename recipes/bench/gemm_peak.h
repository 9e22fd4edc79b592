// What the machine's matrix products reach, measured in the run that is benchmarked: one product of
// the step's largest shape (the MLP's: tokens x dim times dim x hidden), through each GEMM backend the
// compiled step may use (compile/gemm.h), at the threads the run trained with. The best of them is the
// limit a step's FLOPs are measured against (MFU).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace tb::bench {

// {"gflops": median GFLOP/s of the fastest backend, "backend": its name, "m", "k", "n"}; in bf16, else fp32.
nlohmann::json measure_gemm_peak(int64_t m, int64_t k, int64_t n, bool bf16, int repeats = 7);

// Torch-free interface: the CLI includes it.
// Adds to `bench compile`'s line (compare_eager_and_compiled) the step's FLOPs (training::step_flops of
// the run's shape, `sequences` per optimizer step in `micro_batches` micro-batches), the matrix-product
// peak measured now in fp32 and bf16 at the step's MLP shape, and each step's share of the peak of the
// run's dtype (eager_mfu, compile_mfu).
void add_machine_limit(nlohmann::json& line, const nlohmann::json& eager, const nlohmann::json& compiled,
                       int64_t sequences, int64_t micro_batches, bool bf16);

}  // namespace tb::bench
