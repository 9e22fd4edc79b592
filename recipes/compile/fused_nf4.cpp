#include "compile/fused_nf4.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "compile/element_access.h"
#include "compile/fused_lora.h"
#include "compile/gemm.h"
#include "peft/lora_linear.h"
#include "quant/nf4.h"

namespace tb::compile {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Values per tile buffer by default: 4 MiB of fp32 (2 MiB of bf16), within a core's share of the
// L3. Tiles of 512 KiB (the L2) made the products so narrow that stories110M QLoRA ran 1-11% slower
// (bf16, interleaved runs on 2 threads): the matmul's efficiency outweighs the L2 here.
constexpr int64_t kDefaultTileElements = int64_t(1) << 20;

// What the tile loops read of an NF4 weight [out, in]: its packed codes and its double-quantised
// block scales, dequantised per block as dequantize_nf4_scales does (code / factor + offset, fp32).
struct NF4Tiles {
  const uint8_t* packed;
  const int8_t* scale_codes;
  const float* scale_factors;
  float scale_offset;
  int64_t block_size, scaler_block_size, out, in;
  float scale(int64_t block) const {
    return static_cast<float>(scale_codes[block]) / scale_factors[block / scaler_block_size] + scale_offset;
  }
};

// `pairs` bytes of one block into 2 * pairs values: code * s in fp32, rounded to the output's type
// (bf16 as c10::BFloat16 rounds). The block's 16 values are computed once into a table; with AVX-512
// the table is one register and a 16-way permute turns 16 (bf16) or 8 (fp32) bytes into values at
// once, instead of two table loads a byte.
template <typename T>
TB_INLINE void dequantize_pairs_portable(const uint8_t* bytes, int64_t pairs, float s, T* out) {
  const auto& codes = quant::nf4_code_book();
  T table[16];
  for (int k = 0; k < 16; ++k) store(table[k], codes[k] * s);
  for (int64_t i = 0; i < pairs; ++i) {
    out[2 * i] = table[bytes[i] >> 4];
    out[2 * i + 1] = table[bytes[i] & 15];
  }
}

__attribute__((target("default"))) void dequantize_pairs(const uint8_t* bytes, int64_t pairs, float s, float* out) {
  dequantize_pairs_portable(bytes, pairs, s, out);
}
__attribute__((target("default"))) void dequantize_pairs(const uint8_t* bytes, int64_t pairs, float s, bf16_bits* out) {
  dequantize_pairs_portable(bytes, pairs, s, out);
}

// GCC 12's AVX-512 intrinsics pass an uninitialised "undefined" vector as the unused merge source and
// warn about it in their own header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512bw"))) void dequantize_pairs(const uint8_t* bytes, int64_t pairs, float s,
                                                                   float* out) {
  const __m512 table = _mm512_mul_ps(_mm512_loadu_ps(quant::nf4_code_book().data()), _mm512_set1_ps(s));
  int64_t i = 0;
  for (; i + 8 <= pairs; i += 8) {
    // A byte per 64-bit lane; its high nibble indexes the lane's low float, its low nibble the high one.
    const __m512i b = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + i)));
    const __m512i idx = _mm512_or_si512(_mm512_srli_epi64(b, 4), _mm512_slli_epi64(_mm512_and_si512(b, _mm512_set1_epi64(15)), 32));
    _mm512_storeu_ps(out + 2 * i, _mm512_permutexvar_ps(idx, table));
  }
  if (i < pairs) dequantize_pairs_portable(bytes + i, pairs - i, s, out + 2 * i);
}
__attribute__((target("avx512f,avx512bw"))) void dequantize_pairs(const uint8_t* bytes, int64_t pairs, float s,
                                                                   bf16_bits* out) {
  const __m512i f = _mm512_castps_si512(_mm512_mul_ps(_mm512_loadu_ps(quant::nf4_code_book().data()), _mm512_set1_ps(s)));
  // Round to nearest even into the high half, as store(bf16_bits&, float) does (the values are finite).
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(f, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(f, _mm512_set1_epi32(0x7FFF)), odd), 16);
  const __m512i table = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(rounded));  // the 16 words the indices reach
  int64_t i = 0;
  for (; i + 16 <= pairs; i += 16) {
    // A byte per 32-bit lane; its high nibble indexes the lane's low word, its low nibble the high one.
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + i)));
    const __m512i idx = _mm512_or_si512(_mm512_srli_epi32(b, 4), _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(15)), 16));
    _mm512_storeu_si512(out + 2 * i, _mm512_permutexvar_epi16(idx, table));
  }
  if (i < pairs) dequantize_pairs_portable(bytes + i, pairs - i, s, out + 2 * i);
}
#pragma GCC diagnostic pop

// Flattened weight values [begin, end) into dst (float or bf16_bits), as dequantize_nf4 computes them
// (code * block scale in fp32, then rounded). Blocks have an even size, so only the ends of the range
// can split a byte.
template <typename T>
void dequantize_range(const NF4Tiles& w, int64_t begin, int64_t end, T* dst) {
  const auto& codes = quant::nf4_code_book();
  int64_t e = begin;
  while (e < end) {
    const int64_t block = e / w.block_size;
    const int64_t block_end = std::min(end, (block + 1) * w.block_size);
    const float s = w.scale(block);
    if (e & 1) {
      store(dst[e - begin], codes[w.packed[e >> 1] & 15] * s);
      ++e;
    }
    const int64_t pairs = (block_end - e) / 2;
    dequantize_pairs(w.packed + (e >> 1), pairs, s, dst + (e - begin));
    e += 2 * pairs;
    if (e < block_end) {
      store(dst[e - begin], codes[w.packed[e >> 1] >> 4] * s);
      ++e;
    }
  }
}

// Lines (rows or columns) of `length` values per tile: `tile_elements` of them when given, else at
// most a cache-sized tile, with at least two tiles per thread and a tile count that is a multiple of
// the threads (5 tiles on 2 threads would leave one thread idle a fifth of the time).
int64_t tile_lines(int64_t lines, int64_t length, int64_t tile_elements) {
  if (tile_elements > 0) return std::clamp<int64_t>(tile_elements / length, 1, lines);
  const int64_t threads = at::get_num_threads();
  const int64_t fit = std::max<int64_t>(1, kDefaultTileElements / length);
  int64_t tiles = std::max((lines + fit - 1) / fit, 2 * threads);
  tiles = (tiles + threads - 1) / threads * threads;
  return std::clamp<int64_t>(std::max<int64_t>((lines + tiles - 1) / tiles, 8), 1, lines);
}

// y [N, out] = x [N, in] @ W^T, a tile of output rows at a time: dequantise rows [r0, r0 + n) of W,
// then one matmul into the columns [r0, r0 + n) of y.
template <typename T>
void forward_tiles(const torch::Tensor& x, const NF4Tiles& w, int64_t tile_elements, GemmBackend backend,
                   const torch::Tensor& y) {
  const int64_t rows = tile_lines(w.out, w.in, tile_elements);
  const int64_t tiles = (w.out + rows - 1) / rows;
  const auto dtype = x.scalar_type();
  const MatrixView xv{x.data_ptr(), x.size(0), w.in, w.in, 1, dtype};
  T* yp = elements<T>(y);
  at::parallel_for(0, tiles, 1, [&](int64_t first, int64_t last) {
    std::vector<T> buffer(rows * w.in);
    for (int64_t t = first; t < last; ++t) {
      const int64_t r0 = t * rows, n = std::min(rows, w.out - r0);
      dequantize_range(w, r0 * w.in, (r0 + n) * w.in, buffer.data());
      const MatrixView tile{buffer.data(), n, w.in, w.in, 1, dtype};
      gemm_into(MatrixView{yp + r0, x.size(0), n, w.out, 1, dtype}, xv, tile.t(), false, backend);
    }
  });
}

// dx [N, in] = dy [N, out] @ W, a tile of input columns at a time (each tile its own columns of dx,
// so no partial sums to add): dequantise columns [c0, c0 + n) of every row, one matmul.
template <typename T>
torch::Tensor backward_tiles(const torch::Tensor& dy, const NF4Tiles& w, int64_t tile_elements, GemmBackend backend) {
  auto dx = torch::empty({dy.size(0), w.in}, dy.options());
  const int64_t cols = tile_lines(w.in, w.out, tile_elements);
  const int64_t tiles = (w.in + cols - 1) / cols;
  const auto dtype = dy.scalar_type();
  const MatrixView dyv{dy.data_ptr(), dy.size(0), w.out, w.out, 1, dtype};
  T* dxp = elements<T>(dx);
  at::parallel_for(0, tiles, 1, [&](int64_t first, int64_t last) {
    std::vector<T> buffer(w.out * cols);
    for (int64_t t = first; t < last; ++t) {
      const int64_t c0 = t * cols, n = std::min(cols, w.in - c0);
      for (int64_t r = 0; r < w.out; ++r) dequantize_range(w, r * w.in + c0, r * w.in + c0 + n, buffer.data() + r * n);
      const MatrixView tile{buffer.data(), w.out, n, n, 1, dtype};
      gemm_into(MatrixView{dxp + c0, dy.size(0), n, w.in, 1, dtype}, dyv, tile, false, backend);
    }
  });
  return dx;
}

NF4Tiles tiles_of(const quant::NF4Weight& w) {
  TORCH_CHECK(w.packed.is_contiguous() && w.packed.scalar_type() == torch::kByte,
              "NF4 codes: contiguous uint8 expected");
  TORCH_CHECK(w.scale_codes.is_contiguous() && w.scale_codes.scalar_type() == torch::kChar &&
                  w.scale_factors.is_contiguous() && w.scale_factors.scalar_type() == torch::kFloat,
              "NF4 scales: contiguous int8 codes and fp32 factors expected");
  return {w.packed.data_ptr<uint8_t>(), w.scale_codes.data_ptr<int8_t>(), w.scale_factors.data_ptr<float>(),
          w.scale_offset, w.block_size, w.scaler_block_size, w.shape[0], w.shape[1]};
}

// Keeps the NF4 tensors (shared) and scalars, as quant::linear_nf4 does: a shared_ptr does not fit
// in saved_data without registering a class.
struct TiledLinearNF4 : torch::autograd::Function<TiledLinearNF4> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const std::shared_ptr<const quant::NF4Weight>& w, int64_t tile_elements,
                               int64_t backend) {
    ctx->save_for_backward({w->packed, w->scale_codes, w->scale_factors});
    ctx->saved_data["scale_offset"] = static_cast<double>(w->scale_offset);
    ctx->saved_data["shape"] = w->shape;
    ctx->saved_data["block_size"] = w->block_size;
    ctx->saved_data["scaler_block_size"] = w->scaler_block_size;
    ctx->saved_data["tile_elements"] = tile_elements;
    ctx->saved_data["backend"] = backend;
    const auto x2 = x.detach().reshape({-1, w->shape[1]}).contiguous();
    const auto tiles = tiles_of(*w);
    const auto be = static_cast<GemmBackend>(backend);
    auto shape = x.sizes().vec();
    shape.back() = w->shape[0];
    // Not returned as a view, so the fused LoRA update may add into it in place (as in gemm_linear).
    auto y = torch::empty(shape, x.options());
    const auto y2 = y.view({-1, w->shape[0]});
    if (x.scalar_type() == torch::kBFloat16)
      forward_tiles<bf16_bits>(x2, tiles, tile_elements, be, y2);
    else
      forward_tiles<float>(x2, tiles, tile_elements, be, y2);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    quant::NF4Weight w;
    w.packed = saved[0];
    w.scale_codes = saved[1];
    w.scale_factors = saved[2];
    w.scale_offset = static_cast<float>(ctx->saved_data["scale_offset"].toDouble());
    w.shape = ctx->saved_data["shape"].toIntVector();
    w.block_size = ctx->saved_data["block_size"].toInt();
    w.scaler_block_size = ctx->saved_data["scaler_block_size"].toInt();
    const int64_t tile_elements = ctx->saved_data["tile_elements"].toInt();
    const auto be = static_cast<GemmBackend>(ctx->saved_data["backend"].toInt());
    const auto& grad = grad_outputs[0];
    const auto dy = grad.reshape({-1, w.shape[0]}).contiguous();
    const auto tiles = tiles_of(w);
    auto dx = dy.scalar_type() == torch::kBFloat16 ? backward_tiles<bf16_bits>(dy, tiles, tile_elements, be)
                                                   : backward_tiles<float>(dy, tiles, tile_elements, be);
    auto shape = grad.sizes().vec();
    shape.back() = w.shape[1];
    return {dx.view(shape), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

bool fusable_dtype(const torch::Tensor& x) {
  return x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kBFloat16;
}

}  // namespace

torch::Tensor fused_linear_nf4(const torch::Tensor& x, const std::shared_ptr<const quant::NF4Weight>& weight,
                               int64_t tile_elements, GemmBackend backend) {
  RECORD_FUNCTION("tb::fused_linear_nf4", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(weight && weight->shape.size() == 2, "fused_linear_nf4: a 2-D NF4 weight [out, in] expected");
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == weight->shape[1], "fused_linear_nf4: input of shape ", x.sizes(),
              " does not match in_features ", weight->shape[1]);
  TORCH_CHECK(fusable_dtype(x) && x.device().is_cpu(), "fused_linear_nf4: fp32 or bf16 CPU input expected");
  return TiledLinearNF4::apply(x, weight, tile_elements, static_cast<int64_t>(backend));
}

namespace {

// linear->forward(x) with the product through `backend`.
torch::Tensor linear_through(torch::nn::LinearImpl& linear, const torch::Tensor& x, GemmBackend backend) {
  const auto y = gemm_linear(x, linear.weight, backend);
  return linear.bias.defined() ? y + linear.bias : y;
}

bool same_dtype(const torch::Tensor& x, const torch::Tensor& weight) {
  return weight.defined() && weight.scalar_type() == x.scalar_type();
}

}  // namespace

torch::Tensor project(torch::nn::AnyModule& projection, const torch::Tensor& x, GemmBackend backend) {
  if (!fusable_dtype(x) || !x.device().is_cpu()) return projection.forward(x);
  auto* module = projection.ptr().get();
  if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(module)) {
    if (backend == GemmBackend::aten || !same_dtype(x, linear->weight)) return projection.forward(x);
    return linear_through(*linear, x, backend);
  }
  auto* lora = dynamic_cast<peft::LoRALinearImpl*>(module);
  if (!lora) return projection.forward(x);
  const bool nf4 = lora->quantized_base != nullptr;
  const bool plain_base = !nf4 && !lora->base_forward && same_dtype(x, lora->weight);
  if (!nf4 && (backend == GemmBackend::aten || !plain_base)) return projection.forward(x);
  if (!same_dtype(x, lora->lora_a->weight) || !same_dtype(x, lora->lora_b->weight)) return projection.forward(x);
  // LoRALinearImpl::forward with the products fused: base first, then the dropout of the LoRA input.
  auto base = nf4 ? fused_linear_nf4(x, lora->quantized_base, 0, backend) : gemm_linear(x, lora->weight, backend);
  if (lora->bias.defined()) base = base + lora->bias;  // Qwen2's q, k, v
  const auto lora_in = lora->dropout_p() > 0.0 ? lora->dropout->forward(x) : x;
  if (!lora->lora_a->bias.defined() && !lora->lora_b->bias.defined() && base.is_contiguous() && !base.is_view())
    return fused_lora_update(base, lora_in, lora->lora_a->weight, lora->lora_b->weight, lora->scale(), backend);
  const auto update = linear_through(*lora->lora_b, linear_through(*lora->lora_a, lora_in, backend), backend);
  return base + lora->scale() * update;
}

}  // namespace tb::compile
