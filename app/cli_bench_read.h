// `tunebench-cli bench read`: its options and output; the work is the engine's (bench/read_bench.h).
#pragma once

#include <CLI/CLI.hpp>

#include "bench/read_bench.h"

CLI::App* add_bench_read_command(CLI::App& bench, tb::bench::ReadBenchOptions& options);
int cmd_bench_read(const tb::bench::ReadBenchOptions& options);
