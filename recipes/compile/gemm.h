// The compiled step's matrix products. Eager runs every product through ATen's mm, i.e. the system
// BLAS; the compile backend may run them through oneDNN's matmul instead (JIT brgemm kernels for the
// instruction set the CPU has: on an AVX-512 machine whose BLAS picked its AVX2 kernels that is about
// twice the speed), when the build found oneDNN. Which one runs is the plan's choice, timed at warm-up.
#pragma once

#include <optional>
#include <string>

#include <torch/types.h>

namespace tb::compile {

enum class GemmBackend : int { aten = 0, onednn = 1 };

// "aten" or "onednn"; the reverse of parse_gemm_backend.
std::string gemm_backend_name(GemmBackend backend);
std::optional<GemmBackend> parse_gemm_backend(const std::string& name);

// Whether this build has oneDNN and it runs on this CPU.
bool onednn_available();

// A matrix in memory, without a Tensor around it (the attention tiles make thousands of products a
// step, and a tensor view costs more than a small product): element (i, j) at
// data + (i * row_stride + j * col_stride) elements of `dtype`.
struct MatrixView {
  void* data = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 1;
  torch::ScalarType dtype = torch::kFloat;
  MatrixView t() const { return {data, cols, rows, col_stride, row_stride, dtype}; }
};

// As gemm_into below, on views; the shapes are checked, the memory is the caller's.
void gemm_into(const MatrixView& c, const MatrixView& a, const MatrixView& b, bool accumulate, GemmBackend backend);

// c = a @ b, or c += a @ b when `accumulate`. a [M, K] and b [K, N] are 2-D of one dtype (fp32 or
// bf16), any strides (a transposed view costs nothing); c [M, N] has a unit last stride (row views of
// a larger tensor are fine) and is fp32 or a's dtype. oneDNN accumulates in fp32 and rounds once into c;
// ATen's bf16 product is rounded to bf16 before it is widened into an fp32 c.
// With onednn requested but unavailable (or refusing the shapes) ATen computes it.
void gemm_into(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b, bool accumulate,
               GemmBackend backend);

// a @ b as a new contiguous [M, N] tensor of dtype `out`.
torch::Tensor gemm(const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType out, GemmBackend backend);

// torch::linear(x, weight) without a bias, x [..., in], weight [out, in] of x's dtype, with the backward
// products through the same backend: dx = dy W, dW = dy^T x (only for the inputs that need them).
torch::Tensor gemm_linear(const torch::Tensor& x, const torch::Tensor& weight, GemmBackend backend);

}  // namespace tb::compile
