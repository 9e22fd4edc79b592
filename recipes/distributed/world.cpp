#include "distributed/world.h"

#include <cstdlib>
#include <stdexcept>

namespace tb::distributed {
namespace {

std::optional<long> read_int(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > (1L << 30))
    throw std::runtime_error(std::string(name) + "='" + text + "' is not a non-negative integer");
  return value;
}

}  // namespace

std::optional<World> world_from_environment() {
  const auto size = read_int("WORLD_SIZE");
  if (!size) return std::nullopt;
  World w;
  w.size = static_cast<int>(*size);
  if (w.size < 1) throw std::runtime_error("WORLD_SIZE must be at least 1");
  w.rank = static_cast<int>(read_int("RANK").value_or(0));
  if (w.rank >= w.size)
    throw std::runtime_error("RANK=" + std::to_string(w.rank) + " is not below WORLD_SIZE=" + std::to_string(w.size));
  w.local_rank = static_cast<int>(read_int("LOCAL_RANK").value_or(w.rank));
  w.local_size = static_cast<int>(read_int("LOCAL_WORLD_SIZE").value_or(w.size));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) w.master_addr = addr;
  if (const auto port = read_int("MASTER_PORT")) {
    if (*port < 1 || *port > 65535) throw std::runtime_error("MASTER_PORT=" + std::to_string(*port) + " is not a port");
    w.master_port = static_cast<int>(*port);
  }
  if (const auto timeout = read_int("TUNEBENCH_DIST_TIMEOUT")) w.timeout_s = static_cast<int>(std::max(1L, *timeout));
  return w;
}

}  // namespace tb::distributed
