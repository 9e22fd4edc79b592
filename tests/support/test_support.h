// Helpers the tunecore tests share: the python that runs the independent references, and the CLI.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

#include <time.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tbtest {

// Debian's python3 with python3-torch, found at configure time (tests/CMakeLists.txt); empty if none.
inline QString reference_python() { return QString(TB_PYTHON); }

struct ProcessResult {
  int code = -1;
  bool crashed = false;
  QString out, err;
};

inline ProcessResult run_process(const QString& program, const QStringList& args, int timeout_ms = 300000) {
  QProcess p;
  p.start(program, args);
  ProcessResult r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = program + " did not finish in " + QString::number(timeout_ms / 1000) + " s";
    return r;
  }
  r.crashed = p.exitStatus() != QProcess::NormalExit;
  r.code = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// tests/reference/<script> run by reference_python().
inline ProcessResult run_reference(const QString& script, const QStringList& args) {
  return run_process(reference_python(), QStringList{QString(TB_SOURCE_DIR) + "/tests/reference/" + script} + args);
}

// The last non-empty line of a command's output (where the CLI puts its JSON result).
inline QString last_line(const QString& text) {
  const QStringList lines = text.split('\n', Qt::SkipEmptyParts);
  return lines.isEmpty() ? QString() : lines.last();
}

// A file's bytes ("" when it cannot be read), and writing bytes to a file (its folders made first).
// This thread's CPU time: what a complexity check compares (other processes on a busy machine do not
// stretch it, as they stretch wall time).
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline void write_file(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec);
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace tbtest
