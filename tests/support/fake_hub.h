// The loopback Hub of the download tests (tests/hub/fake_hub.py), started for a test class: it serves the
// repos of a REPOS_JSON file (see the script) on two ports, the hub and its "CDN", until destroyed; its
// fault controls and request log are reached over HTTP with curl.
#pragma once

#include <QFile>
#include <QProcess>
#include <QString>
#include <QTest>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace tbtest {

class FakeHub {
 public:
  // Writes `repos` to folder/repos.json and starts the server; throws when it does not come up. With a
  // certificate and its key, both ports speak HTTPS.
  FakeHub(const nlohmann::json& repos, const QString& folder, const QString& tls_cert = {}, const QString& tls_key = {})
      : scheme_(tls_cert.isEmpty() ? "http" : "https"), cert_(tls_cert) {
    write_file((folder + "/repos.json").toStdString(), repos.dump());
    const QString ports = folder + "/ports.json";
    QStringList args{QString(TB_SOURCE_DIR) + "/tests/hub/fake_hub.py", "--repos", folder + "/repos.json", "--port-file", ports};
    if (!tls_cert.isEmpty()) args << "--tls" << tls_cert << tls_key;
    process_.start(reference_python(), args);
    if (!process_.waitForStarted()) throw std::runtime_error("the loopback Hub did not start");
    for (int i = 0; i < 300 && !QFile::exists(ports); ++i) QTest::qWait(100);
    if (!QFile::exists(ports)) throw std::runtime_error("the loopback Hub wrote no ports: " + process_.readAllStandardError().toStdString());
    const auto p = nlohmann::json::parse(read_file(ports.toStdString()));
    hub_ = p["hub"].get<int>();
    cdn_ = p["cdn"].get<int>();
  }
  ~FakeHub() {
    process_.terminate();
    process_.waitForFinished(10000);
  }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  QString endpoint() const { return QString("%1://127.0.0.1:%2").arg(scheme_).arg(hub_); }
  int cdnPort() const { return cdn_; }
  // Adds faults ({"drop_after": ...}, {"rate_limit": ...}, {"server_error": ...}, {"corrupt": [...]}).
  void control(const nlohmann::json& faults) { call("POST", "_control", faults); }
  // Every request so far: {port, method, path, range, authorization}.
  nlohmann::json log() { return call("GET", "_log"); }
  void clearLog() { call("POST", "_log/clear"); }

 private:
  nlohmann::json call(const QString& method, const QString& what, const nlohmann::json& body = nullptr) {
    QStringList args{"-s", "-X", method, endpoint() + "/" + what};
    if (!cert_.isEmpty()) args << "--cacert" << cert_;
    if (!body.is_null()) args << "-d" << QString::fromStdString(body.dump());
    const auto r = run_process("curl", args);
    return r.out.isEmpty() ? nlohmann::json() : nlohmann::json::parse(r.out.toStdString());
  }

  QProcess process_;
  QString scheme_, cert_;
  int hub_ = 0, cdn_ = 0;
};

}  // namespace tbtest
