// The registration functions of each subsystem; Registry::builtin() calls them all, in this order.
#pragma once

namespace tb::config {
class Registry;
}

namespace tb::models { void register_components(config::Registry& registry); }
namespace tb::checkpoint { void register_components(config::Registry& registry); }
namespace tb::data { void register_components(config::Registry& registry); }
namespace tb::training {
void register_components(config::Registry& registry);        // metric loggers
void register_optim_components(config::Registry& registry);  // optimizers, LR schedules, losses
}  // namespace tb::training
