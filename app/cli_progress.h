// Progress of long phases on stderr, as a terminal or a log wants it: one line rewritten on a terminal,
// else a line a tenth. The words are the engine's (data/row_stream.h read_progress_text).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "data/row_stream.h"

// While it lives, the rows a dataset's first pass reads are reported on stderr ("data preview: reading
// data/train.parquet: 1,200,000 rows (45%), 310,000 rows/s, about 12 s left").
class ReadProgressPrinter {
 public:
  explicit ReadProgressPrinter(std::string command);
  ~ReadProgressPrinter();

 private:
  void print(const tb::data::ReadProgress& p);

  std::string command_;
  bool tty_;
  bool drawn_ = false;  // a rewritten line is on the terminal
  int64_t last_tenth_ = -1;
  tb::data::ReadProgressScope scope_;
};
