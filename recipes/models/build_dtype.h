// The dtype a decoder's parameters are built in. Models are built in fp32 unless a recipe asks for its
// training dtype around the build (as torchtune's set_default_dtype context does): each layer is then
// cast as soon as it is made, so a bf16 model never exists whole in fp32 (an 8B model would need 32 GB
// of fp32 weights on the way to its 16 GB). Values are what building in fp32 and casting would give.
#pragma once

#include <c10/core/ScalarType.h>

namespace tb::models {

// Scoped, per thread (a GUI run builds on its worker thread).
class BuildDtype {
 public:
  explicit BuildDtype(c10::ScalarType dtype);
  ~BuildDtype();
  BuildDtype(const BuildDtype&) = delete;
  BuildDtype& operator=(const BuildDtype&) = delete;

  static c10::ScalarType current();  // kFloat outside any BuildDtype

 private:
  c10::ScalarType previous_;
};

}  // namespace tb::models
