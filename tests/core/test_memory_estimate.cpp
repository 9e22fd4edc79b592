// What a setup will need before it is built (training/memory_estimate.h), against the formulas: AdamW's two
// states per trainable parameter, bitsandbytes' 8-bit blocks, NF4's bytes per parameter, LoRA's A and B,
// and what a setup's YAML says of them.
#include <QtTest>

#include "test_main.h"

#include <yaml-cpp/yaml.h>

#include "tiny_args.h"
#include "training/memory_estimate.h"

using namespace tb::training;

class TestMemoryEstimate : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void estimatesFullFineTune() {
    QCOMPARE(tbtest::tiny_args().parameter_count(), tbtest::kTinyArgsParams);
    const auto e = estimate_memory(tbtest::tiny_args(), Adapters::None, "fp32", {}, 1, 16);
    QCOMPARE(e.total_params, tbtest::kTinyArgsParams);
    QCOMPARE(e.trainable_params, tbtest::kTinyArgsParams);
    QCOMPARE(e.weight_bytes, 4.0 * tbtest::kTinyArgsParams);
    QCOMPARE(e.gradient_bytes, 4.0 * tbtest::kTinyArgsParams);
    QCOMPARE(e.optimizer_bytes, 8.0 * tbtest::kTinyArgsParams);  // AdamW: exp_avg and exp_avg_sq
    const auto bf16 = estimate_memory(tbtest::tiny_args(), Adapters::None, "bf16", {}, 1, 16);
    QCOMPARE(bf16.weight_bytes + bf16.gradient_bytes + bf16.optimizer_bytes, 8.0 * tbtest::kTinyArgsParams);
    // optimizer_in_bwd: one gradient at a time, the largest (the 512 x 64 embedding).
    const YAML::Node doc = YAML::Load("optimizer_in_bwd: True\n");
    QVERIFY(optimizer_states_of(doc).in_backward);
    const auto in_bwd = estimate_memory(tbtest::tiny_args(), Adapters::None, "fp32", {}, 1, 16, optimizer_states_of(doc));
    QCOMPARE(in_bwd.gradient_bytes, 4.0 * 512 * 64);
    QVERIFY(in_bwd.gradients_one_at_a_time);
  }

  // 8-bit AdamW (training/adamw8bit.h): a byte per moment and element and two fp32 absmax per block of
  // 256 for tensors of at least min_8bit_size elements, fp32 moments below, whatever the weights' dtype.
  void estimatesEightBitAdamW() {
    // >= 4096: embedding and output 32768 each, per layer q and o 4096, w1 w2 w3 8192 -> 131072 elements
    // in 512 blocks; below: k and v 2048 per layer and five norms of 64 -> 8512 elements.
    const double expected = 2.0 * 131072 + 8.0 * 512 + 8.0 * 8512;
    for (const char* dtype : {"fp32", "bf16"}) {
      const auto e = estimate_memory(tbtest::tiny_args(), Adapters::None, dtype, {}, 1, 16, {true, 4096});
      QCOMPARE(e.optimizer_bytes, expected);
      QVERIFY(e.eight_bit_optimizer);
    }
    QCOMPARE(estimate_memory(tbtest::tiny_args(), Adapters::None, "fp32", {}, 1, 16, {true, 0}).optimizer_bytes,
             2.0 * tbtest::kTinyArgsParams + 8.0 * (2 * 128 + 2 * (16 + 8 + 8 + 16 + 3 * 32 + 1 + 1) + 1));
    YAML::Node doc = YAML::Load("optimizer:\n  _component_: bitsandbytes.optim.PagedAdamW8bit\n  lr: 2e-5\n");
    QVERIFY(optimizer_states_of(doc).eight_bit);
    QCOMPARE(optimizer_states_of(doc).min_8bit_size, int64_t(4096));
    doc["optimizer"]["_component_"] = "bitsandbytes.optim.PagedAdamW";
    QVERIFY(!optimizer_states_of(doc).eight_bit);  // 32-bit unless optim_bits: 8
    doc["optimizer"]["optim_bits"] = "8";
    doc["optimizer"]["min_8bit_size"] = "16";
    QVERIFY(optimizer_states_of(doc).eight_bit);
    QCOMPARE(optimizer_states_of(doc).min_8bit_size, int64_t(16));
  }

  void estimatesLoraAndQlora() {
    LoraTargets t;
    t.attn_modules = {"q_proj", "v_proj"};
    t.mlp = true;
    t.rank = 8;
    // Adapters per layer: q 8*(64+64) + v 8*(64+32) + w1 8*(64+128) + w2 8*(128+64) + w3 8*(64+128) = 6400.
    const int64_t adapters = 2 * 6400;
    const auto lora = estimate_memory(tbtest::tiny_args(), Adapters::Lora, "fp32", t, 1, 16);
    QCOMPARE(lora.adapter_params, adapters);
    QCOMPARE(lora.trainable_params, adapters);
    QCOMPARE(lora.weight_bytes, 4.0 * (tbtest::kTinyArgsParams + adapters));
    QCOMPARE(lora.gradient_bytes, 4.0 * adapters);
    QCOMPARE(lora.optimizer_bytes, 8.0 * adapters);
    // QLoRA: the targeted base linears (q 4096 + v 2048 + mlp 24576 per layer) in NF4.
    const int64_t quantized = 2 * (4096 + 2048 + 24576);
    const auto q = estimate_memory(tbtest::tiny_args(), Adapters::Qlora, "bf16", t, 1, 16);
    QCOMPARE(q.quantized_params, quantized);
    const double nf4 = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);
    QCOMPARE(q.weight_bytes, quantized * nf4 + 2.0 * (tbtest::kTinyArgsParams - quantized) + 2.0 * adapters);
    QCOMPARE(q.gradient_bytes, 2.0 * adapters);
    QVERIFY(q.weight_bytes < lora.weight_bytes / 2);
  }

  // What a setup's YAML says of its adapters: the LoRA builders' own defaults where a key is missing.
  void readsTheLoraTargetsOfASetup() {
    const auto none = lora_targets_of(YAML::Load("model:\n  _component_: torchtune.models.llama2.lora_llama2_7b\n"));
    QVERIFY(!none.mlp && !none.output);
    const auto t = lora_targets_of(YAML::Load(
        "model:\n  lora_attn_modules: [q_proj, k_proj]\n  apply_lora_to_mlp: True\n  lora_rank: 16\n"));
    QCOMPARE(t.attn_modules, (std::vector<std::string>{"q_proj", "k_proj"}));
    QVERIFY(t.mlp);
    QCOMPARE(t.rank, int64_t(16));
  }
};

TB_TEST(TestMemoryEstimate)
#include "test_memory_estimate.moc"
