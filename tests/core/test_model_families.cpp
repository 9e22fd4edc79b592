// Model families (Qwen2/2.5, Qwen3, Gemma, Gemma 2, Gemma 3, Phi-3/4, tied Llama shapes) against the
// independent reference (tests/reference/hf_families_reference.py: its own plain-PyTorch forward of each
// published model definition, and its own safetensors writer). Tiny random checkpoints whose features each
// move the loss by more than 4.8e-3 (the reference's `ablate` checks that), so a feature computed wrongly
// or not at all fails here; missingFeaturesMissTheReference checks that it would.
#include <QtTest>

#include "model_test_support.h"
#include "recipe_test_support.h"
#include "test_main.h"
#include "test_support.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/hf_convert.h"
#include "checkpoint/safetensors.h"
#include "components/builtin.h"
#include "config/registry.h"
#include "compile/compiled_decoder.h"
#include "models/compiled_names.h"
#include "models/loss.h"
#include "models/transformer.h"
#include "peft/adapter.h"
#include "peft/lora_builders.h"
#include "peft/lora_linear.h"
#include "peft/qlora.h"

using namespace tb;
using namespace tb::checkpoint;
using tbtest::next_token_loss;
using tbtest::read_json;
using tbtest::relative_error;
using tbtest::tokens_of;

namespace {

QString run_reference(const QStringList& args) {
  const auto r = tbtest::run_reference("hf_families_reference.py", args);
  if (r.code != 0) return "FAILED: " + r.err;
  return tbtest::last_line(r.out).trimmed();
}

double reference_loss(const QStringList& args) {
  const QString out = run_reference(args);
  if (out.startsWith("FAILED")) qFatal("%s", qPrintable(out));
  return nlohmann::json::parse(out.toStdString())["loss"].get<double>();
}

// The checkpointer a config names for this folder (checkpointer.model_type from its config.json).
FullModelHFCheckpointer checkpointer_for(const QString& folder, const QString& output_dir) {
  HFCheckpointerOptions opts;
  opts.checkpoint_dir = folder.toStdString();
  opts.output_dir = output_dir.toStdString();
  opts.model_type = hf_model_type(read_hf_config(folder.toStdString()));
  return FullModelHFCheckpointer(opts);
}

// labels[t] = tokens[t + 1], the last position ignored: what token_loss_sum reads.
torch::Tensor next_token_labels(const torch::Tensor& tokens) {
  auto labels = torch::full_like(tokens, -100);
  labels.slice(1, 0, tokens.size(1) - 1).copy_(tokens.slice(1, 1));
  return labels;
}

// Our gradients under Hugging Face's names and rotary layout.
StateDict hf_gradients(const torch::nn::Module& model, const models::ModelArgs& args) {
  StateDict grads;
  for (const auto& item : model.named_parameters())
    if (models::is_base_parameter(item.key()) && item.value().grad().defined())
      grads[models::strip_compiled_prefix(item.key())] = item.value().grad();
  return tune_to_hf(grads, args);
}

void expect_gradients(const StateDict& ours, const QString& reference_file, double tolerance) {
  const auto want = load_safetensors(reference_file.toStdString());
  QCOMPARE(ours.size(), want.size());
  for (const auto& [name, g] : want) {
    QVERIFY2(ours.count(name), name.c_str());
    const double err = relative_error(ours.at(name), g);
    QVERIFY2(err <= tolerance, qPrintable(QString("%1: relative error %2").arg(name.c_str()).arg(err)));
  }
}

const char* const kFp32Variants[] = {"qwen2_fp32",         "qwen2_tied_fp32", "qwen3_fp32",          "gemma_fp32",
                                     "gemma2_fp32",        "gemma3_fp32",     "gemma3_pattern_fp32", "phi3_fp32",
                                     "phi3_longrope_fp32", "llama_tied_fp32"};

}  // namespace

class TestModelFamilies : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString ref_;  // the reference's variant folders
  QString variant(const QString& name) const { return ref_ + "/" + name; }

  static void addFp32Rows() {
    QTest::addColumn<QString>("name");
    for (const char* v : kFp32Variants) QTest::newRow(v) << QString(v);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QVERIFY2(!tbtest::reference_python().isEmpty(), "python3 with python3-torch is needed (scripts/setup.sh test)");
    ref_ = tmp_.filePath("ref");
    const QString made = run_reference({"make", ref_});
    QVERIFY2(!made.startsWith("FAILED"), qPrintable(made));
  }

  // What each family's config.json turns into.
  void configsReadAsTheirFamily() {
    const auto qwen2 = read_hf_model_args(variant("qwen2_fp32").toStdString());
    QVERIFY(qwen2.family == models::Family::qwen2 && qwen2.attention_bias && !qwen2.qk_norm);
    QCOMPARE(qwen2.sliding_window, int64_t(0));  // use_sliding_window: false
    const auto qwen3 = read_hf_model_args(variant("qwen3_fp32").toStdString());
    QVERIFY(qwen3.qk_norm && !qwen3.attention_bias && !qwen3.norm_offset);
    QCOMPARE(qwen3.head_dim(), int64_t(24));
    const auto gemma = read_hf_model_args(variant("gemma_fp32").toStdString());
    QVERIFY(gemma.norm_offset && gemma.scale_embeddings && !gemma.sandwich_norms && gemma.tie_word_embeddings);
    QVERIFY(gemma.activation == models::Activation::gelu_tanh);
    const auto gemma2 = read_hf_model_args(variant("gemma2_fp32").toStdString());
    QVERIFY(gemma2.sandwich_norms && gemma2.attn_softcap == 3.0 && gemma2.final_softcap == 6.0);
    QCOMPARE(gemma2.attention_scale(), 0.25);  // query_pre_attn_scalar 16
    QVERIFY(gemma2.layer_slides(0) && !gemma2.layer_slides(1) && gemma2.layer_slides(2));
    // layer_types wins over a sliding_window_pattern that disagrees with it, as in Hugging Face.
    const auto gemma3 = read_hf_model_args(variant("gemma3_fp32").toStdString());
    QVERIFY(gemma3.qk_norm && gemma3.norm_offset && gemma3.rope_local_base == 10000.0);
    QVERIFY(gemma3.layer_slides(0) && !gemma3.layer_slides(1) && gemma3.layer_slides(2) && gemma3.layer_slides(3));
    QVERIFY(gemma3.rope_scaling && gemma3.rope_scaling->type == models::RopeType::linear);
    const auto pattern = read_hf_model_args(variant("gemma3_pattern_fp32").toStdString());
    QVERIFY(pattern.layer_slides(0) && pattern.layer_slides(1) && !pattern.layer_slides(2) && pattern.layer_slides(3));
    const auto phi3 = read_hf_model_args(variant("phi3_fp32").toStdString());
    QVERIFY(phi3.fused_qkv && phi3.fused_gate_up);
    QCOMPARE(phi3.rotary_dim(), int64_t(8));
    const auto longrope = read_hf_model_args(variant("phi3_longrope_fp32").toStdString());
    QVERIFY(longrope.rope_scaling && longrope.rope_scaling->type == models::RopeType::longrope);
    QCOMPARE(longrope.max_seq_len, int64_t(32));  // the short factors serve up to the original length
    QVERIFY(std::abs(longrope.rope_scaling->attention_factor - 1.1832) < 1e-4);
    QCOMPARE(QString::fromStdString(hf_model_type(read_hf_config(variant("gemma3_fp32").toStdString()))),
             QString("GEMMA3"));
    // A config made from the arguments reads back as the same architecture.
    for (const char* v : kFp32Variants) {
      const auto args = read_hf_model_args(variant(v).toStdString());
      const auto written =
          hf_config_from_model_args(args, hf_model_type(read_hf_config(variant(v).toStdString())), "float32");
      const auto back = model_args_from_hf_config(written, "generated");
      const auto diff = back.differences(args);
      QVERIFY2(diff.empty(), (std::string(v) + ": " + (diff.empty() ? "" : diff[0])).c_str());
    }
  }

  // torchtune's builder names (and ours for Gemma 3, Phi-4-mini, SmolLM2) build the published shapes: the
  // parameter counts their model cards give, and LoRA / QLoRA variants of each.
  void presetsHaveThePublishedParameterCounts_data() {
    QTest::addColumn<QString>("component");
    QTest::addColumn<qint64>("parameters");
    QTest::newRow("Qwen2.5 0.5B") << "torchtune.models.qwen2_5.qwen2_5_0_5b" << qint64(494032768);
    QTest::newRow("Qwen2.5 1.5B") << "torchtune.models.qwen2_5.qwen2_5_1_5b_instruct" << qint64(1543714304);
    QTest::newRow("Qwen2.5 3B") << "torchtune.models.qwen2_5.qwen2_5_3b" << qint64(3085938688);
    QTest::newRow("Qwen2 7B") << "torchtune.models.qwen2.qwen2_7b" << qint64(7615616512);
    QTest::newRow("Qwen3 0.6B") << "torchtune.models.qwen3.qwen3_0_6b_base" << qint64(596049920);
    QTest::newRow("Qwen3 1.7B") << "torchtune.models.qwen3.qwen3_1_7b_instruct" << qint64(1720574976);
    QTest::newRow("Qwen3 8B") << "torchtune.models.qwen3.qwen3_8b_base" << qint64(8190735360);
    QTest::newRow("Gemma 2B") << "torchtune.models.gemma.gemma_2b" << qint64(2506172416);
    QTest::newRow("Gemma 2 2B") << "torchtune.models.gemma2.gemma2_2b" << qint64(2614341888);
    QTest::newRow("Gemma 2 9B") << "torchtune.models.gemma2.gemma2_9b" << qint64(9241705984);
    QTest::newRow("Gemma 3 270M") << "tunebench.models.gemma3.gemma3_270m" << qint64(268098176);
    QTest::newRow("Gemma 3 1B") << "tunebench.models.gemma3.gemma3_1b" << qint64(999885952);
    QTest::newRow("Phi-3-mini") << "torchtune.models.phi3.phi3_mini" << qint64(3821079552);
    QTest::newRow("Phi-4") << "torchtune.models.phi4.phi4_14b" << qint64(14659507200);
    QTest::newRow("Phi-4-mini") << "tunebench.models.phi4.phi4_mini" << qint64(3836021760);
    QTest::newRow("SmolLM2 135M") << "tunebench.models.smollm2.smollm2_135m" << qint64(134515008);
    QTest::newRow("SmolLM2 1.7B") << "tunebench.models.smollm2.smollm2_1_7b" << qint64(1711376384);
    QTest::newRow("Llama 3.2 3B") << "torchtune.models.llama3_2.llama3_2_3b" << qint64(3212749824);
    QTest::newRow("Llama 3 8B") << "torchtune.models.llama3.llama3_8b" << qint64(8030261248);
    QTest::newRow("Qwen2.5 14B") << "torchtune.models.qwen2_5.qwen2_5_14b_instruct" << qint64(14770033664);
    QTest::newRow("Qwen3 14B") << "torchtune.models.qwen3.qwen3_14b_instruct" << qint64(14768307200);
    QTest::newRow("Gemma 2 27B") << "torchtune.models.gemma2.gemma2_27b" << qint64(27227128320);
  }
  void presetsHaveThePublishedParameterCounts() {
    QFETCH(QString, component);
    QFETCH(qint64, parameters);
    const auto& registry = components::builtin();
    const std::string name = component.toStdString();
    const auto* spec = registry.find(name);
    QVERIFY2(spec, name.c_str());
    const std::string leaf = name.substr(name.rfind('.') + 1);
    const auto args = models::preset_args(leaf);
    QVERIFY(args.has_value());
    QCOMPARE(qint64(args->parameter_count()), parameters);
    for (const char* variant : {"lora_", "qlora_"}) {
      const std::string lora = name.substr(0, name.rfind('.') + 1) + variant + leaf;
      QVERIFY2(registry.find(lora), lora.c_str());
    }
  }

  void refusesWhatItDoesNotCompute() {
    auto base = read_hf_config(variant("qwen2_fp32").toStdString());
    auto expect = [&](nlohmann::json j, const char* needle) {
      try {
        model_args_from_hf_config(j, "x/config.json");
        QFAIL(qPrintable(QString("accepted: ") + needle));
      } catch (const std::runtime_error& e) {
        QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
      }
    };
    auto moe = base;
    moe["num_experts"] = 8;
    expect(moe, "num_experts");
    auto window = base;
    window["use_sliding_window"] = true;
    expect(window, "use_sliding_window");
    auto act = base;
    act["hidden_act"] = "gelu";
    expect(act, "hidden_act");
    auto vision = read_hf_config(variant("gemma3_fp32").toStdString());
    vision["model_type"] = "gemma3";
    expect(vision, "vision-language");
    auto yarn = base;
    yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    expect(yarn, "yarn");
  }

  // The loss and every gradient of the mean next-token loss, eager and compiled, against the reference.
  void lossAndGradientsMatchReference_data() { addFp32Rows(); }
  void lossAndGradientsMatchReference() {
    QFETCH(QString, name);
    const QString folder = variant(name);
    auto ckpt = checkpointer_for(folder, tmp_.filePath("out"));
    const auto args = *ckpt.checkpoint_args();
    const auto tokens = tokens_of(folder);
    const double want = read_json(folder + "/expected.json")["loss"].get<double>();
    const QString grads = folder + "/grads.safetensors";
    for (const bool compiled : {false, true}) {
      auto model = models::build_decoder(args);
      const auto report = ckpt.load_into(*model, 0);
      QVERIFY2(report.warnings.empty(), report.warnings.empty() ? "" : report.warnings[0].c_str());
      torch::Tensor loss;
      if (!compiled) {
        loss = tbtest::next_token_loss_tensor(model->forward(tokens), tokens);
      } else {
        auto wrapper = compile::wrap_compile(model);
        const auto sum = wrapper->token_loss_sum(wrapper->forward_hidden(tokens), next_token_labels(tokens), {});
        loss = sum / double(tokens.size(0) * (tokens.size(1) - 1));
      }
      loss.backward();
      const double got = loss.item<double>();
      const double rel = std::abs(got - want) / want;
      qInfo("%s%s: loss %.9f, reference %.9f, relative difference %.2e", qPrintable(name), compiled ? " compiled" : "",
            got, want, rel);
      QVERIFY2(rel <= 1e-5, qPrintable(QString("loss %1 vs reference %2").arg(got, 0, 'g', 10).arg(want, 0, 'g', 10)));
      expect_gradients(hf_gradients(*model, args), grads, 1e-4);
    }
  }

  // bf16 weights: computed in fp32 they give the reference's fp32 loss; computed in bf16, its bf16 loss
  // (both sides round every op to bf16, in somewhat different orders).
  void bf16MatchesReference_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("qwen3") << "qwen3_bf16";
    QTest::newRow("gemma3") << "gemma3_bf16";
  }
  void bf16MatchesReference() {
    QFETCH(QString, name);
    const QString folder = variant(name);
    auto ckpt = checkpointer_for(folder, tmp_.filePath("out"));
    const auto tokens = tokens_of(folder);
    const auto expected = read_json(folder + "/expected.json");
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      auto model = models::build_decoder(*ckpt.checkpoint_args());
      model->to(dtype);
      ckpt.load_into(*model, 0);
      torch::NoGradGuard no_grad;
      const double got = next_token_loss(model->forward(tokens), tokens);
      const double want = expected[dtype == torch::kFloat ? "loss_fp32_compute" : "loss"].get<double>();
      const double rel = std::abs(got - want) / want;
      qInfo("%s %s: loss %.9f, reference %.9f, relative difference %.2e", qPrintable(name),
            dtype == torch::kFloat ? "fp32" : "bf16", got, want, rel);
      QVERIFY2(rel <= (dtype == torch::kFloat ? 1e-5 : 2e-3), qPrintable(QString::number(rel)));
    }
  }

  // Load -> save gives the reference's own bytes, and the saved config reads back as the same model.
  void saveIsBitwise_data() {
    addFp32Rows();
    QTest::newRow("qwen3_bf16") << "qwen3_bf16";
  }
  void saveIsBitwise() {
    QFETCH(QString, name);
    const QString folder = variant(name);
    auto ckpt = checkpointer_for(folder, tmp_.filePath("resaved-" + name));
    const auto args = *ckpt.checkpoint_args();
    auto model = models::build_decoder(args);
    if (name.endsWith("bf16")) model->to(torch::kBFloat16);
    ckpt.load_into(*model, 0);
    const QString saved = QString::fromStdString(ckpt.save("epoch_0", *model));
    const auto a = tbtest::folder_tensors(folder), b = tbtest::folder_tensors(saved);
    QCOMPARE(a.size(), b.size());
    for (const auto& [k, v] : a) QVERIFY2(b.count(k) && tbtest::bitwise_equal(v, b.at(k)), k.c_str());
    QVERIFY(read_hf_model_args(saved.toStdString()).differences(args).empty());
  }

  // A LoRA adapter on every projection (fused ones included) saved as PEFT saves it: the reference applies
  // it as PEFT does and gets our loss; the merged checkpoint gives it too.
  void loraAdapterMatchesPeft_data() {
    QTest::addColumn<QString>("name");
    for (const char* v : {"qwen2_fp32", "qwen3_fp32", "gemma2_fp32", "gemma3_fp32", "phi3_fp32", "phi3_longrope_fp32"})
      QTest::newRow(v) << QString(v);
  }
  void loraAdapterMatchesPeft() {
    QFETCH(QString, name);
    const QString folder = variant(name);
    auto ckpt = checkpointer_for(folder, tmp_.filePath("lora-" + name));
    const auto args = *ckpt.checkpoint_args();
    peft::LoraSettings lora;
    lora.lora_attn_modules = {"q_proj", "k_proj", "v_proj", "output_proj"};
    lora.apply_lora_to_mlp = true;
    lora.apply_lora_to_output = !args.tie_word_embeddings;
    lora.lora_rank = 4;
    lora.lora_alpha = 8;
    auto model = peft::build_lora_decoder(args, lora);
    ckpt.load_into(*model, 0);
    {
      torch::NoGradGuard no_grad;
      torch::manual_seed(3);
      for (auto& [key, m] : peft::lora_modules(*model)) m->lora_b->weight.normal_(0.0, 0.2);
    }
    if (args.fused_qkv) QVERIFY(model->named_parameters().contains("layers.0.attn.qkv_proj.lora_a.weight"));
    const auto tokens = tokens_of(folder);
    double ours = 0;
    {
      torch::NoGradGuard no_grad;
      ours = next_token_loss(model->forward(tokens), tokens);
    }
    const QString adapter_dir = tmp_.filePath("adapter-" + name);
    const auto adapter = peft::adapter_state_dict(*model);
    peft::AdapterConfig cfg;
    cfg.rank = 4;
    cfg.alpha = 8;
    peft::save_peft_adapter(adapter_dir.toStdString(), adapter, args, cfg);
    const auto written = read_json(adapter_dir + "/adapter_config.json")["target_modules"];
    if (args.fused_qkv) QVERIFY2(written.dump().find("qkv_proj") != std::string::npos, written.dump().c_str());
    const double peft_loss = reference_loss({"eval-adapter", folder, adapter_dir, folder + "/tokens.json"});
    QVERIFY2(std::abs(peft_loss - ours) <= 1e-5 * ours, qPrintable(QString("%1 vs PEFT %2").arg(ours).arg(peft_loss)));
    // Base + (alpha / r) B A in the Hugging Face layout, read by the reference.
    const auto merged = peft::merge_lora(peft::base_weights(*model, torch::kFloat), adapter, 8, 4);
    const QString merged_dir = QString::fromStdString(ckpt.save_state("merged", merged, args));
    const double merged_loss = reference_loss({"eval", merged_dir, folder + "/tokens.json"});
    QVERIFY2(std::abs(merged_loss - ours) <= 1e-5 * ours, qPrintable(QString("%1 vs %2").arg(ours).arg(merged_loss)));
    // And the adapter reads back into a fresh model as it was.
    auto again = peft::build_lora_decoder(args, lora);
    peft::load_adapter_into(*again, peft::load_peft_adapter(adapter_dir.toStdString(), args), "adapter");
    const auto back = peft::adapter_state_dict(*again);
    for (const auto& [k, v] : adapter) QVERIFY2(torch::equal(back.at(k), v), k.c_str());
  }

  // The negative control: with a feature switched off our loss misses the reference by far more than the
  // tolerances above, so those tests would catch a feature computed wrongly or not at all.
  void missingFeaturesMissTheReference_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("feature");
    QTest::newRow("gemma2 attention soft-cap") << "gemma2_fp32"
                                               << "attn_softcap";
    QTest::newRow("gemma2 logit soft-cap") << "gemma2_fp32"
                                           << "final_softcap";
    QTest::newRow("gemma2 sliding window") << "gemma2_fp32"
                                           << "sliding_window";
    QTest::newRow("gemma2 (1 + w) norms") << "gemma2_fp32"
                                          << "norm_offset";
    QTest::newRow("gemma2 embedding scale") << "gemma2_fp32"
                                            << "scale_embeddings";
    QTest::newRow("gemma2 query_pre_attn_scalar") << "gemma2_fp32"
                                                  << "query_pre_attn_scalar";
    QTest::newRow("gemma GeGLU") << "gemma_fp32"
                                 << "activation";
    QTest::newRow("gemma3 local rotary base") << "gemma3_fp32"
                                              << "rope_local_base";
    QTest::newRow("gemma3 linear rope scaling") << "gemma3_fp32"
                                                << "rope_scaling";
    QTest::newRow("phi3 partial rotary") << "phi3_fp32"
                                         << "partial_rotary_factor";
    QTest::newRow("phi3 longrope") << "phi3_longrope_fp32"
                                   << "rope_scaling";
  }
  void missingFeaturesMissTheReference() {
    QFETCH(QString, name);
    QFETCH(QString, feature);
    const QString folder = variant(name);
    auto ckpt = checkpointer_for(folder, tmp_.filePath("out"));
    const auto args = *ckpt.checkpoint_args();
    auto off = args;
    if (feature == "attn_softcap") off.attn_softcap = 0;
    if (feature == "final_softcap") off.final_softcap = 0;
    if (feature == "sliding_window") off.sliding_window = 0;
    if (feature == "norm_offset") off.norm_offset = false;
    if (feature == "scale_embeddings") off.scale_embeddings = false;
    if (feature == "query_pre_attn_scalar") off.query_pre_attn_scalar = 0;
    if (feature == "activation") off.activation = models::Activation::silu;
    if (feature == "rope_local_base") off.rope_local_base = 0;
    if (feature == "rope_scaling") off.rope_scaling.reset();
    if (feature == "partial_rotary_factor") off.partial_rotary_factor = 1.0;
    QVERIFY(!off.differences(args).empty());
    auto model = models::build_decoder(off);
    // The weights as the real architecture lays them out, copied into the altered model.
    auto loaded = models::build_decoder(args);
    ckpt.load_into(*loaded, 0);
    {
      torch::NoGradGuard no_grad;
      auto target = model->named_parameters();
      for (const auto& item : loaded->named_parameters()) target[item.key()].copy_(item.value());
    }
    torch::NoGradGuard no_grad;
    const auto tokens = tokens_of(folder);
    const double got = next_token_loss(model->forward(tokens), tokens);
    const double want = read_json(folder + "/expected.json")["loss"].get<double>();
    QVERIFY2(std::abs(got - want) > 1e-3 * want, qPrintable(QString("%1 vs %2").arg(got).arg(want)));
  }

  // The recipes on the families: LoRA and QLoRA train from a family's folder (fused Phi-3 projections,
  // Qwen2's biases under NF4), and a compiled Gemma 3 run keeps eager's losses with the pieces no kernel
  // covers named in its compile event.
  void recipesTrainEachFamily_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("model");
    QTest::newRow("qwen2 QLoRA") << "qwen2_fp32"
                                 << "tunebench.models.qlora_from_hf_config";
    QTest::newRow("phi3 LoRA") << "phi3_fp32"
                               << "tunebench.models.lora_from_hf_config";
    QTest::newRow("gemma3 full") << "gemma3_fp32"
                                 << "tunebench.models.from_hf_config";
  }
  void recipesTrainEachFamily() {
    QFETCH(QString, name);
    QFETCH(QString, model);
    const bool lora = model.contains("lora");
    tbtest::TinyConfig config;
    if (lora) config.lora(model.toStdString());
    config.from_folder(variant(name).toStdString(), model.toStdString());
    config.seq_len = 16, config.num_samples = 8, config.epochs = 1, config.max_steps_per_epoch = 2;
    config.gradient_accumulation_steps = 1;
    const std::string recipe = lora ? "lora_finetune_single_device" : "full_finetune_single_device";
    const std::string text = config.text(tmp_.filePath("run-" + name).toStdString());
    tbtest::CollectingLogger eager_log, compiled_log;
    tb::training::RunControl eager_control, compiled_control;
    const auto eager = tbtest::run_recipe(recipe, text, {"compile=false"}, eager_log, eager_control);
    QVERIFY2(eager.status == tb::training::RunStatus::Completed, eager.message.c_str());
    QCOMPARE(eager_log.steps.size(), size_t(2));
    for (const auto& s : eager_log.steps) QVERIFY(std::isfinite(s.loss));
    const std::string out2 = tmp_.filePath("run-compiled-" + name).toStdString();
    const auto compiled =
        tbtest::run_recipe(recipe, config.text(out2), {"compile=true"}, compiled_log, compiled_control);
    QVERIFY2(compiled.status == tb::training::RunStatus::Completed, compiled.message.c_str());
    const auto event = compiled_log.event("compile");
    QVERIFY2(!event.value("fallback", true), event.dump().c_str());
    if (name.startsWith("gemma3")) QVERIFY2(!event["eager_pieces"].empty(), event.dump().c_str());
    for (size_t i = 0; i < eager_log.steps.size(); ++i)
      QVERIFY2(
          std::abs(compiled_log.steps[i].loss - eager_log.steps[i].loss) <= 1e-5 * eager_log.steps[i].loss,
          qPrintable(
              QString("step %1: %2 vs %3").arg(i + 1).arg(compiled_log.steps[i].loss).arg(eager_log.steps[i].loss)));
  }
};

TB_TEST(TestModelFamilies)
#include "test_model_families.moc"
