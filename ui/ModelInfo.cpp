#include "ModelInfo.h"

#include <algorithm>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include "checkpoint/hf_config.h"

namespace tb::ui {

namespace {
struct Linear {
  const char* name;
  int64_t in, out;
};

// The linears of one decoder layer, by torchtune's module names (Phi-3's fused ones as one module each).
std::vector<Linear> layerLinears(const tb::models::ModelArgs& a) {
  const int64_t q = a.num_heads * a.head_dim(), kv = a.num_kv_heads * a.head_dim();
  std::vector<Linear> out;
  if (a.fused_qkv)
    out.push_back({"qkv_proj", a.embed_dim, q + 2 * kv});
  else
    out.insert(out.end(), {{"q_proj", a.embed_dim, q}, {"k_proj", a.embed_dim, kv}, {"v_proj", a.embed_dim, kv}});
  out.push_back({"output_proj", q, a.embed_dim});
  if (a.fused_gate_up)
    out.push_back({"gate_up_proj", a.embed_dim, 2 * a.intermediate_dim});
  else
    out.insert(out.end(), {{"w1", a.embed_dim, a.intermediate_dim}, {"w3", a.embed_dim, a.intermediate_dim}});
  out.push_back({"w2", a.intermediate_dim, a.embed_dim});
  return out;
}

bool targeted(const Linear& l, const LoraTargets& t) {
  const QString name = l.name;
  if (name.startsWith('w') || name == "gate_up_proj") return t.mlp;
  // A fused qkv_proj adapts as one module when any of q, k, v is targeted (as the builders do).
  if (name == "qkv_proj")
    return t.attnModules.contains("q_proj") || t.attnModules.contains("k_proj") || t.attnModules.contains("v_proj");
  return t.attnModules.contains(name);
}

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

double bytesPerElement(const QString& dtype) { return dtype == "bf16" ? 2.0 : 4.0; }

// The element counts of the tensors that train: the embedding, each layer's linears, the output
// projection, and the rest (norms, biases) as tensors of embed_dim; LoRA: each adapter's A and B.
std::vector<int64_t> trainableTensors(const tb::models::ModelArgs& a, RecipeKind kind, const LoraTargets& lora) {
  std::vector<int64_t> sizes;
  if (kind == RecipeKind::Full) {
    int64_t counted = 0;
    auto add = [&](int64_t n) {
      sizes.push_back(n);
      counted += n;
    };
    add(a.vocab_size * a.embed_dim);
    for (int64_t layer = 0; layer < a.num_layers; ++layer)
      for (const Linear& l : layerLinears(a)) add(l.in * l.out);
    if (!a.tie_word_embeddings) add(a.vocab_size * a.embed_dim);
    for (int64_t rest = a.parameter_count() - counted; rest > 0; rest -= a.embed_dim)
      sizes.push_back(std::min(rest, a.embed_dim));
    return sizes;
  }
  for (int64_t layer = 0; layer < a.num_layers; ++layer)
    for (const Linear& l : layerLinears(a))
      if (targeted(l, lora)) sizes.insert(sizes.end(), {lora.rank * l.in, l.out * lora.rank});
  if (lora.output) sizes.insert(sizes.end(), {lora.rank * a.embed_dim, a.vocab_size * lora.rank});
  return sizes;
}

// 8-bit AdamW (training/adamw8bit.h): 2 bytes per element and two fp32 absmax per block of 256, or
// two fp32 states below min_8bit_size.
double eightBitStateBytes(const std::vector<int64_t>& tensors, int64_t min8bitSize) {
  double bytes = 0;
  for (const int64_t n : tensors) bytes += n < min8bitSize ? 8.0 * double(n) : 2.0 * double(n) + 8.0 * double((n + 255) / 256);
  return bytes;
}
}  // namespace

OptimizerStates optimizerStatesOf(const ConfigDocument& doc) {
  const QString component = doc.scalar("optimizer._component_");
  OptimizerStates states;
  states.eightBit = component.endsWith("AdamW8bit") ||
                    (component.endsWith("PagedAdamW") && doc.scalar("optimizer.optim_bits") == "8");
  bool ok = false;
  const int64_t min = doc.scalar("optimizer.min_8bit_size").toLongLong(&ok);
  if (ok && !component.startsWith("torchao")) states.min8bitSize = min;
  states.inBackward = doc.scalar("optimizer_in_bwd").compare("true", Qt::CaseInsensitive) == 0;
  return states;
}

MemoryEstimate estimateMemory(const tb::models::ModelArgs& a, RecipeKind kind, const QString& dtype,
                              const LoraTargets& lora, int64_t batchSize, int64_t seqLen,
                              const OptimizerStates& optimizer) {
  MemoryEstimate e;
  const double b = bytesPerElement(dtype);
  e.totalParams = a.parameter_count();
  e.batchSize = std::max<int64_t>(1, batchSize);
  e.seqLen = std::max<int64_t>(1, seqLen);

  if (kind == RecipeKind::Full) {
    e.trainableParams = e.totalParams;
    e.weightBytes = double(e.totalParams) * b;
  } else {
    for (const Linear& l : layerLinears(a)) {
      if (!targeted(l, lora)) continue;
      e.adapterParams += a.num_layers * lora.rank * (l.in + l.out);
      e.quantizedParams += a.num_layers * l.in * l.out;
    }
    if (lora.output) {
      e.adapterParams += lora.rank * (a.embed_dim + a.vocab_size);
      // A tied output shares the embedding, which stays in the compute dtype.
      if (!a.tie_word_embeddings) e.quantizedParams += a.embed_dim * a.vocab_size;
    }
    e.trainableParams = e.adapterParams;
    if (kind == RecipeKind::Qlora)
      e.weightBytes = double(e.quantizedParams) * kNf4BytesPerParam + double(e.totalParams - e.quantizedParams) * b;
    else
      e.weightBytes = double(e.totalParams) * b;
    e.weightBytes += double(e.adapterParams) * b;
    if (kind != RecipeKind::Qlora) e.quantizedParams = 0;
  }
  e.gradientBytes = double(e.trainableParams) * b;
  e.gradientsOneAtATime = optimizer.inBackward;
  if (optimizer.inBackward) {
    const auto sizes = trainableTensors(a, kind, lora);
    e.gradientBytes = sizes.empty() ? 0.0 : double(*std::max_element(sizes.begin(), sizes.end())) * b;
  }
  e.optimizerBytes = 2.0 * double(e.trainableParams) * b;
  e.eightBitOptimizer = optimizer.eightBit;
  if (optimizer.eightBit) e.optimizerBytes = eightBitStateBytes(trainableTensors(a, kind, lora), optimizer.min8bitSize);

  // What backward keeps per layer, per token: norm inputs, q/k/v, attention output, the MLP's three
  // hidden-size tensors and the residuals; plus the attention probabilities (T x T per head) of the eager
  // path and the fp32 logits with their gradient. A rough guide, not a measurement.
  const double tokens = double(e.batchSize) * double(e.seqLen);
  const double kv = double(a.num_kv_heads * a.head_dim());
  const double perToken = 6.0 * double(a.embed_dim) + 2.0 * kv + 4.0 * double(a.intermediate_dim);
  const double attention = double(e.batchSize) * double(a.num_heads) * double(e.seqLen) * double(e.seqLen);
  e.activationBytes = double(a.num_layers) * (tokens * perToken + attention) * b + tokens * double(a.vocab_size) * 4.0 * 2.0;
  return e;
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
  bool ok = false;
  int64_t batch = doc.scalar("batch_size").toLongLong(&ok);
  if (!ok) batch = 1;
  return estimateMemory(*args, doc.recipeKind(), doc.scalar("dtype", "fp32"), loraTargetsOf(doc), batch,
                        seqLenOf(doc, *args), optimizerStatesOf(doc));
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
                          ? QString::fromStdString(dirNode.Scalar())
                          : QString();
  if (dir.isEmpty()) {
    text = "Weights: seeded random (checkpointer.checkpoint_dir is null)";
  } else {
    QStringList files;
    const YAML::Node listed = doc.value("checkpointer.checkpoint_files");
    if (listed.IsDefined() && listed.IsSequence())
      for (const auto& f : listed)
        if (f.IsScalar()) files << QString::fromStdString(f.Scalar());
    if (files.isEmpty()) {
      files = QDir(dir).entryList({"model*.safetensors"}, QDir::Files, QDir::Name);
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

QString MemoryEstimate::describe() const {
  QStringList lines;
  lines << QString("Parameters: %1 (%2 trainable)").arg(formatCount(totalParams), formatCount(trainableParams));
  if (adapterParams) lines << QString("LoRA adapters: %1").arg(formatCount(adapterParams));
  if (quantizedParams) lines << QString("NF4 base: %1 params at %2 bytes each").arg(formatCount(quantizedParams)).arg(kNf4BytesPerParam, 0, 'f', 3);
  lines << QString("Weights %1 · gradients %2%3 · %4 %5")
               .arg(formatBytes(weightBytes), formatBytes(gradientBytes),
                    gradientsOneAtATime ? " (one at a time: optimizer_in_bwd)" : "",
                    eightBitOptimizer ? "8-bit AdamW" : "AdamW", formatBytes(optimizerBytes));
  lines << QString("Activations ≈ %1 (batch %2 × %3 tokens)").arg(formatBytes(activationBytes)).arg(batchSize).arg(seqLen);
  lines << QString("Estimated total ≈ %1").arg(formatBytes(totalBytes()));
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
  if (base == "from_hf_config") return modelArgsFromHfFolder(doc.scalar("model.path"), error);
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

LoraTargets loraTargetsOf(const ConfigDocument& doc) {
  LoraTargets t;
  const YAML::Node modules = doc.value("model.lora_attn_modules");
  if (modules.IsDefined() && modules.IsSequence()) {
    t.attnModules.clear();
    for (const auto& m : modules)
      if (m.IsScalar()) t.attnModules << QString::fromStdString(m.Scalar());
  }
  t.mlp = doc.boolean("model.apply_lora_to_mlp", false);
  t.output = doc.boolean("model.apply_lora_to_output", false);
  bool ok = false;
  const int64_t rank = doc.scalar("model.lora_rank").toLongLong(&ok);
  t.rank = ok ? rank : 8;
  return t;
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
