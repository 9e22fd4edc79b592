#include "compile/fused_nf4.h"

namespace tb::compile {

torch::Tensor project(torch::nn::AnyModule& projection, const torch::Tensor& x) { return projection.forward(x); }

}  // namespace tb::compile
