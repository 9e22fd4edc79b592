#include "cli_bench_read.h"

#include <iostream>

#include "text/json_text.h"

CLI::App* add_bench_read_command(CLI::App& bench, tb::bench::ReadBenchOptions& o) {
  CLI::App* read = bench.add_subcommand("read", "dataset file reading speed: median rows/s and MB/s");
  read->add_option("--source", o.source, "json, csv, text or parquet")
      ->check(CLI::IsMember({"json", "csv", "text", "parquet"}))
      ->capture_default_str();
  read->add_option("--data-files", o.files, "files or globs")->required();
  read->add_option("--columns", o.columns, "parquet: only these top-level columns");
  read->add_option("--runs", o.runs, "timed runs after a warm-up")->capture_default_str();
  return read;
}

int cmd_bench_read(const tb::bench::ReadBenchOptions& options) {
  try {
    std::cout << tb::text::json_text(tb::bench::bench_read(options)) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "tunebench-cli: bench read: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
