// torchtune's LinearCrossEntropyLoss: the output projection and cross entropy in chunks whose logits are
// recomputed in backward. Its loss and every gradient equal the plain cross entropy over the full logits
// (torch's F::cross_entropy, the formula's reference), with tied and untied heads, a LoRA-adapted head and
// Gemma 2's soft-capped logits, and with ignored labels.
#include <QtTest>

#include "test_main.h"

#include <torch/torch.h>

#include "models/loss.h"
#include "models/model_args.h"
#include "models/transformer.h"
#include "peft/lora_builders.h"

using tb::models::LossSpec;
using tb::models::TransformerDecoder;

namespace {

// Loss and the gradient of every parameter that has one.
std::pair<double, std::map<std::string, torch::Tensor>> loss_and_grads(TransformerDecoder& model, const torch::Tensor& tokens,
                                                                      const torch::Tensor& labels, const LossSpec& spec) {
  for (auto& p : model->parameters())
    if (p.grad().defined()) p.mutable_grad().zero_();
  auto loss = tb::models::token_loss_sum(*model, model->forward_hidden(tokens), labels, spec);
  loss.backward();
  std::map<std::string, torch::Tensor> grads;
  for (const auto& item : model->named_parameters())
    if (item.value().grad().defined()) grads[item.key()] = item.value().grad().clone();
  return {loss.item<double>(), grads};
}

void compare(TransformerDecoder& model, int64_t vocab) {
  torch::manual_seed(1);
  const auto tokens = torch::randint(vocab, {2, 24});
  auto labels = torch::randint(vocab, {2, 24});
  labels.index_put_({0, torch::indexing::Slice(0, 10)}, -100);  // a masked prompt
  const auto [full, full_grads] = loss_and_grads(model, tokens, labels, LossSpec{-100, 1, false});
  LossSpec linear{-100, 5, true};  // 24 positions in chunks of 5: uneven chunks too
  const auto [chunked, chunked_grads] = loss_and_grads(model, tokens, labels, linear);
  QVERIFY(std::abs(full - chunked) <= 1e-5 * std::abs(full));
  QCOMPARE(chunked_grads.size(), full_grads.size());
  QVERIFY(!full_grads.empty());
  for (const auto& [name, g] : full_grads) {
    const double err = (chunked_grads.at(name) - g).abs().max().item<double>();
    const double scale = g.abs().max().item<double>() + 1e-12;
    QVERIFY2(err <= 1e-5 * scale, (name + ": " + std::to_string(err / scale)).c_str());
  }
}

tb::models::ModelArgs tiny(bool tied) {
  auto a = *tb::models::preset_args("llama_tiny_test");
  a.tie_word_embeddings = tied;
  return a;
}

}  // namespace

class TestLinearCeLoss : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void equalsFullCrossEntropy_data() {
    QTest::addColumn<bool>("tied");
    QTest::newRow("untied") << false;
    QTest::newRow("tied") << true;
  }
  void equalsFullCrossEntropy() {
    QFETCH(bool, tied);
    torch::manual_seed(0);
    auto model = tb::models::build_decoder(tiny(tied));
    compare(model, 512);
  }

  // Only the LoRA parameters train; their gradients come from the recomputed chunks.
  void loraHead() {
    torch::manual_seed(0);
    tb::peft::LoraSettings s;
    s.lora_attn_modules = {"q_proj", "v_proj"};
    s.apply_lora_to_output = true;
    auto model = tb::peft::build_lora_decoder(tiny(false), s);
    for (auto& item : model->named_parameters())  // nonzero B, so that every LoRA gradient is nonzero
      if (item.key().find("lora_b") != std::string::npos) item.value().data().normal_(0, 0.05);
    compare(model, 512);
  }

  void softCappedLogits() {
    torch::manual_seed(0);
    auto a = tiny(true);
    a.final_softcap = 2.0;  // small enough that the cap changes the loss
    auto model = tb::models::build_decoder(a);
    compare(model, 512);
  }

  // Without grad (eval), the same sum as the plain path.
  void noGradEval() {
    torch::manual_seed(0);
    auto model = tb::models::build_decoder(tiny(false));
    torch::NoGradGuard no_grad;
    const auto tokens = torch::randint(512, {1, 16});
    const auto labels = torch::randint(512, {1, 16});
    const auto hidden = model->forward_hidden(tokens);
    const double a = tb::models::token_loss_sum(*model, hidden, labels, LossSpec{-100, 1, false}).item<double>();
    const double b = tb::models::token_loss_sum(*model, hidden, labels, LossSpec{-100, 4, true}).item<double>();
    QVERIFY(std::abs(a - b) <= 1e-5 * std::abs(a));
  }
};

TB_TEST(TestLinearCeLoss)
#include "test_linear_ce_loss.moc"
