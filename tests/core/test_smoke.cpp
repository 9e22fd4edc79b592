#include <QtTest>

#include "test_main.h"
#include <torch/torch.h>
#include "recipe.h"

class TestSmoke : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void statusNames() { QCOMPARE(QString(tb::training::to_string(tb::training::RunStatus::Stopped)), QString("stopped")); }
  void matmulMatchesHand() {
    auto a = torch::tensor({{1.f, 2.f}, {3.f, 4.f}});
    QCOMPARE(a.mm(a)[1][0].item<float>(), 15.f);
  }
};
TB_TEST(TestSmoke)
#include "test_smoke.moc"
