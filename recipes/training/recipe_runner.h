// How every recipe object is driven: setup(), train(), cleanup(), with an exception anywhere turned
// into a Failed result, so a run's log always ends with its "end" event.
#pragma once

#include <exception>

#include "training/run_control.h"

namespace tb::training {

// Recipe: void setup(); RunResult train(); RunResult cleanup(RunResult).
template <class Recipe>
RunResult run_recipe(Recipe& recipe) {
  RunResult result;
  try {
    recipe.setup();
    result = recipe.train();
  } catch (const std::exception& e) {
    result = RunResult{};
    result.status = RunStatus::Failed;
    result.message = e.what();
  }
  return recipe.cleanup(result);
}

}  // namespace tb::training
