#include "training/recipe_support.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "checkpoint/hf_checkpointer.h"
#include "peft/qlora.h"
#include "training/run_checkpoint.h"

namespace fs = std::filesystem;

namespace tb::training {

torch::ScalarType apply_runtime_settings(const config::Config& cfg) {
  const std::string device = cfg.get_string("device", "cpu");
  if (device != "cpu") {
    if (device.rfind("cuda", 0) == 0 && !torch::cuda::is_available())
      throw std::runtime_error("device '" + device + "' asked for, but this LibTorch has no CUDA; use device: cpu");
    if (device.rfind("cuda", 0) != 0) throw std::runtime_error("unknown device '" + device + "' (cpu or cuda)");
    throw std::runtime_error("the single-device recipes run on the CPU in this build; use device: cpu");
  }
  const auto cores = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(static_cast<int>(cfg.get_int("num_threads", cores)));
  torch::manual_seed(static_cast<uint64_t>(cfg.get_int("seed", 0)));
  at::GradMode::set_enabled(true);
  const std::string dtype = cfg.get_string("dtype", "fp32");
  if (dtype == "fp32" || dtype == "float32") return torch::kFloat32;
  if (dtype == "bf16" || dtype == "bfloat16") return torch::kBFloat16;
  throw std::runtime_error("dtype '" + dtype + "' is not supported (fp32 or bf16)");
}

torch::Tensor token_loss_sum(models::TransformerDecoderImpl& model, const torch::Tensor& hidden,
                             const torch::Tensor& labels, const LossSpec& spec) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(spec.num_output_chunks, hidden.size(1)));
  if (chunks == 1) {
    auto logits = model.output_projection(hidden);
    return cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}), spec.ignore_index);
  }
  auto hidden_chunks = hidden.chunk(chunks, /*dim=*/1);
  auto label_chunks = labels.chunk(chunks, /*dim=*/1);
  torch::Tensor total;
  for (size_t i = 0; i < hidden_chunks.size(); ++i) {
    auto logits = model.output_projection(hidden_chunks[i]);
    auto part = cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), label_chunks[i].reshape({-1}),
                                  spec.ignore_index);
    total = total.defined() ? total + part : part;
  }
  return total;
}

namespace {

// One layer call that outlives the forward pass: backward runs after forward_hidden has returned.
struct LayerClosure : torch::CustomClassHolder {
  models::TransformerDecoderImpl* model = nullptr;
  int64_t index = 0;
  models::PositionInfo pos;
  torch::Tensor run(const torch::Tensor& h) const { return model->forward_layer(index, h, pos); }
};

// Runs one decoder layer without keeping its graph; backward recomputes it with grad enabled and
// back-propagates through the recomputed graph (gradients land in the layer's parameters).
struct CheckpointedLayer : torch::autograd::Function<CheckpointedLayer> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor h,
                               c10::intrusive_ptr<LayerClosure> layer) {
    ctx->saved_data["layer"] = c10::IValue::make_capsule(layer);
    ctx->saved_data["rng"] = at::detail::getDefaultCPUGenerator().get_state();
    ctx->save_for_backward({h});
    torch::NoGradGuard no_grad;
    return layer->run(h);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto holder = ctx->saved_data["layer"].toCapsule();
    const auto* layer = static_cast<const LayerClosure*>(holder.get());
    auto input = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    auto generator = at::detail::getDefaultCPUGenerator();
    auto rng_now = generator.get_state();
    generator.set_state(ctx->saved_data["rng"].toTensor());
    torch::Tensor out;
    {
      torch::AutoGradMode grad(true);
      out = layer->run(input);
    }
    generator.set_state(rng_now);
    torch::autograd::backward({out}, {grad_out[0]});
    return {input.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_forward_hidden(models::TransformerDecoderImpl& model, const torch::Tensor& tokens,
                                          const torch::Tensor& input_pos) {
  const auto pos = model.make_positions(tokens.size(0), tokens.size(1), input_pos, {},
                                        model.tok_embeddings->weight.device());
  auto h = model.tok_embeddings->forward(tokens);
  for (int64_t i = 0; i < model.num_layers(); ++i) {
    auto layer = c10::make_intrusive<LayerClosure>();
    layer->model = &model;
    layer->index = i;
    layer->pos = pos;
    h = torch::GradMode::is_enabled() ? CheckpointedLayer::apply(h, layer) : layer->run(h);
  }
  return model.norm->forward(h);
}

void save_recipe_state(const std::string& folder, const RecipeState& state, torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  archive.save_to((fs::path(folder) / "recipe_state.pt").string());
  const nlohmann::json counters = {{"global_step", state.global_step},
                                   {"epochs_run", state.epochs_run},
                                   {"cursor", {{"epoch", state.cursor.epoch}, {"batch_index", state.cursor.batch_index}}},
                                   {"seed", state.seed},
                                   {"total_steps", state.total_steps}};
  std::ofstream((fs::path(folder) / "recipe_state.json").string()) << counters.dump(2) << "\n";
}

RecipeState load_recipe_state(const std::string& folder, torch::optim::Optimizer& optimizer) {
  const fs::path json_path = fs::path(folder) / "recipe_state.json";
  const fs::path pt_path = fs::path(folder) / "recipe_state.pt";
  if (!fs::exists(json_path) || !fs::exists(pt_path))
    throw std::runtime_error("cannot resume from " + folder + ": recipe_state.json/.pt missing");
  std::ifstream in(json_path);
  const auto j = nlohmann::json::parse(in);
  RecipeState state;
  state.global_step = j.at("global_step").get<int64_t>();
  state.epochs_run = j.at("epochs_run").get<int64_t>();
  state.cursor = {j.at("cursor").at("epoch").get<int64_t>(), j.at("cursor").at("batch_index").get<int64_t>()};
  state.seed = j.at("seed").get<uint64_t>();
  state.total_steps = j.at("total_steps").get<int64_t>();
  torch::serialize::InputArchive archive;
  archive.load_from(pt_path.string());
  optimizer.load(archive);
  torch::Tensor rng;
  archive.read("rng_state", rng);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the global generator
  generator.set_state(rng);
  return state;
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json checkpoint_manifest(const config::Config& cfg, const std::string& recipe, int64_t step,
                                   int64_t epochs_run, double loss, torch::ScalarType dtype) {
  return {{"step", step},
          {"epoch", epochs_run},
          {"loss", std::isfinite(loss) ? nlohmann::json(loss) : nlohmann::json()},
          {"recipe", recipe},
          {"compile", cfg.get_bool("compile", false)},
          {"dtype", dtype == torch::kBFloat16 ? "bf16" : "fp32"},
          {"time", utc_timestamp()},
          {"config", cfg.to_yaml()}};
}

std::string find_resume_folder(const std::optional<std::string>& checkpoint_dir, const std::string& output_dir) {
  if (checkpoint_dir && read_manifest(*checkpoint_dir)) return *checkpoint_dir;
  if (auto newest = newest_complete_checkpoint(output_dir)) return newest->path;
  throw std::runtime_error("resume_from_checkpoint is true but " + output_dir +
                           " holds no complete checkpoint (and checkpointer.checkpoint_dir is not one)");
}

bool has_component(const config::Config& cfg, const std::string& key) {
  const YAML::Node node = cfg.at(key);
  return node.IsDefined() && node.IsMap();
}

nlohmann::json memory_budget_event(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                                   const std::vector<torch::Tensor>& trainable) {
  const auto bytes = peft::parameter_bytes(model);
  const int64_t optimizer_bytes = optimizer_state_bytes(optimizer, trainable);
  const double mib = 1024.0 * 1024.0;
  std::ostringstream line;
  line.precision(3);
  line << "memory: frozen weights " << double(bytes.frozen) / mib << " MiB (" << bytes.frozen_params << " params";
  if (bytes.nf4_params > 0) line << ", " << bytes.nf4_params << " in NF4";
  line << "), trainable weights " << double(bytes.trainable) / mib << " MiB (" << bytes.trainable_params
       << " params), gradients " << double(bytes.trainable) / mib << " MiB, optimizer states "
       << double(optimizer_bytes) / mib << " MiB";
  return {{"event", "info"},
          {"message", line.str()},
          {"memory",
           {{"frozen_bytes", bytes.frozen},
            {"trainable_bytes", bytes.trainable},
            {"gradient_bytes", bytes.trainable},  // one gradient per trainable weight, same dtype
            {"optimizer_bytes", optimizer_bytes},
            {"frozen_params", bytes.frozen_params},
            {"trainable_params", bytes.trainable_params},
            {"nf4_params", bytes.nf4_params},
            {"nf4_bytes", bytes.nf4_bytes}}}};
}

}  // namespace tb::training
