#include "compile/compiled_decoder.h"

#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>


#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include "compile/fused_attention.h"
#include "compile/fused_kernels.h"
#include "compile/fused_nf4.h"
#include "checkpoint/atomic_file.h"
#include "text/json_file.h"
#include "text/json_text.h"

namespace fs = std::filesystem;

namespace tb::compile {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// TUNEBENCH_COMPILE_PLANT_ERROR: a wrong attention kernel, for the tests of the warm-up's judge.
double planted_attention_error() {
  const char* text = std::getenv("TUNEBENCH_COMPILE_PLANT_ERROR");
  return text && *text ? std::atof(text) : 0.0;
}

// A norm through the fused kernel; Gemma's (1 + w) norm, which the kernel does not compute, as its
// eager module inside the compiled step.
torch::Tensor compiled_norm(models::RMSNormImpl& norm, const torch::Tensor& x, const CompilePlan& plan) {
  return norm.offset || plan.runs_eager("norms") ? norm.forward(x) : fused_rms_norm(x, norm.scale, norm.eps);
}

torch::Tensor compiled_projection(torch::nn::AnyModule& projection, const torch::Tensor& x, const CompilePlan& plan) {
  return plan.runs_eager("mlp projections") ? projection.forward(x) : project(projection, x, plan.gemm);
}

// One decoder layer through the fused kernels; the pieces they do not cover (ModelArgs' family
// features, eager_pieces()) run as the eager ops in their place.
torch::Tensor compiled_layer(models::TransformerSelfAttentionLayerImpl& layer, const torch::Tensor& x,
                             const models::PositionInfo& pos, const CompilePlan& plan) {
  const auto normed = compiled_norm(*layer.sa_norm, x, plan);
  torch::Tensor attn;
  if (plan.runs_eager("attention")) {
    attn = layer.attn->forward(normed, pos);
  } else {
    attn = compiled_attention(*layer.attn, normed, pos, plan.attn_block, plan.gemm);
    if (static const double planted = planted_attention_error(); planted != 0) attn = attn * (1.0 + planted);
  }
  torch::Tensor h, n;
  if (layer.sa_scale) {
    h = x + compiled_norm(*layer.sa_scale, attn, plan);
    n = compiled_norm(*layer.mlp_norm, h, plan);
  } else if (layer.mlp_norm->offset || plan.runs_eager("norms")) {
    h = x + attn;
    n = layer.mlp_norm->forward(h);
  } else {
    std::tie(h, n) = fused_add_rms_norm(x, attn, layer.mlp_norm->scale, layer.mlp_norm->eps);
  }
  auto& mlp = *layer.mlp;
  torch::Tensor gate, up;
  if (mlp.fused()) {
    const auto both = compiled_projection(mlp.gate_up_proj, n, plan);
    const int64_t hidden = both.size(-1) / 2;
    gate = both.narrow(-1, 0, hidden);
    up = both.narrow(-1, hidden, hidden);
  } else {
    gate = compiled_projection(mlp.w1, n, plan);  // w1 before w3, as FeedForward runs them
    up = compiled_projection(mlp.w3, n, plan);
  }
  const bool fused_swiglu_ok = mlp.activation == models::Activation::silu && gate.is_contiguous() &&
                               up.is_contiguous() && !plan.runs_eager("swiglu");
  const auto act = fused_swiglu_ok ? fused_swiglu(gate, up) : models::gated_activation(gate, up, mlp.activation);
  auto m = compiled_projection(mlp.w2, act, plan);
  if (layer.mlp_scale) m = compiled_norm(*layer.mlp_scale, m, plan);
  return h + m;
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

}  // namespace

std::vector<std::string> eager_pieces(const models::ModelArgs& a) {
  std::vector<std::string> out;
  if (a.norm_offset) out.push_back("(1 + w) RMSNorm");
  if (a.qk_norm) out.push_back("q/k norms");
  if (a.rotary_dim() < a.head_dim()) out.push_back("partial rotary");
  if (a.attn_softcap > 0) out.push_back("soft-capped attention");
  if (a.activation != models::Activation::silu) out.push_back("GeGLU");
  if (a.final_softcap > 0) out.push_back("loss of soft-capped logits");
  return out;
}

bool CompilePlan::runs_eager(const char* piece) const {
  return std::find(eager_kernels.begin(), eager_kernels.end(), piece) != eager_kernels.end();
}

nlohmann::json CompilePlan::to_json() const {
  nlohmann::json j = {{"ce_chunk_rows", ce_chunk_rows}, {"attn_block", attn_block}, {"gemm", gemm_backend_name(gemm)}};
  if (!eager_kernels.empty()) j["eager_kernels"] = eager_kernels;
  return j;
}

std::optional<CompilePlan> CompilePlan::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  CompilePlan plan;
  plan.ce_chunk_rows = j.value("ce_chunk_rows", int64_t{0});
  plan.attn_block = j.value("attn_block", int64_t{0});
  const auto gemm = parse_gemm_backend(j.value("gemm", ""));
  if (plan.ce_chunk_rows < 1 || plan.attn_block < 1 || !gemm) return std::nullopt;
  if (*gemm == GemmBackend::onednn && !onednn_available()) return std::nullopt;  // a plan of another build
  plan.gemm = *gemm;
  if (j.contains("eager_kernels") && j["eager_kernels"].is_array())
    for (const auto& piece : j["eager_kernels"])
      if (piece.is_string() && std::find(kFusedPieces.begin(), kFusedPieces.end(), piece.get<std::string>()) != kFusedPieces.end())
        plan.eager_kernels.push_back(piece.get<std::string>());
  return plan;
}

CompiledDecoderImpl::CompiledDecoderImpl(models::TransformerDecoder original) : orig_(std::move(original)) {
  register_module("_orig_mod", orig_);
}

torch::Tensor CompiledDecoderImpl::forward_hidden(const torch::Tensor& tokens, const torch::Tensor& input_pos) {
  auto& m = *orig_;
  auto h = m.embed(tokens);
  const auto pos = m.make_positions(tokens.size(0), tokens.size(1), input_pos, {}, tokens.device());
  for (int64_t i = 0; i < m.num_layers(); ++i) h = compiled_layer(m.layer(i), h, pos, plan);
  return compiled_norm(*m.norm, h, plan);
}

torch::Tensor CompiledDecoderImpl::output_weight() {
  auto& m = *orig_;
  if (m.args().final_softcap > 0) return {};  // soft-capped logits: the eager loss
  if (m.tied()) return m.tok_embeddings->weight;
  const auto params = m.output.ptr()->named_parameters(/*recurse=*/true);
  if (params.size() == 1 && params.contains("weight")) return params["weight"];
  return {};  // LoRA on the output: its own forward
}

torch::Tensor CompiledDecoderImpl::token_loss_sum(const torch::Tensor& hidden, const torch::Tensor& labels,
                                                  const models::LossSpec& spec) {
  const auto weight = output_weight();
  if (!weight.defined() || plan.runs_eager("loss")) return models::token_loss_sum(*orig_, hidden, labels, spec);
  return fused_linear_cross_entropy(hidden.reshape({-1, hidden.size(-1)}), weight, labels.reshape({-1}),
                                    spec.ignore_index, plan.ce_chunk_rows, plan.gemm);
}

CompiledDecoder wrap_compile(models::TransformerDecoder model) { return CompiledDecoder(std::move(model)); }

// ---- plan cache ------------------------------------------------------------------------------------------

std::string plan_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "tunebench" / "compile").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "tunebench" / "compile").string();
  return (fs::temp_directory_path() / "tunebench-compile-cache").string();
}

std::string plan_cache_key(const models::ModelArgs& a, torch::ScalarType dtype, int64_t batch, int64_t seq_len) {
  std::ostringstream key;
  // The leading version changes whenever what a plan was timed with changes (v4: kernels built with OpenMP;
  // v5: attention tiles of whole key rows, in bf16 through oneDNN; v6: the fused loss's bf16 logits).
  key << "v6 vocab=" << a.vocab_size << " layers=" << a.num_layers << " heads=" << a.num_heads
      << " kv=" << a.num_kv_heads << " dim=" << a.embed_dim << " hidden=" << a.intermediate_dim
      << " tied=" << a.tie_word_embeddings << " dtype=" << c10::toString(dtype) << " batch=" << batch
      << " seq=" << seq_len << " isa=" << instruction_set() << " threads=" << at::get_num_threads()
      << " libtorch=" << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH;
  return key.str();
}

namespace {
fs::path plan_path(const std::string& key) {
  std::ostringstream name;
  name << std::hex << std::hash<std::string>{}(key) << ".json";
  return fs::path(plan_cache_dir()) / name.str();
}
}  // namespace

std::optional<CompilePlan> load_cached_plan(const std::string& key) {
  const auto j = text::try_read_json_file(plan_path(key).string());
  if (!j || !j->is_object() || j->value("key", "") != key || !j->contains("plan")) return std::nullopt;  // another key's hash
  return CompilePlan::from_json((*j)["plan"]);
}

// A cache: a plan that cannot be stored (a full or read-only disk) is measured again next time.
void store_plan(const std::string& key, const CompilePlan& plan) {
  std::error_code ec;
  const fs::path path = plan_path(key);
  fs::create_directories(path.parent_path(), ec);
  try {
    checkpoint::write_file_atomic(path.string(), text::json_text(nlohmann::json{{"key", key}, {"plan", plan.to_json()}}, 2) + "\n");
  } catch (const std::exception&) {
  }
}

// ---- warm-up ---------------------------------------------------------------------------------------------

nlohmann::json WarmupReport::event() const {
  nlohmann::json e = {{"event", "compile"},           {"seconds", seconds},
                      {"cache_hit", cache_hit},        {"fallback", fallback},
                      {"loss_rel_diff", loss_rel_diff}, {"grad_rel_diff", grad_rel_diff}};
  if (!reason.empty()) e["reason"] = reason;
  if (plan_given) e["plan_given"] = true;
  if (!error_vs_fp32.is_null()) e["error_vs_fp32"] = error_vs_fp32;
  if (!plan.is_null()) e["plan"] = plan;
  e["eager_pieces"] = eager;
  return e;
}

namespace {

std::vector<torch::Tensor> take_grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (auto p : params) {
    out.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::Tensor());
    p.mutable_grad() = torch::Tensor();
  }
  return out;
}

// The eager step once more in fp32 on the same weights (bf16 tensors upcast in place, exactly, and back
// after): the loss and the gradients of `params` (fp32) that a bf16 step is judged against.
std::pair<double, std::vector<torch::Tensor>> fp32_reference(models::TransformerDecoderImpl& model,
                                                             const data::TensorBatch& batch,
                                                             const models::LossSpec& spec,
                                                             const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> upcast;
  for (auto t : model.parameters())
    if (t.scalar_type() == torch::kBFloat16) upcast.push_back(t);
  for (auto t : model.buffers())
    if (t.scalar_type() == torch::kBFloat16) upcast.push_back(t);
  for (auto& t : upcast) t.set_data(t.data().to(torch::kFloat));
  double loss = 0;
  std::vector<torch::Tensor> grads;
  try {
    auto l = models::token_loss_sum(model, model.forward_hidden(batch.tokens, batch.input_pos), batch.labels, spec);
    l.backward();
    loss = l.item<double>();
    grads = take_grads(params);
  } catch (...) {
    for (auto& t : upcast) t.set_data(t.data().to(torch::kBFloat16));
    throw;
  }
  for (auto& t : upcast) t.set_data(t.data().to(torch::kBFloat16));
  return {loss, std::move(grads)};
}

// Which part of the model a parameter belongs to, for the judge's per-group errors.
std::string parameter_group(const std::string& name) {
  std::string group = name.find(".attn.") != std::string::npos  ? "attention"
                      : name.find(".mlp.") != std::string::npos ? "mlp"
                      : name.find("tok_embeddings") != std::string::npos ? "embeddings"
                      : name.find("output") != std::string::npos         ? "output"
                                                                         : "norms";
  return name.find("lora_") != std::string::npos ? group + " (LoRA)" : group;
}

// The bf16 judge (kErrorFactor, kErrorFloor, kErrorBound): each step's error against the fp32 reference,
// of the loss and of each group's gradients (the norm of the group's difference over the norm of its
// reference). Fills report.error_vs_fp32; returns why the fused step fails, or "" when it passes.
std::string judge_against_fp32(models::TransformerDecoderImpl& model, const std::vector<torch::Tensor>& params,
                               double eager_loss, const std::vector<torch::Tensor>& eager_grads, double fused_loss,
                               const std::vector<torch::Tensor>& fused_grads, double ref_loss,
                               const std::vector<torch::Tensor>& ref_grads, nlohmann::json& out) {
  std::map<const void*, std::string> names;
  for (const auto& item : model.named_parameters()) names[item.value().unsafeGetTensorImpl()] = item.key();
  struct Sums {
    double ref = 0, eager = 0, fused = 0;  // squared norms
  };
  std::map<std::string, Sums> groups;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!ref_grads[i].defined()) continue;
    Sums& g = groups[parameter_group(names[params[i].unsafeGetTensorImpl()])];
    const auto ref = ref_grads[i].to(torch::kFloat);
    auto sq_diff = [&](const torch::Tensor& t) {
      const auto d = (t.defined() ? t.to(torch::kFloat) : torch::zeros_like(ref)) - ref;
      return d.square().sum().item<double>();
    };
    g.ref += ref.square().sum().item<double>();
    g.eager += sq_diff(eager_grads[i]);
    g.fused += sq_diff(fused_grads[i]);
  }
  std::string failure;
  auto judge = [&](const std::string& what, double eager, double fused) {
    out[what == "loss" ? "loss" : "groups"];
    nlohmann::json& slot = what == "loss" ? out["loss"] : out["groups"][what];
    slot = {{"eager", eager}, {"compiled", fused}};
    const bool ok = fused <= std::max(kErrorFactor * eager, kErrorFloor) && fused <= kErrorBound;
    if (!ok && failure.empty()) {
      std::ostringstream why;
      why << what << ": the compiled step is " << fused << " away from the fp32 step, eager bf16 " << eager
          << " (allowed: " << kErrorFactor << "x eager's, at least " << kErrorFloor << ", at most " << kErrorBound
          << ")";
      failure = why.str();
    }
  };
  judge("loss", relative(eager_loss, ref_loss), relative(fused_loss, ref_loss));
  for (const auto& [name, g] : groups) {
    const double norm = std::sqrt(std::max(g.ref, 1e-30));
    judge(name, std::sqrt(g.eager) / norm, std::sqrt(g.fused) / norm);
  }
  return failure;
}

// The attention tile that runs forward + backward fastest at this batch's shape, timed on random
// q, k, v (their own generator: the run's random stream is not touched).
int64_t tune_attention_block(const models::ModelArgs& args, torch::ScalarType dtype, int64_t batch, int64_t seq_len,
                             GemmBackend gemm) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat);
  const int64_t d = args.head_dim();
  auto draw = [&](int64_t heads) {
    return torch::randn({batch, heads, seq_len, d}, gen, opts).to(dtype).requires_grad_(true);
  };
  const auto q = draw(args.num_heads), k = draw(args.num_kv_heads), v = draw(args.num_kv_heads);
  const auto up = torch::randn({batch, seq_len, args.num_heads, d}, gen, opts).to(dtype);
  int64_t best = CompilePlan{}.attn_block;
  double best_s = INFINITY;
  for (int64_t block : {64, 128, 256}) {  // smaller tiles lose to the per-matmul overhead here
    double s = INFINITY;
    for (int run = 0; run < 2; ++run) {  // the faster of two: the first also warms the caches
      const auto start = Clock::now();
      (fused_causal_attention(q, k, v, block, gemm) * up).sum().backward();
      s = std::min(s, seconds_since(start));
    }
    if (s < best_s) {
      best_s = s;
      best = block;
    }
    if (block >= seq_len) break;  // larger tiles are the same single tile
  }
  return best;
}

// The GEMM backend that runs the decoder layer's projection shapes (forward and both gradient
// products, on `rows` random rows of their own generator) plus `time_loss`'s fused loss fastest; ATen
// when oneDNN is not in this build.
GemmBackend tune_gemm_backend(const models::ModelArgs& args, torch::ScalarType dtype, int64_t rows,
                              const std::function<double(GemmBackend)>& time_loss) {
  if (!onednn_available()) return GemmBackend::aten;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat);
  const int64_t dim = args.embed_dim, q = args.num_heads * args.head_dim(), kv = args.num_kv_heads * args.head_dim();
  struct Shape {
    torch::Tensor x, w, dy;
  };
  std::vector<Shape> shapes;
  for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{
           {dim, q}, {dim, kv}, {q, dim}, {dim, args.intermediate_dim}, {args.intermediate_dim, dim}})
    shapes.push_back({torch::randn({rows, in}, gen, opts).to(dtype).requires_grad_(true),
                      (torch::randn({out, in}, gen, opts) * 0.02).to(dtype).requires_grad_(true),
                      torch::randn({rows, out}, gen, opts).to(dtype)});
  auto time_projections = [&](GemmBackend backend) {
    double s = INFINITY;
    for (int run = 0; run < 2; ++run) {  // the faster of two: the first also builds the kernels
      const auto start = Clock::now();
      for (auto& shape : shapes) gemm_linear(shape.x, shape.w, backend).backward(shape.dy);
      s = std::min(s, seconds_since(start));
    }
    return s;
  };
  const double aten = time_projections(GemmBackend::aten), onednn = time_projections(GemmBackend::onednn);
  // A backend half again as fast on the layer's products wins outright (fp32 on an AVX-512 machine whose
  // BLAS runs AVX2 kernels: about 2x); closer than that, the loss's products decide (in bf16 both
  // multiply through oneDNN, but ATen's bf16 head products take fp32 copies). Each loss timing costs
  // about a steady step's head products, so a clear decision keeps the warm-up short.
  if (onednn * 1.5 < aten) return GemmBackend::onednn;
  if (aten * 1.5 < onednn) return GemmBackend::aten;
  return onednn + time_loss(GemmBackend::onednn) < aten + time_loss(GemmBackend::aten) ? GemmBackend::onednn
                                                                                        : GemmBackend::aten;
}

// The chunk size of the fused loss that runs fastest here, timed on this batch's hidden states; the
// attention tile timed at the batch's shape.
CompilePlan tune(CompiledDecoderImpl& compiled, const torch::Tensor& hidden, const torch::Tensor& labels,
                 const models::LossSpec& spec) {
  const auto weight = compiled.output_weight();
  CompilePlan best;
  const auto& args = compiled.orig_mod()->args();
  const auto h = hidden.detach().reshape({-1, hidden.size(-1)}).requires_grad_(true);
  const int64_t rows = h.size(0);
  // The fused loss's products weigh in the backend's choice (with ATen a bf16 head's gradient products
  // take fp32 copies); they dominate the tuning time, so each (backend, chunk) is timed once.
  std::map<std::pair<GemmBackend, int64_t>, double> loss_seconds;
  auto time_loss_at = [&](GemmBackend backend, int64_t chunk) {
    if (!weight.defined()) return 0.0;
    if (auto known = loss_seconds.find({backend, chunk}); known != loss_seconds.end()) return known->second;
    const auto start = Clock::now();
    fused_linear_cross_entropy(h, weight, labels.reshape({-1}), spec.ignore_index, chunk, backend);  // with gradients
    return loss_seconds[{backend, chunk}] = seconds_since(start);
  };
  best.gemm = tune_gemm_backend(args, hidden.scalar_type(), rows,
                                [&](GemmBackend backend) { return time_loss_at(backend, best.ce_chunk_rows); });
  best.attn_block = tune_attention_block(args, hidden.scalar_type(), hidden.size(0), hidden.size(1), best.gemm);
  if (!weight.defined()) return best;
  double best_s = INFINITY;
  for (int64_t chunk : {256, 512, 1024, 2048}) {
    if (chunk > rows && chunk != 256) break;
    if (chunk == 256 && rows >= 1024) continue;  // many small head products: it never won at these sizes
    const double s = time_loss_at(best.gemm, chunk);
    if (s < best_s) {
      best_s = s;
      best.ce_chunk_rows = chunk;
    }
  }
  return best;
}

}  // namespace

std::optional<std::string> unsupported_device_reason(const torch::Device& device) {
  if (device.is_cpu()) return std::nullopt;
  return "no " + c10::DeviceTypeName(device.type()) +
         " backend yet (graph capture of the step and device kernels plug in here); the step runs eager";
}

WarmupReport warm_up(CompiledDecoderImpl& compiled, const data::TensorBatch& batch, const models::LossSpec& spec,
                     const std::vector<torch::Tensor>& params, double tolerance, const CompilePlan* given) {
  const auto start = Clock::now();
  WarmupReport report;
  auto& model = *compiled.orig_mod();
  report.eager = eager_pieces(model.args());
  // Both passes draw the same dropout masks (LoRA dropout), and the run's random stream afterwards
  // is where one eager step would have left it.
  auto generator = at::detail::getDefaultCPUGenerator();
  const auto rng_before = generator.get_state();

  // The eager step on this batch: the reference.
  auto eager_loss = models::token_loss_sum(model, model.forward_hidden(batch.tokens, batch.input_pos), batch.labels, spec);
  eager_loss.backward();
  if (auto reason = unsupported_device_reason(model.tok_embeddings->weight.device())) {
    report.fallback = true;
    report.reason = *reason;
    report.loss_sum = eager_loss.detach();  // its gradients stay in place
    report.seconds = seconds_since(start);
    return report;
  }
  const auto eager_grads = take_grads(params);
  const auto rng_after = generator.get_state();

  // The plan.
  const auto dtype = model.tok_embeddings->weight.scalar_type();
  const std::string key = plan_cache_key(model.args(), dtype, batch.tokens.size(0), batch.tokens.size(1));
  if (given) {
    compiled.plan = *given;
    report.plan_given = true;
  } else if (auto cached = load_cached_plan(key)) {
    compiled.plan = *cached;
    report.cache_hit = true;
  } else {
    torch::Tensor hidden;
    {
      torch::NoGradGuard no_grad;
      hidden = compiled.forward_hidden(batch.tokens, batch.input_pos);
    }
    compiled.plan = tune(compiled, hidden, batch.labels, spec);
    store_plan(key, compiled.plan);
  }

  // The fused step, judged: in fp32 against eager; in bf16 against the step in fp32 (computed once).
  const char* force = std::getenv("TUNEBENCH_COMPILE_FORCE_MISMATCH");
  const bool forced = force && std::string(force) == "1";
  std::optional<std::pair<double, std::vector<torch::Tensor>>> reference;
  auto run_fused = [&]() -> std::pair<torch::Tensor, std::string> {
    generator.set_state(rng_before);
    auto fused_loss = compiled.token_loss_sum(compiled.forward_hidden(batch.tokens, batch.input_pos), batch.labels, spec);
    fused_loss.backward();
    report.loss_rel_diff = relative(fused_loss.item<double>(), eager_loss.item<double>());
    report.grad_rel_diff = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& g = params[i].grad();
      if (!g.defined() || !eager_grads[i].defined()) {
        if (g.defined() != eager_grads[i].defined()) report.grad_rel_diff = INFINITY;
        continue;
      }
      const double ref = eager_grads[i].norm().item<double>();
      const double diff = (g.to(torch::kFloat) - eager_grads[i].to(torch::kFloat)).norm().item<double>();
      report.grad_rel_diff = std::max(report.grad_rel_diff, diff / std::max(ref, 1e-12));
    }
    if (dtype != torch::kBFloat16) {
      if (report.loss_rel_diff <= tolerance && report.grad_rel_diff <= tolerance) return {fused_loss, ""};
      std::ostringstream why;
      why << "loss differs by " << report.loss_rel_diff << " and gradients by " << report.grad_rel_diff
          << " (relative; tolerance " << tolerance << ")";
      return {fused_loss, why.str()};
    }
    // bf16 eager is itself some way from the exact step: both are judged against the step in fp32.
    auto fused_grads = take_grads(params);
    if (!reference) {
      generator.set_state(rng_before);
      reference = fp32_reference(model, batch, spec, params);
    }
    report.error_vs_fp32 = nlohmann::json();
    const std::string failure =
        judge_against_fp32(model, params, eager_loss.item<double>(), eager_grads, fused_loss.item<double>(),
                           fused_grads, reference->first, reference->second, report.error_vs_fp32);
    for (size_t i = 0; i < params.size(); ++i) {
      auto p = params[i];
      p.mutable_grad() = fused_grads[i];
    }
    return {fused_loss, failure};
  };
  auto [fused_loss, failure] = run_fused();
  // A failed check sends the fused kernels back to eager one at a time: the first piece whose eager ops
  // make the step pass runs eager for the run, the rest stays fused. Only when none does is the whole
  // step eager.
  if (!failure.empty() && !forced) {
    const std::string first_failure = failure;
    const nlohmann::json first_errors = report.error_vs_fp32;
    for (const std::string& piece : kFusedPieces) {
      take_grads(params);
      compiled.plan.eager_kernels = {piece};
      std::tie(fused_loss, failure) = run_fused();
      if (failure.empty()) {
        report.eager.push_back(piece + " (its fused kernel failed the check: " + first_failure + ")");
        break;
      }
    }
    if (!failure.empty()) {
      compiled.plan.eager_kernels.clear();
      failure = first_failure;
      report.error_vs_fp32 = first_errors;
    }
  }
  report.plan = compiled.plan.to_json();
  if (forced || !failure.empty()) {
    report.fallback = true;
    report.reason = (forced ? "forced mismatch (TUNEBENCH_COMPILE_FORCE_MISMATCH=1)" : std::string()) +
                    (forced && !failure.empty() ? "; " : "") + failure +
                    (forced ? "" : " (and with any one fused kernel run as eager ops)");
    for (size_t i = 0; i < params.size(); ++i) {
      auto p = params[i];
      p.mutable_grad() = eager_grads[i];
    }
    report.loss_sum = eager_loss.detach();
  } else {
    report.loss_sum = fused_loss.detach();
  }
  generator.set_state(rng_after);
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace tb::compile
