// Input files are regular files. Opening a FIFO for reading waits for a writer (a run or eval hung
// forever on one), a directory reads as nothing, a device may never end: each is refused up front.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>

namespace tb::config {

// What is wrong when `path` exists and is not a regular file (symbolic links followed): "is a FIFO
// (named pipe), not a file: ...", a folder, a device, a socket. nullopt for a regular file and for a
// missing path (the caller's own open reports that as before).
std::optional<std::string> not_a_regular_file(const std::string& path);

// The whole of an input file, refused up front when it is not a regular file and when it holds more than
// `max_bytes` (checked as it is read, so a file that grows, or a /proc file that says size 0, is bounded
// too); a read error (/proc/self/mem) is an error, never an empty text. std::runtime_error "<path>: ...".
std::string read_input_file(const std::string& path, uint64_t max_bytes);

// The next line of `in` without its '\n' (and '\r'), false at the end of the input. At most `max_bytes`
// of a line are kept: a longer line is read through to its end without being held, `line` is left empty
// and `too_long` set.
bool read_bounded_line(std::istream& in, std::string& line, size_t max_bytes, bool& too_long);

// "1.5 GiB", "64 MiB", "512 bytes": sizes in messages.
std::string byte_size_text(uint64_t bytes);

}  // namespace tb::config
