// tunebench-cli: the headless front end (docs/contracts.md "The CLI"), modelled on torchtune's `tune`.
// Exit codes: 0 success, 1 user error with a one-line reason on stderr, 130 stopped by a second
// SIGINT/SIGTERM (or eval by the first). No exception ends it: main catches everything; SIGINT/SIGTERM
// ask the work in scope to stop (training/stop_signals.h), SIGPIPE is ignored.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli_bench_read.h"
#include "cli_download.h"
#include "cli_progress.h"

#include "bench/compile_bench.h"
#include "bench/step_bench.h"
#include "bench/tokenize_bench.h"
#include "checkpoint/atomic_file.h"
#include "components/builtin.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/suggest.h"
#include "data/open_tokenizer.h"
#include "distributed/launcher.h"
#include "distributed/world.h"
#include "export/checkpoint_config.h"
#include "export/gguf_export.h"
#include "inference/data_preview.h"
#include "inference/evaluate.h"
#include "inference/generate.h"
#include "inference/tokenize_lines.h"
#include "recipe.h"
#include "run_harness.h"
#include "text/json_text.h"
#include "training/metric_loggers.h"
#include "training/stop_signals.h"

namespace fs = std::filesystem;

namespace {

constexpr int kOk = 0;
constexpr int kUserError = 1;

int fail(const std::string& reason, int code = kUserError) {
  std::cerr << "tunebench-cli: " << reason << "\n";
  return code;
}

// A verb's failure; a stop asked for (Ctrl-C, SIGTERM) ends it with 130, as the shell reports an interrupt.
int fail(const std::string& verb, const std::exception& e) {
  return fail(verb + ": " + e.what(), dynamic_cast<const tb::config::Interrupted*>(&e) ? 130 : kUserError);
}

// Every recipe name we know of: the built-in recipes, then those the bundled configs are written for.
std::vector<std::string> known_recipes() {
  std::vector<std::string> names;
  for (const auto& r : tb::recipes()) names.push_back(r.name);
  for (const auto& b : tb::config::bundled_configs())
    if (!b.recipe.empty() && b.recipe != tb::config::kInferenceVerbs &&
        std::find(names.begin(), names.end(), b.recipe) == names.end())
      names.push_back(b.recipe);
  return names;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// ---- ls --------------------------------------------------------------------------------------------------

int cmd_ls() {
  std::map<std::string, std::vector<std::string>> by_recipe;
  for (const auto& b : tb::config::bundled_configs()) by_recipe[b.recipe].push_back(b.name);
  std::vector<std::string> names = known_recipes();
  size_t width = 6;
  for (const auto& n : names) width = std::max(width, n.size());
  auto row = [&](const std::string& recipe, const std::string& config) {
    std::cout << recipe << std::string(width + 2 - recipe.size(), ' ') << config << "\n";
  };
  row("RECIPE", "CONFIG");
  for (const auto& recipe : names) {
    bool available = tb::find_recipe(recipe) != nullptr;
    std::string label = recipe;
    const auto& configs = by_recipe[recipe];
    if (configs.empty()) row(label, "");
    for (size_t i = 0; i < configs.size(); ++i) row(i == 0 ? label : "", configs[i]);
    if (!available) std::cout << std::string(width + 2, ' ') << "(recipe not built into this version yet)\n";
  }
  for (const auto& name : by_recipe[tb::config::kInferenceVerbs]) row("(eval, generate)", name);
  for (const auto& name : by_recipe[""]) row("(any)", name);
  return kOk;
}

// ---- cp --------------------------------------------------------------------------------------------------

int cmd_cp(const std::string& source_name, std::string destination, bool force) {
  std::string source = tb::config::find_config(source_name);
  if (source.empty())
    return fail("no bundled config or file named '" + source_name + "' (see 'tunebench-cli ls')");
  std::error_code ec;
  fs::path dst(destination);
  if (fs::is_directory(dst, ec)) dst /= fs::path(source).filename();
  if (!dst.has_extension()) dst += ".yaml";  // as `tune cp` does
  if (fs::exists(dst, ec) && !force) return fail(dst.string() + " already exists (use --force to overwrite it)");
  fs::path folder = dst.has_parent_path() ? dst.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec)) return fail("folder " + folder.string() + " does not exist");

  std::ifstream in(source, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return fail("cannot read " + source);
  try {
    tb::checkpoint::write_file_atomic(dst.string(), text);  // a reader never sees half a file
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  std::cout << "Copied " << source_name << " to " << dst.string() << "\n";
  return kOk;
}

// ---- validate and run ------------------------------------------------------------------------------------

// Loads and validates; prints every diagnostic. nullopt on error.
std::optional<tb::config::Config> load(const std::string& config, const std::vector<std::string>& overrides,
                                       std::string recipe, bool components) {
  if (recipe.empty()) {
    std::string path = tb::config::find_config(config);
    if (!path.empty()) recipe = tb::config::recipe_for_config(path);
  }
  tb::config::LoadOptions options;
  options.overrides = overrides;
  options.recipe = recipe;
  if (components) options.registry = &tb::components::builtin();
  tb::config::LoadResult result = tb::config::load_file(config, options);
  for (const auto& d : result.diagnostics) std::cerr << d.format() << "\n";
  if (!result.ok()) return std::nullopt;
  return result.config;
}

// What eval, generate and export read: a config (checked as `verb`), or a checkpoint folder Tunebench wrote
// (its manifest's config pointed at its own files, export/checkpoint_config.h); a model it names by Hub repo id
// is fetched first. nullopt on error, said.
std::optional<tb::config::Config> load_config_or_checkpoint(const std::string& command, const std::string& config,
                                                            const std::string& checkpoint,
                                                            const std::vector<std::string>& overrides,
                                                            const std::string& verb, bool adapter = false) {
  if (config.empty() == checkpoint.empty()) {
    fail(command + ": give --config or --checkpoint (one of them)");
    return std::nullopt;
  }
  if (checkpoint.empty()) {
    auto cfg = load(config, overrides, verb, true);
    if (cfg && !fetch_models_for(command, *cfg)) return std::nullopt;  // a model named by repo id, not yet cached
    return cfg;
  }
  try {
    const auto result = tb::exporting::load_checkpoint_config(checkpoint, adapter, overrides);
    for (const auto& d : result.diagnostics) std::cerr << d.format() << "\n";
    if (result.ok()) return result.config;
  } catch (const std::exception& e) {
    fail(command + ": " + e.what());
  }
  return std::nullopt;
}

int cmd_validate(const std::string& config, const std::vector<std::string>& overrides, const std::string& recipe,
                 bool components) {
  auto cfg = load(config, overrides, recipe, components);
  if (!cfg) return kUserError;
  std::cout << "Config is well-formed!\n";
  return kOk;
}

int cmd_run(const std::string& recipe_name, const std::string& config, const std::vector<std::string>& overrides) {
  const tb::RecipeInfo* recipe = tb::find_recipe(recipe_name);
  if (!recipe) {
    std::vector<std::string> names;
    for (const auto& r : tb::recipes()) names.push_back(r.name);
    return fail("unknown recipe '" + recipe_name + "' (known recipes: " +
                (names.empty() ? std::string("none are built into this version yet") : join(names)) + ")");
  }
  auto cfg = load(config, overrides, recipe_name, true);
  if (!cfg) return kUserError;

  // A worker of a multi-process run other than rank 0 neither locks the output folder nor writes the log
  // (rank 0 does both); it says on stderr only that it failed, and why.
  int rank = 0;
  if (tb::is_distributed_recipe(recipe_name)) try {
      if (const auto world = tb::distributed::world_from_environment()) rank = world->rank;
    } catch (const std::exception& e) {
      return fail(e.what());
    }
  tb::RunHarness harness;
  harness.rank = rank;
  harness.print_progress = true;
  tb::training::RunControl control;
  const tb::training::StopOnSignal stoppable(control);
  const tb::training::RunResult result = tb::run_with_harness(*recipe, *cfg, control, harness);
  if (result.status == tb::training::RunStatus::Failed)
    return fail((rank > 0 ? "rank " + std::to_string(rank) + ": " : std::string()) + "run failed: " +
                (result.message.empty() ? std::string("(no reason given)") : result.message));
  return kOk;
}

// `run --nproc-per-node N`: N workers of this program on this machine, each running the recipe as one
// rank (distributed/launcher.h). The config is checked here first, so its errors are said once.
int cmd_launch(const std::string& recipe_name, const std::string& config, const std::vector<std::string>& overrides,
               tb::distributed::LaunchOptions options, const std::string& rdzv_endpoint) {
  if (!tb::is_distributed_recipe(recipe_name))
    return fail("--nproc-per-node runs a distributed recipe (full_finetune_distributed, lora_finetune_distributed), not " +
                recipe_name);
  const auto cfg = load(config, overrides, recipe_name, true);
  if (!cfg) return kUserError;
  // A num_threads the config names is each worker's: the workers on this machine share its cores.
  std::vector<std::string> worker_overrides = overrides;
  if (cfg->root["num_threads"].IsDefined() && !cfg->root["num_threads"].IsNull()) {
    const auto split = tb::config::worker_threads(tb::config::setting_int(*cfg, "num_threads"), options.nproc_per_node);
    if (!split.note.empty()) {
      std::cerr << "tunebench-cli: " << split.note << "\n";
      worker_overrides.push_back("num_threads=" + std::to_string(split.threads));
    }
  }
  if (!rdzv_endpoint.empty()) {
    const auto colon = rdzv_endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0) return fail("--rdzv-endpoint must be HOST:PORT, got '" + rdzv_endpoint + "'");
    options.master_addr = rdzv_endpoint.substr(0, colon);
    try {
      options.master_port = std::stoi(rdzv_endpoint.substr(colon + 1));
    } catch (const std::exception&) {
      return fail("--rdzv-endpoint must be HOST:PORT, got '" + rdzv_endpoint + "'");
    }
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fail("cannot find this program to start its workers: " + ec.message());
  options.worker_argv = {self.string(), "run", recipe_name, "--config", config};
  options.worker_argv.insert(options.worker_argv.end(), worker_overrides.begin(), worker_overrides.end());
  try {
    const auto result = tb::distributed::launch(options, tb::training::stop_signal_received(),
                                                [](const std::string& line) { std::cerr << "tunebench-cli: " << line << "\n"; });
    if (result.exit_code == 130) return fail(result.message, 130);
    if (result.exit_code != 0) return fail("run failed: " + result.message);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return kOk;
}

// ---- eval and generate -----------------------------------------------------------------------------------

// Progress on stderr; the last line of stdout is the JSON result (docs/contracts.md "The CLI").
int cmd_eval(const std::string& config, const std::string& checkpoint, const std::vector<std::string>& overrides) {
  auto cfg = load_config_or_checkpoint("eval", config, checkpoint, overrides, tb::config::kInferenceVerbs);
  if (!cfg) return kUserError;
  const bool tty = isatty(STDERR_FILENO) != 0;
  try {
    const ReadProgressPrinter reading("eval");
    const auto result = tb::inference::evaluate(*cfg, [&](int64_t done, int64_t total) {
      if (tty) std::cerr << "\reval: " << done << "/" << total << " samples" << std::flush;
    });
    if (tty) std::cerr << "\n";
    std::cerr << "eval: " << result.weights << "\n";
    for (const auto& w : result.warnings) std::cerr << "eval: warning: " << w << "\n";
    const nlohmann::json line = {{"loss", result.loss},       {"perplexity", result.perplexity}, {"tokens", result.tokens},
                                 {"samples", result.samples}, {"seconds", result.seconds}};
    std::cout << tb::text::json_text(line) << "\n";
    if (!std::isfinite(result.loss))  // the JSON line says null; the exit status says it too
      return fail("eval: the loss is not finite (" + std::to_string(result.loss) + "): the weights hold NaN or Inf?");
  } catch (const std::exception& e) {
    return fail("eval", e);
  }
  return kOk;
}

// The continuation streams to stdout as it is generated; a summary goes to stderr.
int cmd_generate(const std::string& config, const std::string& checkpoint, const std::vector<std::string>& overrides,
                 const tb::inference::GenerateOptions& options) {
  auto cfg = load_config_or_checkpoint("generate", config, checkpoint, overrides, tb::config::kInferenceVerbs);
  if (!cfg) return kUserError;
  try {
    std::string printed;
    const auto result = tb::inference::generate(*cfg, options, [&](const std::string& so_far) {
      // SentencePiece may re-spell the tail as tokens arrive; print only what is settled.
      if (so_far.compare(0, printed.size(), printed) != 0) return;
      std::cout << so_far.substr(printed.size()) << std::flush;
      printed = so_far;
    });
    if (result.text.compare(0, printed.size(), printed) == 0) std::cout << result.text.substr(printed.size());
    std::cout << "\n";
    for (const auto& w : result.warnings) std::cerr << "generate: warning: " << w << "\n";
    std::cerr << "generate: " << result.tokens.size() << " tokens in " << result.seconds << " s"
              << (result.stopped_at_eos ? " (stopped at end of sequence)" : "") << "\n";
  } catch (const std::exception& e) {
    return fail("generate", e);
  }
  return kOk;
}

// ---- export --------------------------------------------------------------------------------------------

// Progress on stderr (a line per tenth off a terminal); the last line of stdout is the JSON result.
int cmd_export_gguf(const std::string& config, const std::string& checkpoint, const std::vector<std::string>& overrides,
                    const tb::exporting::GgufExportOptions& options) {
  // A training config exports as it is; any config needs only what builds the model and its tokenizer.
  auto cfg = load_config_or_checkpoint("export gguf", config, checkpoint, overrides, tb::config::kExportVerb, options.adapter);
  if (!cfg) return kUserError;
  const bool tty = isatty(STDERR_FILENO) != 0;
  std::cerr << "export: loading the model and its weights...\n";
  try {
    size_t last_tenth = 0;
    const auto result = tb::exporting::export_gguf(*cfg, options, [&](size_t done, size_t total, uint64_t bytes) {
      const size_t tenth = total ? done * 10 / total : 10;
      const std::string line = "export: " + std::to_string(done) + "/" + std::to_string(total) + " tensors, " +
                               std::to_string(bytes >> 20) + " MiB";
      if (tty) {
        std::cerr << "\r" << line << std::flush;
      } else if (tenth != last_tenth) {
        std::cerr << line << "\n";
      }
      last_tenth = tenth;
    });
    if (tty) std::cerr << "\n";
    std::cerr << "export: " << result.weights << "\n";
    for (const auto& w : result.warnings) std::cerr << "export: warning: " << w << "\n";
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [type, n] : result.tensors_by_type) types[type] = n;
    const double per_param = result.parameters ? static_cast<double>(result.bytes) / static_cast<double>(result.parameters) : 0;
    const nlohmann::json line = {{"path", result.path},
                                 {"type", options.type},
                                 {"architecture", result.architecture},
                                 {"bytes", result.bytes},
                                 {"parameters", result.parameters},
                                 {"bytes_per_parameter", per_param},
                                 {"tensor_types", types},
                                 {"merged_lora", result.merged_lora},
                                 {"chat_template", result.chat_template},
                                 {"modelfile", result.modelfile.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.modelfile)},
                                 {"seconds", result.seconds}};
    std::cout << tb::text::json_text(line) << "\n";
  } catch (const std::exception& e) {
    return fail("export gguf", e);
  }
  return kOk;
}

// ---- tokenize and data preview ----------------------------------------------------------------------------

struct TokenizeArgs {
  std::string tokenizer, jsonl, file;
  bool add_generation_prompt = false;
};

// One JSON object per input line on stdout; a bad line stops with its file:line on stderr.
int cmd_tokenize(const std::string& config, const std::vector<std::string>& overrides, const TokenizeArgs& t) {
  if (config.empty() == t.tokenizer.empty()) return fail("tokenize: give --tokenizer or --config (one of them)");
  if (t.jsonl.empty() == t.file.empty()) return fail("tokenize: give --jsonl or --file (one of them)");
  try {
    std::shared_ptr<tb::data::Tokenizer> tokenizer;
    if (!t.tokenizer.empty()) {
      tokenizer = tb::data::open_tokenizer(t.tokenizer);
    } else {
      // Any recipe's config (or an eval/export one): only what builds the model and its tokenizer is required.
      auto cfg = load(config, overrides, tb::config::kExportVerb, true);
      if (!cfg) return kUserError;
      if (!cfg->at("tokenizer").IsDefined()) return fail("tokenize: " + config + " has no tokenizer");
      tokenizer = tb::components::builtin().build<std::shared_ptr<tb::data::Tokenizer>>(cfg->at("tokenizer"));
    }
    const bool jsonl = !t.jsonl.empty();
    tb::inference::tokenize_file(*tokenizer, jsonl ? t.jsonl : t.file, jsonl, t.add_generation_prompt, std::cout);
  } catch (const std::exception& e) {
    std::cout << std::flush;
    return fail("tokenize", e);
  }
  return kOk;
}

int cmd_data_preview(const std::string& config, const std::vector<std::string>& overrides, size_t samples, bool json) {
  auto cfg = load(config, overrides, "", true);  // checked against the recipe the config names
  if (!cfg) return kUserError;
  try {
    const ReadProgressPrinter progress("data preview");
    if (json) {
      std::cout << tb::text::json_text(tb::inference::preview_json(tb::inference::preview_dataset(*cfg, samples))) << "\n";
      return kOk;
    }
    // The first rows' samples at once; the counts of every row when they are all read.
    const bool color = isatty(STDOUT_FILENO) != 0;
    bool shown = false;
    const auto preview = tb::inference::preview_dataset(*cfg, samples, [&](const tb::inference::DataPreview& first) {
      shown = bool(std::cout << tb::inference::preview_text(first, color) << std::flush);
    });
    std::cout << (shown ? "every row: " + tb::inference::preview_counts_text(preview) : tb::inference::preview_text(preview, color));
  } catch (const std::exception& e) {
    return fail("data preview", e);
  }
  return kOk;
}

// ---- bench ----------------------------------------------------------------------------------------------

// Progress on stderr, a readable summary, then the figures as the last line of stdout.
int cmd_bench_step(const std::string& config, std::vector<std::string> overrides, std::string recipe_name,
                   const tb::bench::StepBenchOptions& base_options, bool progress_lines) {
  if (recipe_name.empty()) {
    const std::string path = tb::config::find_config(config);
    if (path.empty()) return fail("no bundled config or file named '" + config + "' (see 'tunebench-cli ls')");
    recipe_name = tb::config::recipe_for_config(path);
  }
  const tb::RecipeInfo* recipe = tb::find_recipe(recipe_name);
  if (!recipe) return fail("bench step: no recipe '" + recipe_name + "' (name it with --recipe)");
  const fs::path scratch = tb::bench::bench_scratch_dir();
  const auto bench = tb::bench::bench_overrides(base_options, scratch.string());
  overrides.insert(overrides.end(), bench.begin(), bench.end());  // last, so they win
  auto cfg = load(config, overrides, recipe_name, true);
  if (!cfg) return kUserError;

  tb::training::RunControl interrupt;  // Ctrl-C stops the bench after the current step
  const tb::training::StopOnSignal stoppable(interrupt);
  tb::bench::StepBenchOptions options = base_options;
  options.interrupt = &interrupt.stop;
  const bool tty = isatty(STDERR_FILENO) != 0;
  // Progress on stderr: one line rewritten on a terminal; with --progress, a line a step wherever it goes.
  if (tty && !progress_lines)
    options.progress = [](int64_t done, int64_t total) {
      std::cerr << "\rbench: step " << done << "/" << total << std::flush;
    };
  if (progress_lines)
    options.progress = [](int64_t done, int64_t total) {
      std::cerr << "bench: step " << done << "/" << total << std::endl;
    };
  const bool open_line = tty && !progress_lines;
  int code = kOk;
  try {
    const nlohmann::json figures = tb::bench::bench_steps(*recipe, *cfg, options);
    if (open_line) std::cerr << "\n";
    std::cout << recipe->name << ": " << figures["tokens_per_s"].get<double>() << " tokens/s (median of "
              << options.steps << " steps, " << figures["threads"].get<int>() << " threads), first step "
              << figures["first_step_s"].get<double>() << " s, peak " << figures["peak_memory_gib"].get<double>()
              << " GiB against weights + gradients + optimizer " << figures["floor_gib"].get<double>() << " GiB\n";
    std::cout << tb::text::json_text(figures) << "\n";
  } catch (const std::exception& e) {
    if (open_line) std::cerr << "\n";
    code = fail(e.what());
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return code;
}

// Eager, then compiled, on the same config and batches in this process; the last line is the
// comparison (docs/contracts.md "Compile"; docs/compile.md).
int cmd_bench_compile(const std::string& config, const std::vector<std::string>& overrides,
                      const tb::bench::StepBenchOptions& base_options) {
  tb::training::RunControl interrupt;  // Ctrl-C stops the bench after the current step
  tb::bench::StepBenchOptions options = base_options;
  options.interrupt = &interrupt.stop;
  const std::string path = tb::config::find_config(config);
  if (path.empty()) return fail("no bundled config or file named '" + config + "' (see 'tunebench-cli ls')");
  const std::string recipe_name = tb::config::recipe_for_config(path);
  const tb::RecipeInfo* recipe = tb::find_recipe(recipe_name);
  if (!recipe) return fail("bench compile: the config names no recipe of this version ('" + recipe_name + "')");
  const tb::training::StopOnSignal stoppable(interrupt);
  std::optional<tb::bench::CompileBench> result;
  try {
    result = tb::bench::bench_compile(
        *recipe, [&](const std::vector<std::string>& all) { return load(config, all, recipe_name, true); }, overrides,
        options, [](bool compiled, const nlohmann::json& figures) {
          std::cerr << (compiled ? "compiled: " : "eager:    ") << figures["tokens_per_s"].get<double>()
                    << " tokens/s, first step " << figures["first_step_s"].get<double>() << " s\n";
        });
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (!result) return kUserError;
  if (!result->limit_error.empty())
    std::cerr << "bench compile: the matrix-product peak could not be measured: " << result->limit_error << "\n";
  const nlohmann::json& line = result->line;
  std::cout << "speed-up " << line["speedup"].get<double>() << "x, warm-up " << line["compile_warmup_s"].get<double>()
            << " s, losses within " << line["loss_max_rel_diff"].get<double>() << " (relative)";
  if (line.contains("compile_mfu"))
    std::cout << "; MFU eager " << 100 * line["eager_mfu"].get<double>() << "%, compiled "
              << 100 * line["compile_mfu"].get<double>() << "% of the measured peak";
  std::cout << "\n" << tb::text::json_text(line) << "\n";
  return kOk;
}

int cmd_bench_tokenize(const tb::bench::TokenizeBenchOptions& options) {
  try {
    std::cout << tb::text::json_text(tb::bench::bench_tokenize(options)) << "\n";
  } catch (const std::runtime_error& e) {
    return fail(e.what());
  }
  return kOk;
}

struct Args {
  std::string config, recipe, source, destination;
  std::vector<std::string> overrides;
  bool force = false, no_components = false, progress_lines = false;
  tb::inference::GenerateOptions generate;
  tb::bench::StepBenchOptions bench;
  tb::bench::TokenizeBenchOptions tokenize;
  tb::bench::ReadBenchOptions read;
  TokenizeArgs tokenize_lines;
  tb::exporting::GgufExportOptions gguf;
  std::string checkpoint;
  size_t preview_samples = 3;
  bool json = false;
  tb::distributed::LaunchOptions launch{0};  // nproc_per_node 0: no launcher, this process runs the recipe
  std::string rdzv_endpoint;                 // HOST:PORT, as torchrun's
};

void add_overrides(CLI::App* cmd, Args& a) {
  cmd->add_option("overrides", a.overrides, "config overrides: key=value, key=[a,b], ~key")->type_name("KEY=VALUE|~KEY");
}

int run_cli(int argc, char** argv) {
  CLI::App app{"tunebench-cli: fine-tune LLMs with torchtune-style recipes and configs", "tunebench-cli"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tunebench-cli ") + TUNEBENCH_VERSION);
  Args a;

  CLI::App* ls = app.add_subcommand("ls", "list the recipes and the bundled configs for each");

  CLI::App* cp = app.add_subcommand("cp", "copy a bundled config to a file, to edit it");
  cp->add_option("config", a.source, "bundled config name (see ls) or file")->required();
  cp->add_option("destination", a.destination, "destination file (.yaml is added when missing) or folder")->required();
  cp->add_flag("-f,--force", a.force, "overwrite an existing destination");

  CLI::App* validate = app.add_subcommand("validate", "check a config: exit 0 if valid, else print every error");
  validate->add_option("config", a.config, "bundled config name or YAML file")->required();
  add_overrides(validate, a);
  validate->add_option("--recipe", a.recipe, "check the keys of this recipe (default: from the file name)");
  validate->add_flag("--no-components", a.no_components, "check keys and types only, not the _component_ names");

  CLI::App* run = app.add_subcommand("run", "run a recipe on a config");
  run->add_option("recipe", a.recipe, "recipe name (see ls)")->required();
  run->add_option("--config", a.config, "bundled config name or YAML file")->required();
  add_overrides(run, a);
  run->add_option("--nproc-per-node", a.launch.nproc_per_node,
                  "start this many workers on this machine, one rank each (a *_distributed recipe)")
      ->check(CLI::Range(1, 1024));
  run->add_option("--nnodes", a.launch.nnodes, "machines in the run")->capture_default_str()->check(CLI::Range(1, 65536));
  run->add_option("--node-rank", a.launch.node_rank, "this machine's place among them (0 hosts the rendezvous)")
      ->capture_default_str();
  run->add_option("--master-addr", a.launch.master_addr, "address of machine 0")->capture_default_str();
  run->add_option("--master-port", a.launch.master_port, "its rendezvous port (default: a free one on one machine, 29500 across machines)");
  run->add_option("--rdzv-endpoint", a.rdzv_endpoint, "HOST:PORT, instead of --master-addr and --master-port");
  run->add_option("--dist-timeout", a.launch.timeout_s,
                  "seconds a worker waits for a silent peer before the run fails")->capture_default_str()->check(CLI::Range(1, 86400));

  CLI::App* eval = app.add_subcommand("eval", "evaluate a model: mean loss, perplexity and tokens over a dataset");
  eval->add_option("--config", a.config, "bundled config name or YAML file");
  eval->add_option("--checkpoint", a.checkpoint, "or: a checkpoint folder Tunebench wrote: its own config, its weights");
  add_overrides(eval, a);

  CLI::App* generate = app.add_subcommand("generate", "generate text from a prompt");
  generate->add_option("--config", a.config, "bundled config name or YAML file");
  generate->add_option("--checkpoint", a.checkpoint, "or: a checkpoint folder Tunebench wrote: its own config, its weights");
  generate->add_option("--prompt", a.generate.prompt, "the prompt (with --instruct: the instruction)")->required();
  generate->add_flag("--instruct", a.generate.instruct,
                     "wrap the prompt as the Alpaca instruction that alpaca_dataset trains on");
  generate->add_option("--input", a.generate.input, "with --instruct: the instruction's input");
  generate->add_flag("--chat", a.generate.chat,
                     "send the prompt as a user message through the model's chat template (with its generation prompt)");
  generate->add_option("--system", a.generate.system, "with --chat: a system message first");
  generate->add_option("--max-new-tokens", a.generate.max_new_tokens, "tokens to generate")->capture_default_str();
  generate->add_option("--temperature", a.generate.temperature, "0: greedy; else sample")->capture_default_str();
  generate->add_option("--top-k", a.generate.top_k, "sample among the k most likely tokens (0: all)")->capture_default_str();
  generate->add_option("--seed", a.generate.seed, "sampling seed")->capture_default_str();
  add_overrides(generate, a);

  CLI::App* tokenize = app.add_subcommand(
      "tokenize",
      "tokenize each line of a file: {\"text\"} -> {\"ids\"} (no special tokens added); {\"messages\"} -> {\"text\", "
      "\"ids\", \"mask\"} through the chat template (mask true: masked from the loss)");
  tokenize->add_option("--tokenizer", a.tokenize_lines.tokenizer,
                       "a model folder, a tokenizer.json or a tokenizer.model (SentencePiece or tiktoken)");
  tokenize->add_option("--config", a.config, "or: the tokenizer of this config");
  tokenize->add_option("--jsonl", a.tokenize_lines.jsonl, "JSON Lines: {\"text\": ...} or {\"messages\": [...]} a line");
  tokenize->add_option("--file", a.tokenize_lines.file, "plain text: one text a line");
  tokenize->add_flag("--add-generation-prompt", a.tokenize_lines.add_generation_prompt,
                     "end conversations with the assistant's header, as for generation");
  add_overrides(tokenize, a);

  CLI::App* data = app.add_subcommand("data", "look at a config's dataset");
  data->require_subcommand(1);
  CLI::App* data_preview = data->add_subcommand(
      "preview", "the first samples as the recipe sees them (masked text marked) and the dataset's counts");
  data_preview->add_option("--config", a.config, "bundled config name or YAML file")->required();
  data_preview->add_option("-n,--samples", a.preview_samples, "samples to show")->capture_default_str();
  data_preview->add_flag("--json", a.json, "one JSON object: counts, warnings, each sample's ids, pieces, trained mask");
  add_overrides(data_preview, a);

  CLI::App* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  CLI::App* bench_step = bench->add_subcommand(
      "step", "a recipe's training step: median tokens/s, first step, peak memory against weights + grads + optimizer");
  bench_step->add_option("--config", a.config, "bundled config name (e.g. bench/stories15m_full) or YAML file")->required();
  bench_step->add_option("--recipe", a.recipe, "recipe to run (default: the one the config names)");
  bench_step->add_option("--steps", a.bench.steps, "measured steps")->capture_default_str();
  bench_step->add_option("--warmup", a.bench.warmup, "steps run first, not measured")->capture_default_str();
  bench_step->add_option("--profile", a.bench.profile_path,
                         "profile one more step after the measured ones; write its Chrome trace to this file");
  bench_step->add_flag("--progress", a.progress_lines, "a progress line on stderr after each step, also off a terminal");
  add_overrides(bench_step, a);
  CLI::App* bench_compile = bench->add_subcommand("compile", "eager vs compiled training step: speed, warm-up, parity");
  bench_compile->add_option("--config", a.config, "bundled config name or YAML file")->required();
  bench_compile->add_option("--steps", a.bench.steps, "measured steps")->capture_default_str();
  bench_compile->add_option("--warmup", a.bench.warmup, "steps run first, not measured")->capture_default_str();
  add_overrides(bench_compile, a);
  CLI::App* bench_tokenize =
      bench->add_subcommand("tokenize", "tokenizer.json encoding speed: median MB/s of a text file");
  bench_tokenize->add_option("--tokenizer", a.tokenize.tokenizer_path, "tokenizer.json (or tiktoken file)")->required();
  bench_tokenize->add_option("--file", a.tokenize.text_path, "text file, encoded whole")->required();
  bench_tokenize->add_option("--threads", a.tokenize.threads, "encode that many parts at once")->capture_default_str();
  bench_tokenize->add_option("--runs", a.tokenize.runs, "timed runs after a warm-up")->capture_default_str();
  CLI::App* bench_read = add_bench_read_command(*bench, a.read);

  CLI::App* export_cmd = app.add_subcommand("export", "take a model out of Tunebench");
  export_cmd->require_subcommand(1);
  CLI::App* export_gguf = export_cmd->add_subcommand(
      "gguf", "the config's model, weights (a LoRA merged) and tokenizer as one GGUF file for llama.cpp, Ollama, LM Studio");
  export_gguf->add_option("--config", a.config, "bundled config name or YAML file");
  export_gguf->add_option("--checkpoint", a.checkpoint,
                          "or: a checkpoint folder Tunebench wrote (step_N/, epoch_N/): its own config, its weights");
  export_gguf->add_option("--output", a.gguf.output, "the .gguf file to write")->required();
  export_gguf->add_option("--type", a.gguf.type, "f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k")->capture_default_str();
  export_gguf->add_option("--name", a.gguf.name, "general.name (default: the checkpoint folder's name)");
  export_gguf->add_flag("--adapter", a.gguf.adapter,
                        "only the LoRA adapter (checkpointer.adapter_checkpoint), as llama.cpp's adapter file for the base model's GGUF");
  export_gguf->add_flag("-f,--force", a.gguf.overwrite, "replace an existing output file (and Modelfile)");
  export_gguf->add_flag("--ollama", a.gguf.ollama,
                        "also write a Modelfile beside the file (FROM, stop tokens, the template's default system prompt)");
  add_overrides(export_gguf, a);

  DownloadArgs download_args;
  CLI::App* download = add_download_command(app, download_args);

  // CLI11 would only say "a subcommand is required" for a misspelled command.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) commands.push_back(sub->get_name());
    if (std::find(commands.begin(), commands.end(), argv[1]) == commands.end())
      return fail("unknown command '" + std::string(argv[1]) + "'" + tb::config::did_you_mean(argv[1], commands) +
                  " (commands: " + join(commands) + ")");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see --help)");
  }

  if (*ls) return cmd_ls();
  if (*cp) return cmd_cp(a.source, a.destination, a.force);
  if (*validate) return cmd_validate(a.config, a.overrides, a.recipe, !a.no_components);
  if (*run && a.launch.nproc_per_node > 0) return cmd_launch(a.recipe, a.config, a.overrides, a.launch, a.rdzv_endpoint);
  if (*run) return cmd_run(a.recipe, a.config, a.overrides);
  if (*eval) return cmd_eval(a.config, a.checkpoint, a.overrides);
  if (*generate) return cmd_generate(a.config, a.checkpoint, a.overrides, a.generate);
  if (*tokenize) return cmd_tokenize(a.config, a.overrides, a.tokenize_lines);
  if (*data_preview) return cmd_data_preview(a.config, a.overrides, a.preview_samples, a.json);
  if (*bench_step) return cmd_bench_step(a.config, a.overrides, a.recipe, a.bench, a.progress_lines);
  if (*bench_compile) return cmd_bench_compile(a.config, a.overrides, a.bench);
  if (*bench_tokenize) return cmd_bench_tokenize(a.tokenize);
  if (*bench_read) return cmd_bench_read(a.read);
  if (*export_gguf) return cmd_export_gguf(a.config, a.checkpoint, a.overrides, a.gguf);
  if (*download) return cmd_download(download_args);
  return fail("no command given (see --help)");
}

}  // namespace

int main(int argc, char** argv) {
  tb::training::install_stop_signal_handlers();
  tb::training::RunControl stop;  // what a signal stops when no run or bench is in scope: rows, batches, tokens
  const tb::training::StopOnSignal stoppable(stop);
  try {
    return run_cli(argc, argv);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return fail("internal error");
  }
}
