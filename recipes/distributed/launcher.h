// `tunebench-cli run --nproc-per-node N`: starts N worker processes on this machine, each the same
// program with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), and supervises them: the first worker that fails ends the run (the others are asked
// to stop, then killed after a grace period), and a stop request reaches every worker. Torch-free.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace tb::distributed {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port on a one-machine run, torchrun's 29500 across machines
  int timeout_s = 1800; // how long a collective waits for a silent peer (TUNEBENCH_DIST_TIMEOUT)
  int grace_s = 10;     // how long the other workers get to stop before they are killed
  std::vector<std::string> worker_argv;  // the program and arguments every worker runs
};

struct LaunchResult {
  int exit_code = 0;       // 0: every worker succeeded; 130: stopped before the ranks had all joined
  std::string message;     // why the run failed, naming the rank (or how it stopped)
};

// Starts the workers and waits for them. `stop` (set from a signal handler) is passed on to every
// worker as SIGTERM, which asks a run to stop after its current step. `say` hears one line per event
// (the workers started, with their pids; a worker that failed). Throws std::runtime_error when the run
// cannot start (the port in use, bad options).
LaunchResult launch(const LaunchOptions& options, const std::atomic<bool>& stop,
                    const std::function<void(const std::string&)>& say);

// Whether a TCP port can be listened on at `addr` (0.0.0.0 for any local address) right now.
bool port_is_free(int port);
// A port the system has free now.
int pick_free_port();

}  // namespace tb::distributed
