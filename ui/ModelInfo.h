// What the run-setup panel shows about a model: its architecture (from a preset, the generic builders'
// arguments, or a Hugging Face config.json), its parameter count, and the engine's estimate of the memory
// the setup needs (training/memory_estimate.h), in words.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

#include "ConfigDocument.h"
#include "models/model_args.h"
#include "training/memory_estimate.h"

namespace tb::ui {

// The estimate is the engine's (training/memory_estimate.h); the window says it in words.
using tb::training::MemoryEstimate;
// Several lines: parameters, then each term and the total, in GiB.
QString describeEstimate(const MemoryEstimate& e);

// The architecture of <folder>/config.json (or of the file itself), read as the engine reads it
// (checkpoint/hf_config.h); nullopt with the engine's message, naming the file, when it cannot be.
std::optional<tb::models::ModelArgs> modelArgsFromHfFolder(const QString& folderOrFile, QString* error);

// The architecture the document's model component builds (preset, generic builder or from_hf_config).
std::optional<tb::models::ModelArgs> modelArgsOf(const ConfigDocument& doc, QString* error = nullptr);
// The sequence length the estimate assumes: tokenizer.max_seq_len, else the dataset's seq_len, else
// the model's max_seq_len.
int64_t seqLenOf(const ConfigDocument& doc, const tb::models::ModelArgs& args);

// One line about an architecture: its family, shape, and what the family does besides a Llama
// ("Gemma 3 · dim 1152 · 26 layers · ... · sliding window 512 on 22 of 26 layers · q/k norms").
QString describeArchitecture(const tb::models::ModelArgs& args);
QString familyLabel(tb::models::Family family);  // "Llama", "Gemma 3", "Phi-3/4"

// The estimate for the document's setup (its model, recipe, dtype, LoRA targets, batch, sequence length,
// optimizer); nullopt with the reason when its model cannot be read.
std::optional<MemoryEstimate> estimateOf(const ConfigDocument& doc, QString* error = nullptr);
// The same for another model in the document's setup (a model not yet downloaded: "Get model…").
MemoryEstimate estimateFor(const ConfigDocument& doc, const tb::models::ModelArgs& args);

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
