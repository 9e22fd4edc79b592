// Precompiled header of tunecore: the heavy third-party headers, parsed once per build.
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
