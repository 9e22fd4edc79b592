#include "distributed/launcher.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tb::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// A socket bound to `port` on every local address as c10d's TCPStore server binds it, with SO_REUSEADDR:
// a port a finished run left in TIME_WAIT is free to it (without the option it looked taken for about a
// minute), one another program listens on is not. -1 on failure.
int bind_port(int port, int* bound_port = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  if (bound_port) {
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    *bound_port = ntohs(addr.sin_port);
  }
  return fd;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a worker: ") + std::strerror(errno));
  if (pid == 0) {
    // A worker lives no longer than its launcher: killed (kill -9), the launcher left its workers training
    // and saving. SIGTERM is a stop after the current step, as Ctrl-C to the launcher would give.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the launcher died before the line above
    // Ctrl-C in a terminal reaches the launcher alone, which passes one stop on: a worker that got the
    // terminal's SIGINT and the launcher's SIGTERM would take the second as "stop at once".
    ::setpgid(0, 0);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(args[0], args.data());
    const std::string why = "tunebench-cli: cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, why.data(), why.size());
    (void)ignored;
    ::_exit(127);
  }
  return pid;
}

}  // namespace

bool port_is_free(int port) {
  const int fd = bind_port(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int pick_free_port() {
  int port = 0;
  const int fd = bind_port(0, &port);
  if (fd < 0) throw std::runtime_error(std::string("cannot find a free port: ") + std::strerror(errno));
  ::close(fd);
  return port;
}

LaunchResult launch(const LaunchOptions& o, const std::atomic<bool>& stop,
                    const std::function<void(const std::string&)>& say) {
  if (o.nproc_per_node < 1) throw std::runtime_error("--nproc-per-node must be at least 1");
  // Each worker trains on at least one core: more workers than cores only share them out (1000 were started,
  // 93 of them and 3 GB in 12 s, before anything said so).
  if (const unsigned cores = std::thread::hardware_concurrency(); cores > 0 && unsigned(o.nproc_per_node) > cores)
    throw std::runtime_error("--nproc-per-node " + std::to_string(o.nproc_per_node) + " is more than this machine's " +
                             std::to_string(cores) + " cores (each worker needs one): use at most " + std::to_string(cores));
  if (o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw std::runtime_error("--node-rank " + std::to_string(o.node_rank) + " is not below --nnodes " + std::to_string(o.nnodes));
  if (o.worker_argv.empty()) throw std::runtime_error("no worker program");
  int port = o.master_port;
  if (port == 0) port = o.nnodes == 1 ? pick_free_port() : 29500;
  if (port < 1 || port > 65535) throw std::runtime_error("--master-port " + std::to_string(port) + " is not a port");
  // Rank 0 listens there: a port taken is said now, once, instead of by a worker among the logs.
  if (o.node_rank == 0 && !port_is_free(port))
    throw std::runtime_error("port " + std::to_string(port) + " is already in use (another run, or another program); pick a free --master-port");

  const int world = o.nnodes * o.nproc_per_node;
  std::vector<Worker> workers(static_cast<size_t>(o.nproc_per_node));
  std::string started;
  for (int local = 0; local < o.nproc_per_node; ++local) {
    Worker& w = workers[static_cast<size_t>(local)];
    w.rank = o.node_rank * o.nproc_per_node + local;
    w.pid = spawn(o.worker_argv, {{"RANK", std::to_string(w.rank)},
                                  {"LOCAL_RANK", std::to_string(local)},
                                  {"WORLD_SIZE", std::to_string(world)},
                                  {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
                                  {"GROUP_RANK", std::to_string(o.node_rank)},
                                  {"MASTER_ADDR", o.master_addr},
                                  {"MASTER_PORT", std::to_string(port)},
                                  {"TUNEBENCH_DIST_TIMEOUT", std::to_string(o.timeout_s)}});
    w.running = true;
    started += (started.empty() ? "" : ", ") + std::string("rank ") + std::to_string(w.rank) + " pid " + std::to_string(w.pid);
  }
  say("started " + std::to_string(o.nproc_per_node) + " worker" + (o.nproc_per_node == 1 ? "" : "s") + " of " +
      std::to_string(world) + " (" + started + "); rendezvous at " + o.master_addr + ":" + std::to_string(port));
  if (o.nnodes > 1)  // the wait for the other machines is said, with how long it may last
    say("waiting for the other " + std::to_string(o.nnodes - 1) + " node" + (o.nnodes == 2 ? "" : "s") +
        " to join (each runs this command with its own --node-rank, 0 to " + std::to_string(o.nnodes - 1) +
        ", and --rdzv-endpoint " + o.master_addr + ":" + std::to_string(port) + "), at most " +
        std::to_string(o.timeout_s) + " s; Ctrl-C stops the wait");

  LaunchResult result;
  bool stop_sent = false, stopped_waiting = false;
  std::optional<Clock::time_point> kill_at;  // set once the run is ending: then the stragglers are killed
  auto signal_running = [&](int sig) {
    for (auto& w : workers)
      if (w.running) ::kill(w.pid, sig);
  };
  // A worker killed by a signal is the cause; the others' collectives then fail within milliseconds, and
  // may be reaped first. So the first failure waits a moment for the rest before one is named.
  const Worker* failed = nullptr;
  std::optional<Clock::time_point> name_at;
  for (;;) {
    bool any_running = false;
    for (auto& w : workers) {
      if (!w.running) continue;
      int status = 0;
      const pid_t done = ::waitpid(w.pid, &status, WNOHANG);
      if (done == 0) {
        any_running = true;
        continue;
      }
      w.running = false;
      w.status = status;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ok) continue;
      // After a stop was passed on: 130 is a worker that stopped at once with nothing to save (still in the
      // rendezvous); SIGTERM's own death, one that had not set up its handlers yet.
      if (stop_sent && ((WIFEXITED(status) && WEXITSTATUS(status) == 130) || (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM))) {
        stopped_waiting = true;
        continue;
      }
      // A crash anywhere is said, not only the first failure's (the launcher's own signals are no news).
      if (WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM && WTERMSIG(status) != SIGKILL)
        say("rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) + ") " + describe_status(status));
      if (!failed || (WIFSIGNALED(status) && !WIFSIGNALED(failed->status))) failed = &w;
      if (!name_at) name_at = Clock::now() + std::chrono::milliseconds(500);
    }
    if (failed && result.exit_code == 0 && (!any_running || Clock::now() >= *name_at)) {
      result.exit_code = 1;
      result.message = "rank " + std::to_string(failed->rank) + " (pid " + std::to_string(failed->pid) + ") " +
                       describe_status(failed->status);
      if (any_running) say(result.message + "; stopping the other workers");
      signal_running(SIGTERM);
      kill_at = Clock::now() + std::chrono::seconds(o.grace_s);
    }
    if (!any_running) break;
    if (stop && !stop_sent) {
      stop_sent = true;
      signal_running(SIGTERM);  // each stops after its current step; the ranks agree on which
    }
    if (kill_at && Clock::now() >= *kill_at) {
      std::string stragglers;
      for (const auto& w : workers)
        if (w.running) stragglers += (stragglers.empty() ? "" : ", ") + std::string("rank ") + std::to_string(w.rank);
      say("killing " + stragglers + ", which did not stop within " + std::to_string(o.grace_s) + " s");
      signal_running(SIGKILL);
      kill_at.reset();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (result.exit_code == 0 && stopped_waiting) {
    result.exit_code = 130;
    result.message = "stopped before every rank had joined (nothing was trained or saved)";
  }
  return result;
}

}  // namespace tb::distributed
