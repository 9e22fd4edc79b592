// The compiled step's linear projections. Every projection of the compiled step goes through
// project(); today it runs the module's own forward (NF4 fusion: being written, issue 6).
#pragma once

#include <torch/nn/modules/container/any.h>
#include <torch/types.h>

namespace tb::compile {

torch::Tensor project(torch::nn::AnyModule& projection, const torch::Tensor& x);

}  // namespace tb::compile
