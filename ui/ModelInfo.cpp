#include "ModelInfo.h"

#include <algorithm>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/hf_config.h"

namespace tb::ui {

QString familyLabel(tb::models::Family f) {
  switch (f) {
    case tb::models::Family::llama: return "Llama";
    case tb::models::Family::mistral: return "Mistral";
    case tb::models::Family::qwen2: return "Qwen2";
    case tb::models::Family::qwen3: return "Qwen3";
    case tb::models::Family::gemma: return "Gemma";
    case tb::models::Family::gemma2: return "Gemma 2";
    case tb::models::Family::gemma3: return "Gemma 3";
    case tb::models::Family::phi3: return "Phi-3/4";
  }
  return "?";
}

QString describeArchitecture(const tb::models::ModelArgs& a) {
  QStringList parts;
  parts << familyLabel(a.family)
        << QString("dim %1 · %2 layers · %3 heads (%4 kv)").arg(a.embed_dim).arg(a.num_layers).arg(a.num_heads).arg(a.num_kv_heads);
  if (a.explicit_head_dim > 0) parts << QString("head_dim %1").arg(a.head_dim());
  parts << QString("MLP %1").arg(a.intermediate_dim) << QString("vocab %1").arg(a.vocab_size);
  if (a.tie_word_embeddings) parts << "tied embeddings";
  if (a.sliding_window > 0) {
    int64_t sliding = 0;
    for (int64_t i = 0; i < a.num_layers; ++i) sliding += a.layer_slides(i) ? 1 : 0;
    parts << QString("sliding window %1 on %2 of %3 layers").arg(a.sliding_window).arg(sliding).arg(a.num_layers);
  }
  if (a.attention_bias) parts << "q/k/v biases";
  if (a.qk_norm) parts << "q/k norms";
  if (a.attn_softcap > 0 || a.final_softcap > 0) parts << "soft-capping";
  if (a.rotary_dim() < a.head_dim()) parts << QString("rotary on %1 of %2 head dims").arg(a.rotary_dim()).arg(a.head_dim());
  if (a.rope_scaling && a.rope_scaling->type == tb::models::RopeType::longrope)
    parts << QString("longrope (short factors: %1 tokens at most)").arg(a.max_seq_len);
  return parts.join(" · ");
}

std::optional<MemoryEstimate> estimateOf(const ConfigDocument& doc, QString* error) {
  const auto args = modelArgsOf(doc, error);
  if (!args) return std::nullopt;
  return estimateFor(doc, *args);
}

MemoryEstimate estimateFor(const ConfigDocument& doc, const tb::models::ModelArgs& model) {
  const auto* args = &model;
  bool ok = false;
  int64_t batch = doc.scalar("batch_size").toLongLong(&ok);
  if (!ok) batch = 1;
  const RecipeKind kind = doc.recipeKind();
  const auto adapters = kind == RecipeKind::Full   ? tb::training::Adapters::None
                        : kind == RecipeKind::Lora ? tb::training::Adapters::Lora
                                                   : tb::training::Adapters::Qlora;
  return tb::training::estimate_memory(*args, adapters, doc.scalar("dtype", "fp32").toStdString(),
                                       tb::training::lora_targets_of(doc.tree()), batch, seqLenOf(doc, *args),
                                       tb::training::optimizer_states_of(doc.tree()));
}

QString checkSafetensorsFile(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return path + ": " + file.errorString();
  const qint64 size = file.size();
  QByteArray lengthBytes = file.read(8);
  if (lengthBytes.size() < 8) return path + ": truncated: shorter than a safetensors header";
  quint64 headerLength = 0;
  for (int i = 7; i >= 0; --i) headerLength = (headerLength << 8) | quint8(lengthBytes[i]);  // little-endian
  if (headerLength > quint64(size - 8)) return path + ": truncated: the header is cut off";
  QJsonParseError parseError;
  const QJsonDocument header = QJsonDocument::fromJson(file.read(qint64(headerLength)), &parseError);
  if (!header.isObject()) return path + ": not a safetensors file (its header is not JSON: " + parseError.errorString() + ")";
  quint64 end = 0;
  const QJsonObject tensors = header.object();
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto offsets = it.value().toObject().value("data_offsets").toArray();
    if (offsets.size() == 2) end = std::max(end, quint64(offsets.at(1).toDouble()));
  }
  const quint64 held = quint64(size) - 8 - headerLength;
  if (end > held)
    return QString("%1: truncated: the header announces %2 of tensor data, the file holds %3")
        .arg(path, formatBytes(double(end)), formatBytes(double(held)));
  return {};
}

QString weightsAndTokenizerText(const ConfigDocument& doc, QString* problem) {
  QString text;
  const YAML::Node dirNode = doc.value("checkpointer.checkpoint_dir");
  const QString dir = dirNode.IsDefined() && dirNode.IsScalar() && dirNode.Scalar() != "null" && dirNode.Scalar() != "~"
                          ? doc.inputPath("checkpointer.checkpoint_dir")
                          : QString();
  if (dir.isEmpty()) {
    text = "Weights: seeded random (checkpointer.checkpoint_dir is null)";
  } else {
    // The files the engine will load (checkpoint/checkpoint_files.h: a checkpoint's manifest, the names
    // given, an index, model.safetensors).
    std::vector<std::string> listed;
    const YAML::Node named = doc.value("checkpointer.checkpoint_files");
    if (named.IsDefined() && named.IsSequence())
      for (const auto& f : named)
        if (f.IsScalar()) listed.push_back(f.Scalar());
    QStringList files;
    try {
      for (const auto& f : tb::checkpoint::resolve_checkpoint_files(dir.toStdString(), listed))
        files << QString::fromStdString(f);
    } catch (const std::exception& e) {
      if (problem && problem->isEmpty()) *problem = QString::fromStdString(e.what());
      for (const auto& f : listed) files << QString::fromStdString(f);
    }
    double bytes = 0;
    for (const QString& f : files) {
      const QString path = QDir(dir).filePath(f);
      bytes += double(QFileInfo(path).size());
      if (problem && problem->isEmpty() && path.endsWith(".safetensors")) *problem = checkSafetensorsFile(path);
      if (problem && problem->isEmpty() && !QFileInfo(path).isFile()) *problem = path + ": no such file";
    }
    text = QString("Weights: %1 (%2 file%3, %4)").arg(dir).arg(files.size()).arg(files.size() == 1 ? "" : "s").arg(formatBytes(bytes));
  }
  const QString component = doc.scalar("tokenizer._component_");
  text += "\nTokenizer: " + component.mid(component.lastIndexOf('.') + 1) + " " + doc.scalar("tokenizer.path");
  return text;
}

QString formatBytes(double bytes) {
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  if (bytes >= gib) return QString::number(bytes / gib, 'f', bytes >= 100 * gib ? 0 : 2) + " GiB";
  if (bytes >= mib) return QString::number(bytes / mib, 'f', bytes >= 100 * mib ? 0 : 1) + " MiB";
  if (bytes >= kib) return QString::number(bytes / kib, 'f', 0) + " KiB";
  return QString::number(qint64(bytes)) + " B";
}

QString formatCount(int64_t n) {
  const double v = double(n);
  if (v >= 1e9) return QString::number(v / 1e9, 'f', 2) + " B";
  if (v >= 1e6) return QString::number(v / 1e6, 'f', v >= 1e8 ? 0 : 1) + " M";
  if (v >= 1e4) return QString::number(v / 1e3, 'f', 1) + " K";
  return QString::number(n);
}

QString describeEstimate(const MemoryEstimate& e) {
  QStringList lines;
  lines << QString("Parameters: %1 (%2 trainable)").arg(formatCount(e.total_params), formatCount(e.trainable_params));
  if (e.adapter_params) lines << QString("LoRA adapters: %1").arg(formatCount(e.adapter_params));
  if (e.quantized_params)
    lines << QString("NF4 base: %1 params at %2 bytes each")
                 .arg(formatCount(e.quantized_params))
                 .arg(e.nf4_bytes_per_param, 0, 'f', 3);
  lines << QString("Weights %1 · gradients %2%3 · %4 %5")
               .arg(formatBytes(e.weight_bytes), formatBytes(e.gradient_bytes),
                    e.gradients_one_at_a_time ? " (one at a time: optimizer_in_bwd)" : "",
                    e.eight_bit_optimizer ? "8-bit AdamW" : "AdamW", formatBytes(e.optimizer_bytes));
  lines << QString("Activations ≈ %1 (batch %2 × %3 tokens)").arg(formatBytes(e.activation_bytes)).arg(e.batch_size).arg(e.seq_len);
  lines << QString("Estimated total ≈ %1").arg(formatBytes(e.total_bytes()));
  return lines.join('\n');
}

std::optional<tb::models::ModelArgs> modelArgsFromHfFolder(const QString& folderOrFile, QString* error) {
  try {
    return tb::checkpoint::read_hf_model_args(folderOrFile.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return std::nullopt;
  }
}

std::optional<tb::models::ModelArgs> modelArgsOf(const ConfigDocument& doc, QString* error) {
  const QString base = doc.modelBaseName();
  if (auto preset = tb::models::preset_args(base.toStdString())) return preset;
  if (base == "from_hf_config") return modelArgsFromHfFolder(doc.inputPath("model.path"), error);
  if (base == "llama2" || base == "llama3") {
    tb::models::ModelArgs a;
    auto get = [&](const char* key, int64_t fallback) {
      bool ok = false;
      const int64_t v = doc.scalar(QString("model.") + key).toLongLong(&ok);
      return ok ? v : fallback;
    };
    a.vocab_size = get("vocab_size", 0);
    a.num_layers = get("num_layers", 0);
    a.num_heads = get("num_heads", 0);
    a.num_kv_heads = get("num_kv_heads", a.num_heads);
    a.embed_dim = get("embed_dim", 0);
    a.max_seq_len = get("max_seq_len", 2048);
    a.intermediate_dim = get("intermediate_dim", a.embed_dim ? tb::models::scale_hidden_dim_for_mlp(a.embed_dim) : 0);
    a.tie_word_embeddings = doc.boolean("model.tie_word_embeddings", false);
    try {
      a.validate();
    } catch (const std::exception& e) {
      if (error) *error = QString("model: ") + e.what();
      return std::nullopt;
    }
    return a;
  }
  if (error) *error = "unknown model builder '" + doc.scalar("model._component_") + "'";
  return std::nullopt;
}

int64_t seqLenOf(const ConfigDocument& doc, const tb::models::ModelArgs& args) {
  for (const char* key : {"tokenizer.max_seq_len", "dataset.seq_len", "dataset.max_seq_len"}) {
    bool ok = false;
    const int64_t v = doc.scalar(key).toLongLong(&ok);
    if (ok && v > 0) return v;
  }
  return args.max_seq_len;
}

}  // namespace tb::ui
