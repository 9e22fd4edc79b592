// Components of recipes/models/ in the registry (filled as the subsystem lands).
#include "config/components.h"
#include "config/registry.h"

namespace tb::models {

void register_components(config::Registry& registry) { (void)registry; }

}  // namespace tb::models
