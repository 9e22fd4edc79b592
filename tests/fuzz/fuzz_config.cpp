// libFuzzer target: a YAML config and, after a NUL byte, one override per line, through the loader
// (parse, overrides, interpolation, generic validation). Any input must end in a config or diagnostics.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  tb::config::LoadOptions options;
  if (nul != std::string::npos) {
    size_t start = nul + 1;
    while (start < input.size() && options.overrides.size() < 8) {
      const size_t end = input.find('\n', start);
      options.overrides.push_back(input.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  const auto result = tb::config::load_text(input.substr(0, nul), "fuzz.yaml", options);
  if (result.ok()) (void)result.config->to_yaml();
  return 0;
}
