#include "cli_progress.h"

#include <unistd.h>

#include <iostream>

ReadProgressPrinter::ReadProgressPrinter(std::string command)
    : command_(std::move(command)),
      tty_(isatty(STDERR_FILENO) != 0),
      scope_([this](const tb::data::ReadProgress& p) { print(p); }) {}

ReadProgressPrinter::~ReadProgressPrinter() {
  if (drawn_) std::cerr << "\n";
}

void ReadProgressPrinter::print(const tb::data::ReadProgress& p) {
  const std::string line = command_ + ": reading " + p.files + ": " + tb::data::read_progress_text(p);
  if (tty_) {
    std::cerr << "\r\033[K" << line << (p.done ? "\n" : "") << std::flush;
    drawn_ = !p.done;
    return;
  }
  const int64_t tenth = p.bytes_total > 0 ? int64_t(p.bytes_read * 10 / p.bytes_total) : 0;
  if (tenth == last_tenth_ && !p.done) return;
  last_tenth_ = tenth;
  std::cerr << line << "\n";
}
