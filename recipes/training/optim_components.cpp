// Optimizers, LR schedules and losses in the registry (filled by the recipe work).
#include "config/components.h"
#include "config/registry.h"

namespace tb::training {

void register_optim_components(config::Registry& registry) { (void)registry; }

}  // namespace tb::training
