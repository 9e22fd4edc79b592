// The Node.js that runs the tests' npm references (tests/reference/*): $TB_NODE, else `node` on PATH.
#pragma once

#include <QFile>
#include <QStandardPaths>
#include <QString>

namespace tbtest {

// The node executable and the reference folder `dir` with `package` installed under its node_modules;
// empty with `error` set (saying what installs it) when either is missing.
inline QString node_for_reference(const QString& dir, const QString& package, QString* error) {
  QString node = qEnvironmentVariable("TB_NODE");
  if (node.isEmpty()) node = QStandardPaths::findExecutable("node");
  if (node.isEmpty()) {
    *error = "node is not on PATH: the " + package + " reference needs it (scripts/setup.sh test installs it)";
    return {};
  }
  if (!QFile::exists(dir + "/node_modules/" + package + "/package.json")) {
    *error = "the " + package + " npm package is missing in " + dir + ": run scripts/setup.sh test (it installs it)";
    return {};
  }
  return node;
}

}  // namespace tbtest
