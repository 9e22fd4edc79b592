// How every recipe object is driven: setup(), train(), cleanup(), with an exception anywhere turned
// into a Failed result (a stop heard during setup into a Stopped one), so a run's log always ends with its
// "end" event.
#pragma once

#include <exception>

#include <c10/util/Exception.h>

#include "config/interrupt.h"
#include "training/run_control.h"

namespace tb::training {

// Recipe: void setup(); RunResult train(); RunResult cleanup(RunResult).
template <class Recipe>
RunResult run_recipe(Recipe& recipe) {
  RunResult result;
  try {
    recipe.setup();
    result = recipe.train();
  } catch (const config::Interrupted&) {  // a stop heard while the dataset was built (setup has no steps)
    result = RunResult{};
    result.status = RunStatus::Stopped;
    result.message = "stopped before training began (while the dataset was built)";
  } catch (const std::exception& e) {
    result = RunResult{};
    result.status = RunStatus::Failed;
    // LibTorch's errors carry a C++ stack trace of some 30 lines after the message: the log gets the message.
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    result.message = torch_error ? torch_error->what_without_backtrace() : e.what();
  }
  return recipe.cleanup(result);
}

}  // namespace tb::training
