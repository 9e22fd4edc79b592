// Where this process stands in a multi-process run, read from the environment torchrun gives its
// workers (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), which
// `tunebench-cli run --nproc-per-node N` gives its workers too. Torch-free.
#pragma once

#include <optional>
#include <string>

namespace tb::distributed {

struct World {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;  // workers on this machine
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int timeout_s = 300;  // TUNEBENCH_DIST_TIMEOUT: how long a collective waits for a silent peer
};

// The world torchrun's variables describe; nullopt when WORLD_SIZE is not set (a single process).
// Throws std::runtime_error naming the variable that is malformed or inconsistent.
std::optional<World> world_from_environment();

}  // namespace tb::distributed
