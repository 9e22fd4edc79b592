// The window and the CLI hold no engine logic of their own (the window issue, item 5): reading override
// text, memory arithmetic, reading metrics.jsonl, the run harness (lock, loggers, run) and checkpoint file
// lists each have one implementation in the engine that both call, so one cannot drift from the other.
// This scans ui/, widgets/ and app/ for the tell-tale pieces of each, and fails naming file:line.
#include <QtTest>

#include "test_main.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Forbidden {
  const char* text;  // found verbatim in a line of code
  const char* why;   // what the front end should call instead
};

const Forbidden kForbidden[] = {
    // Overrides: config/overrides.h parse_override / override_value.
    {"indexOf('=')", "override text is read by config::parse_override"},
    {"startsWith('~')", "override text is read by config::parse_override"},
    {"== \"None\"", "override values are read by config::override_value"},
    // Memory: training/memory_estimate.h and training/memory_budget.h.
    {"AdamW8bit", "optimizer states are counted by training::estimate_memory"},
    {"min_8bit_size", "optimizer states are counted by training::estimate_memory"},
    {"/ 256", "8-bit AdamW's blocks are counted by training::estimate_memory"},
    {"layerLinears", "projections come from models::layer_projection_sites through training::estimate_memory"},
    // metrics.jsonl: training/run_log.h.
    {"json::parse", "metrics.jsonl (and any JSON) is read by the engine: training::read_run_log, parse_log_line"},
    {"step_metrics_from_json", "metrics.jsonl is read by training::read_run_log / parse_log_line"},
    // The run harness: run_harness.h.
    {"OutputDirLock", "runs are started through tb::run_with_harness"},
    {"make_metric_logger", "runs are started through tb::run_with_harness"},
    // Checkpoint files: checkpoint/checkpoint_files.h.
    {"\"model*.safetensors\"", "a checkpoint's files come from checkpoint::resolve_checkpoint_files"},
    {"index.json", "a checkpoint's files come from checkpoint::resolve_checkpoint_files"},
};

std::string code_of(const std::string& line) {
  const auto comment = line.find("//");
  return comment == std::string::npos ? line : line.substr(0, comment);
}

}  // namespace

class TestFrontEndsThin : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void frontEndsHoldNoEngineLogic() {
    std::vector<std::string> found;
    for (const char* folder : {"ui", "widgets", "app"}) {
      const fs::path root = fs::path(TB_SOURCE_DIR) / folder;
      for (const auto& entry : fs::recursive_directory_iterator(root)) {
        const auto ext = entry.path().extension();
        if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
        std::ifstream in(entry.path());
        int n = 0;
        for (std::string line; std::getline(in, line);) {
          ++n;
          const std::string code = code_of(line);
          for (const Forbidden& f : kForbidden)
            if (code.find(f.text) != std::string::npos)
              found.push_back(fs::relative(entry.path(), TB_SOURCE_DIR).string() + ":" + std::to_string(n) + ": '" +
                              f.text + "': " + f.why);
        }
      }
    }
    std::string all;
    for (const auto& f : found) all += f + "\n";
    QVERIFY2(found.empty(), all.c_str());
  }

  // The CLI is argument parsing and printing: its commands call the engine (ARCHITECTURE.md "app/"). A
  // command may have a file of its own (app/cli_download.cpp); none grows past 700 lines.
  void theCliStaysSmall() {
    int files = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(TB_SOURCE_DIR) / "app")) {
      if (entry.path().extension() != ".cpp") continue;
      ++files;
      std::ifstream in(entry.path());
      int lines = 0;
      for (std::string line; std::getline(in, line);) ++lines;
      QVERIFY2(lines <= 700, qPrintable(QString("app/%1 has %2 lines").arg(QString::fromStdString(entry.path().filename().string())).arg(lines)));
    }
    QVERIFY(files >= 2);
  }
};

TB_TEST(TestFrontEndsThin)
#include "test_front_ends_thin.moc"
