#include "models/build_dtype.h"

namespace tb::models {

namespace {
thread_local c10::ScalarType build_dtype = c10::ScalarType::Float;
}

BuildDtype::BuildDtype(c10::ScalarType dtype) : previous_(build_dtype) { build_dtype = dtype; }
BuildDtype::~BuildDtype() { build_dtype = previous_; }
c10::ScalarType BuildDtype::current() { return build_dtype; }

}  // namespace tb::models
