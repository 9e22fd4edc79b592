// Input files are regular files. Opening a FIFO for reading waits for a writer (a run or eval hung
// forever on one), a directory reads as nothing, a device may never end: each is refused up front.
#pragma once

#include <optional>
#include <string>

namespace tb::config {

// What is wrong when `path` exists and is not a regular file (symbolic links followed): "is a FIFO
// (named pipe), not a file: ...", a folder, a device, a socket. nullopt for a regular file and for a
// missing path (the caller's own open reports that as before).
std::optional<std::string> not_a_regular_file(const std::string& path);

}  // namespace tb::text
