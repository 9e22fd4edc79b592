// main() of the test executables: argv[1] names the test file whose class runs (see test_main.h); the
// application object is what QTEST_MAIN (widgets) or QTEST_GUILESS_MAIN would have made.
#include "test_main.h"

#include <cstdio>
#include <map>
#include <vector>

#if TB_TEST_WIDGETS
#include <QApplication>
#else
#include <QCoreApplication>
#endif
#include <QTemporaryDir>
#include <QtTest>

namespace tbtest {
namespace {

std::map<std::string, TestFactory>& tests() {
  static std::map<std::string, TestFactory> all;
  return all;
}

}  // namespace

bool register_test(const char* source_file, TestFactory run) {
  std::string name = source_file;
  name = name.substr(name.find_last_of('/') + 1);
  name = name.substr(0, name.find_last_of('.'));
  return tests().emplace(name, std::move(run)).second;
}

}  // namespace tbtest

int main(int argc, char** argv) {
  const auto& tests = tbtest::tests();
  const auto found = argc > 1 ? tests.find(argv[1]) : tests.end();
  if (found == tests.end()) {
    std::fprintf(stderr, "usage: %s TEST [Qt Test arguments]; TEST is one of:\n", argv[0]);
    for (const auto& [name, run] : tests) std::fprintf(stderr, "  %s\n", name.c_str());
    return 2;
  }
  // Nothing a test runs writes to the user's caches, data or settings: the compile plan cache, the window's
  // runs folder and its settings live in folders of this process, also for the programs it starts. A test
  // may point them elsewhere.
  QTemporaryDir cache, data, config;
  if (!cache.isValid() || !data.isValid() || !config.isValid() || !qputenv("XDG_CACHE_HOME", cache.path().toUtf8()) ||
      !qputenv("XDG_DATA_HOME", data.path().toUtf8()) || !qputenv("XDG_CONFIG_HOME", config.path().toUtf8())) {
    std::fprintf(stderr, "cannot make cache, data and settings folders for the test\n");
    return 2;
  }
  // The test sees its own name as the program and the rest as its arguments.
  std::vector<char*> args{argv[0]};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  int count = static_cast<int>(args.size());
#if TB_TEST_WIDGETS
  QApplication app(count, args.data());
  app.setAttribute(Qt::AA_Use96Dpi, true);
#else
  QCoreApplication app(count, args.data());
#endif
  return found->second(count, args.data());
}
