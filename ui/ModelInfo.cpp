#include "ModelInfo.h"

#include "checkpoint/hf_config.h"

namespace tb::ui {

namespace {
struct Linear {
  const char* name;
  int64_t in, out;
};

// The linears of one decoder layer, by torchtune's module names.
std::vector<Linear> layerLinears(const tb::models::ModelArgs& a) {
  const int64_t kv = a.num_kv_heads * a.head_dim();
  return {{"q_proj", a.embed_dim, a.num_heads * a.head_dim()},
          {"k_proj", a.embed_dim, kv},
          {"v_proj", a.embed_dim, kv},
          {"output_proj", a.num_heads * a.head_dim(), a.embed_dim},
          {"w1", a.embed_dim, a.intermediate_dim},
          {"w2", a.intermediate_dim, a.embed_dim},
          {"w3", a.embed_dim, a.intermediate_dim}};
}

bool targeted(const Linear& l, const LoraTargets& t) {
  const QString name = l.name;
  if (name.startsWith('w')) return t.mlp;
  return t.attnModules.contains(name);
}

double bytesPerElement(const QString& dtype) { return dtype == "bf16" ? 2.0 : 4.0; }
}  // namespace

MemoryEstimate estimateMemory(const tb::models::ModelArgs& a, RecipeKind kind, const QString& dtype,
                              const LoraTargets& lora, int64_t batchSize, int64_t seqLen) {
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
  e.optimizerBytes = 2.0 * double(e.trainableParams) * b;

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
  lines << QString("Weights %1 · gradients %2 · AdamW %3")
               .arg(formatBytes(weightBytes), formatBytes(gradientBytes), formatBytes(optimizerBytes));
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
