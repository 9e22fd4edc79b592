#include "components/builtin.h"

#include "config/registry.h"

namespace tb::components {

const config::Registry& builtin() {
  static const config::Registry registry = [] {
    config::Registry r;
    register_models(r);
    register_checkpointers(r);
    register_data(r);
    register_metric_loggers(r);
    register_optim(r);
    return r;
  }();
  return registry;
}

}  // namespace tb::components
