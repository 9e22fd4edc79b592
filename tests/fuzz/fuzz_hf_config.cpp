// libFuzzer target: a model folder's config.json read into the architecture (sizes checked before
// anything is allocated). Refusals are std::exception with the file named; crashes are findings.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto json = nlohmann::json::parse(data, data + size, nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    const auto args = tb::checkpoint::model_args_from_hf_config(json, "config.json");
    (void)args.parameter_count();
  } catch (const std::exception&) {
  }
  return 0;
}
