// One executable holds every test file of a library (tunebench_core_tests, tunebench_ui_tests); each
// file keeps its one Qt Test class and registers it with TB_TEST(Class) where QTEST_MAIN stood.
// `<executable> test_x [Qt Test arguments]` runs the class of test_x.cpp, and CTest lists each file as
// a test of its own, run in a process of its own (tests/CMakeLists.txt).
#pragma once

#include <functional>
#include <string>

namespace tbtest {

using TestFactory = std::function<int(int argc, char** argv)>;
// Registers the test class of `source_file` (its __FILE__) under the file's name without extension.
bool register_test(const char* source_file, TestFactory run);

}  // namespace tbtest

#define TB_TEST(Class)                                                                                       \
  static const bool tb_test_registered_##Class = tbtest::register_test(__FILE__, [](int argc, char** argv) { \
    Class test;                                                                                              \
    return QTest::qExec(&test, argc, argv);                                                                  \
  });
