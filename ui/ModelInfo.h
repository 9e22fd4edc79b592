// What the run-setup panel shows about a model: its architecture (from a preset, the generic builders'
// arguments, or a Hugging Face config.json), its parameter count, and an estimate of the memory a
// recipe needs: weights, gradients and AdamW states (LoRA: gradients and states of the adapters only;
// QLoRA: NF4 base weights at ~0.516 bytes/param; 8-bit AdamW: ~2 bytes/param), plus a rough activation term.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

#include "ConfigDocument.h"
#include "models/model_args.h"

namespace tb::ui {

struct LoraTargets {
  QStringList attnModules = {"q_proj", "v_proj", "output_proj"};
  bool mlp = true;
  bool output = false;
  int64_t rank = 8;
};

struct MemoryEstimate {
  int64_t totalParams = 0;      // the base model's parameters
  int64_t trainableParams = 0;  // what the optimizer updates (all, or the adapters)
  int64_t adapterParams = 0;    // LoRA A and B matrices
  int64_t quantizedParams = 0;  // base parameters stored as NF4 (QLoRA)
  double weightBytes = 0;       // base weights (NF4 included) plus adapters
  double gradientBytes = 0;
  double optimizerBytes = 0;    // AdamW: two states per trainable parameter (8-bit: one byte each)
  bool eightBitOptimizer = false;
  bool gradientsOneAtATime = false;  // optimizer_in_bwd
  double activationBytes = 0;   // rough: what backward keeps, plus fp32 logits
  int64_t batchSize = 1;
  int64_t seqLen = 0;
  double totalBytes() const { return weightBytes + gradientBytes + optimizerBytes + activationBytes; }
  // Several lines: parameters, then each term and the total, in GiB.
  QString describe() const;
};

// Bytes per base parameter of an NF4 tensor: 4-bit codes, an int8 scale per block of 64, and an fp32
// factor per 256 scales (double quantisation, as QLoRA and torchao).
constexpr double kNf4BytesPerParam = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);

// The optimizer's states as the config's optimizer component says: bitsandbytes' or torchao's 8-bit
// AdamW keeps one byte per moment and element plus an fp32 absmax per block of 256, and fp32 states
// for tensors below min_8bit_size (training/adamw8bit.h); anything else counts as AdamW.
// optimizer_in_bwd: each gradient is freed as soon as its parameter has stepped, so gradients count
// as the largest single one.
struct OptimizerStates {
  bool eightBit = false;
  int64_t min8bitSize = 4096;
  bool inBackward = false;
};
OptimizerStates optimizerStatesOf(const ConfigDocument& doc);

MemoryEstimate estimateMemory(const tb::models::ModelArgs& args, RecipeKind kind, const QString& dtype,
                              const LoraTargets& lora, int64_t batchSize, int64_t seqLen,
                              const OptimizerStates& optimizer = {});

// The architecture of <folder>/config.json (or of the file itself), read as the engine reads it
// (checkpoint/hf_config.h); nullopt with the engine's message, naming the file, when it cannot be.
std::optional<tb::models::ModelArgs> modelArgsFromHfFolder(const QString& folderOrFile, QString* error);

// The architecture the document's model component builds (preset, generic builder or from_hf_config).
std::optional<tb::models::ModelArgs> modelArgsOf(const ConfigDocument& doc, QString* error = nullptr);
LoraTargets loraTargetsOf(const ConfigDocument& doc);
// The sequence length the estimate assumes: tokenizer.max_seq_len, else the dataset's seq_len, else
// the model's max_seq_len.
int64_t seqLenOf(const ConfigDocument& doc, const tb::models::ModelArgs& args);

// One line about an architecture: its family, shape, and what the family does besides a Llama
// ("Gemma 3 · dim 1152 · 26 layers · ... · sliding window 512 on 22 of 26 layers · q/k norms").
QString describeArchitecture(const tb::models::ModelArgs& args);

// The estimate for the document's setup (its model, recipe, dtype, LoRA targets, batch, sequence length,
// optimizer); nullopt with the reason when its model cannot be read.
std::optional<MemoryEstimate> estimateOf(const ConfigDocument& doc, QString* error = nullptr);

// A safetensors file as far as its header tells without reading the tensors: empty when the 8-byte
// length, the JSON header and the data it announces are all there; else why not ("truncated: the header
// announces 1.2 GiB of data, the file holds 0.8 GiB").
QString checkSafetensorsFile(const QString& path);

// What the setup will load, in the Model box: the weights (a folder's files with their size, checked as
// above, or "seeded random weights" when checkpointer.checkpoint_dir is null) and the tokenizer. `problem`
// gets the first file that will not load, if any.
QString weightsAndTokenizerText(const ConfigDocument& doc, QString* problem = nullptr);

QString formatBytes(double bytes);       // "1.23 GiB", "456 MiB", "789 KiB"
QString formatCount(int64_t count);      // "6.74 B", "15.2 M", "12.3 K", "512"

}  // namespace tb::ui
