#include "RunSetupPanel.h"

#include <QAbstractScrollArea>
#include <QApplication>
#include <QScrollBar>
#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QTextBrowser>
#include <QThreadPool>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include "GetModelDialog.h"
#include "DatasetChoice.h"
#include "HubDatasetDialog.h"
#include "LocalDatasetsDialog.h"
#include "LocalModelsDialog.h"
#include "ModelInfo.h"
#include "checkpoint/checkpoint_files.h"
#include "checkpoint/hf_config.h"
#include "compile/machine_info.h"
#include "components/builtin.h"
#include "components/hub_datasets.h"
#include "config/interrupt.h"
#include "config/registry.h"
#include "config/user_dirs.h"
#include "config/yaml_edit.h"
#include "data/dataset.h"
#include "data/hub_dataset_layout.h"
#include "data/row_sources.h"
#include "hub/cached_models.h"

namespace tb::ui {

namespace {
// LoRA's alpha as it is written in a config: 32, 0.5 (not 32.000).
class PlainDoubleSpinBox : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;
  QString textFromValue(double value) const override { return QString::number(value, 'g', 10); }
};

const char* const kCompileTooltip =
    "<p><b>compile: true</b> — like torch.compile, the training step is captured and lowered to fused, "
    "multi-threaded CPU kernels with hand-written backward passes; its matrix products go through oneDNN "
    "where the warm-up times it faster.</p>"
    "<p>The first step is a <b>warm-up</b>: the backend picks its plan, times kernel variants, and checks "
    "the fused step against the eager one on the first batch (falling back to eager if they disagree). That "
    "cost is measured, logged as a compile event and shaded on the step-time plot; the ETA ignores it.</p>"
    "<p>The plan is cached on disk, so the next run of the same shape warms up faster. The compiled step needs "
    "less memory (the full logits and the attention matrix never exist). Checkpoints are identical either "
    "way.</p>"
    "<p>How much faster depends on the CPU, the dtype and the shape: <tt>tunebench-cli bench compile</tt> "
    "measures yours, and docs/compile.md holds the table measured on the project's machines.</p>";

constexpr const char* kChooseFile = "Choose file…";
constexpr const char* kFromHub = "From the Hub…";
constexpr const char* kLocalDatasets = "Datasets on this computer…";

// A wheel turned over the form scrolls the form: a combo or spin box changes only once it was clicked
// (it has focus), so a value never changes because the pointer passed over it.
class WheelGuard : public QObject {
 public:
  using QObject::QObject;
  bool eventFilter(QObject* watched, QEvent* event) override {
    auto* widget = qobject_cast<QWidget*>(watched);
    if (event->type() != QEvent::Wheel || !widget || widget->hasFocus()) return false;
    for (QWidget* p = widget->parentWidget(); p; p = p->parentWidget())
      if (auto* area = qobject_cast<QAbstractScrollArea*>(p)) {
        QCoreApplication::sendEvent(area->verticalScrollBar(), event);
        break;
      }
    return true;
  }
};

QString datasetFileOf(const ConfigDocument& doc) {
  const YAML::Node files = doc.value("dataset.data_files");
  if (files.IsDefined() && files.IsScalar()) return QString::fromStdString(files.Scalar());
  if (files.IsDefined() && files.IsSequence() && files.size() > 0 && files[0].IsScalar())
    return QString::fromStdString(files[0].Scalar());
  return doc.scalar("dataset.source");
}

QStringList bundledDatasets() {
  const QDir dir(QString::fromStdString(tb::config::share_dir()) + "/resources/datasets");
  QStringList out;
  for (const QFileInfo& f : dir.entryInfoList({"*.json", "*.jsonl", "*.csv", "*.tsv", "*.txt", "*.parquet"}, QDir::Files, QDir::Name))
    out << f.absoluteFilePath();
  return out;
}
}  // namespace

RunSetupPanel::RunSetupPanel(ConfigDocument* document, QWidget* parent) : QWidget(parent), doc_(document) {
  buildUi();
  connectEdits();
  connect(doc_, &ConfigDocument::changed, this, [this](ConfigDocument::Origin origin) {
    if (origin != ConfigDocument::Origin::Form) refreshFromDocument();
    updateModelInfo();
    schedulePreview();
  });
  refreshFromDocument();
  updateModelInfo();
  schedulePreview();
}

QString RunSetupPanel::runsFolder() const {
  return QString::fromStdString(tb::config::window_runs_folder(doc_->scalar("output_dir").toStdString()));
}

void RunSetupPanel::buildUi() {
  model_ = new QComboBox(this);
  for (const std::string& name : tb::models::preset_names()) model_->addItem(QString::fromStdString(name));
  // Models already in the Hugging Face cache (downloaded here or by another Hugging Face tool): one click.
  for (const auto& m : tb::hub::cached_models()) {
    model_->addItem(QString::fromStdString(m.repo_id) + " (downloaded)", QFileInfo(QString::fromStdString(m.folder)).absoluteFilePath());
    model_->setItemData(model_->count() - 1,
                        QString("%1 at %2, %3 on disk").arg(QString::fromStdString(m.folder), QString::fromStdString(m.commit.substr(0, 12)),
                                                            formatBytes(double(m.bytes))),
                        Qt::ToolTipRole);
  }
  openModel_ = new QPushButton("Open model folder…", this);
  openModel_->setToolTip("A Hugging Face checkpoint folder: config.json and model*.safetensors");
  getModel_ = new QPushButton("Get model…", this);
  getModel_->setObjectName("getModelButton");
  getModel_->setToolTip("Download a model from the Hugging Face Hub into the cache every Hugging Face tool shares");
  localModels_ = new QPushButton("On this computer…", this);
  localModels_->setToolTip("The models in the Hugging Face cache that Tunebench can train, whoever downloaded them");
  modelInfo_ = new QLabel(this);
  modelInfo_->setWordWrap(true);
  weights_ = new QLabel(this);
  weights_->setWordWrap(true);
  weights_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  weights_->setToolTip("What Start will load: checkpointer.checkpoint_dir's files and the tokenizer");
  memory_ = new QLabel(this);
  memory_->setWordWrap(true);
  memory_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  recipe_ = new QComboBox(this);
  for (RecipeKind k : {RecipeKind::Full, RecipeKind::Lora, RecipeKind::Qlora})
    recipe_->addItem(recipeKindLabel(k), int(k));
  recipe_->setToolTip("Full: every weight trains. LoRA: low-rank adapters train, the base is frozen. "
                      "QLoRA: LoRA on NF4-quantized base weights.");
  compile_ = new QCheckBox("Compile the training step", this);
  compile_->setToolTip(kCompileTooltip);
  processes_ = new QSpinBox(this);
  processes_->setRange(1, std::max(1, QThread::idealThreadCount()));
  processes_->setToolTip("Data parallel: worker processes on this machine (tunebench-cli run --nproc-per-node N, "
                         "the *_distributed recipe). Each trains batch_size samples of every step and the cores are "
                         "shared among them; the plots follow rank 0. 1: the run trains inside the window.");
  dtype_ = new QComboBox(this);
  dtype_->addItems({"fp32", "bf16"});
  dtype_->setToolTip("dtype: the weights' and activations' type. bf16 halves memory; fp32 is exact");
  model_->setToolTip("A built-in architecture (random weights), or the Hugging Face folder the setup reads");

  dataset_ = new QComboBox(this);
  dataset_->setToolTip("The training data: the config's dataset, a bundled file, or a JSON / JSONL / CSV / text file "
                       "of your own (the first row decides the format)");
  preview_ = new QTextBrowser(this);
  preview_->setMinimumHeight(140);
  preview_->setOpenLinks(false);
  preview_->setToolTip("The first samples as the model will see them: trained tokens highlighted");

  epochs_ = new QSpinBox(this);
  epochs_->setRange(1, 100000);
  epochs_->setToolTip("epochs: passes over the dataset");
  maxSteps_ = new QSpinBox(this);
  maxSteps_->setRange(0, 100000000);
  maxSteps_->setSpecialValueText("all");
  maxSteps_->setToolTip("max_steps_per_epoch: optimizer steps per epoch (all = the whole dataset)");
  batchSize_ = new QSpinBox(this);
  batchSize_->setRange(1, 65536);
  batchSize_->setToolTip("batch_size: samples per forward pass (memory grows with it)");
  gradAccum_ = new QSpinBox(this);
  gradAccum_->setRange(1, 65536);
  gradAccum_->setToolTip("gradient_accumulation_steps: forward passes per optimizer step (a larger batch "
                         "without its memory)");
  lr_ = new QLineEdit(this);
  lr_->setToolTip("optimizer.lr: the learning rate (LoRA usually takes a larger one than a full fine-tune)");
  auto* lrValidator = new QDoubleValidator(0, 1e3, 12, lr_);
  lrValidator->setNotation(QDoubleValidator::ScientificNotation);
  lrValidator->setLocale(QLocale::c());
  lr_->setValidator(lrValidator);
  loraRank_ = new QSpinBox(this);
  loraRank_->setRange(1, 4096);
  loraRank_->setToolTip("model.lora_rank: the adapters' rank (more: more capacity and memory)");
  loraAlpha_ = new PlainDoubleSpinBox(this);
  loraAlpha_->setRange(0.001, 100000);
  loraAlpha_->setDecimals(3);
  loraAlpha_->setToolTip("model.lora_alpha: the adapters' scale is alpha / rank");
  threads_ = new QSpinBox(this);
  threads_->setRange(0, 1024);
  threads_->setSpecialValueText("all cores");
  threads_->setToolTip("num_threads: CPU threads for training (all cores: one per core)");
  outputDir_ = new QLineEdit(this);
  outputDir_->setToolTip("output_dir: the folder the runs go to; each Start writes into a folder of its own in it");
  runName_ = new QLineEdit(this);
  runName_->setPlaceholderText("automatic: recipe-eager|compile-time");
  runName_->setToolTip("The next run's folder inside the output folder. Empty: <recipe>-<eager|compile>-<date-time>, "
                       "so runs never mix. A folder that already holds a run is asked about before it is reused.");
  // The full path, readable and copyable whatever the dock's width (a label cut it off).
  runsPath_ = new QLineEdit(this);
  runsPath_->setObjectName("runsPath");
  runsPath_->setReadOnly(true);
  runsPath_->setToolTip("Where the runs go: an absolute output folder as it is, a relative one (as the bundled "
                        "configs have) under your data folder");
  auto* openOutput = new QPushButton("Open", this);
  openOutput->setObjectName("openRunsButton");
  openOutput->setToolTip("Open the folder the runs go to in the file manager");
  connect(openOutput, &QPushButton::clicked, this, [this] {
    const QString dir = runsFolder();
    QDir().mkpath(dir);
    QDesktopServices::openUrl(QUrl::fromLocalFile(dir));
  });
  auto* browseOutput = new QPushButton("…", this);
  browseOutput->setMaximumWidth(32);
  browseOutput->setToolTip("Choose the output folder");
  connect(browseOutput, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Output folder", outputDir_->text());
    if (!dir.isEmpty()) {
      outputDir_->setText(dir);
      doc_->setScalar("output_dir", dir);
    }
  });

  auto* modelBox = new QGroupBox("Model", this);
  auto* modelLayout = new QVBoxLayout(modelBox);
  auto* modelRow = new QHBoxLayout;
  modelRow->addWidget(model_, 1);
  modelRow->addWidget(openModel_);
  modelRow->addWidget(getModel_);
  modelRow->addWidget(localModels_);
  modelLayout->addLayout(modelRow);
  modelLayout->addWidget(modelInfo_);
  modelLayout->addWidget(weights_);
  modelLayout->addWidget(memory_);

  auto* recipeBox = new QGroupBox("Recipe", this);
  auto* recipeForm = new QFormLayout(recipeBox);
  recipeForm->addRow("Recipe", recipe_);
  recipeForm->addRow("", compile_);
  recipeForm->addRow("Processes", processes_);
  recipeForm->addRow("dtype", dtype_);

  auto* dataBox = new QGroupBox("Dataset", this);
  auto* dataLayout = new QVBoxLayout(dataBox);
  dataLayout->addWidget(dataset_);
  dataLayout->addWidget(preview_, 1);

  auto* hyperBox = new QGroupBox("Hyper-parameters", this);
  auto* hyper = new QFormLayout(hyperBox);
  hyper->addRow("Epochs", epochs_);
  hyper->addRow("Max steps / epoch", maxSteps_);
  hyper->addRow("Batch size", batchSize_);
  hyper->addRow("Gradient accumulation", gradAccum_);
  hyper->addRow("Learning rate", lr_);
  hyper->addRow("LoRA rank", loraRank_);
  hyper->addRow("LoRA alpha", loraAlpha_);
  hyper->addRow("Threads", threads_);
  auto* outRow = new QHBoxLayout;
  outRow->addWidget(outputDir_, 1);
  outRow->addWidget(browseOutput);
  hyper->addRow("Output folder", outRow);
  auto* pathRow = new QHBoxLayout;
  pathRow->addWidget(runsPath_, 1);
  pathRow->addWidget(openOutput);
  hyper->addRow("Runs go to", pathRow);
  hyper->addRow("Run name", runName_);

  auto* guard = new WheelGuard(this);
  for (QWidget* w : findChildren<QWidget*>())
    if (qobject_cast<QComboBox*>(w) || qobject_cast<QAbstractSpinBox*>(w)) {
      w->setFocusPolicy(Qt::StrongFocus);
      w->installEventFilter(guard);
    }

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(modelBox);
  layout->addWidget(recipeBox);
  layout->addWidget(hyperBox);
  layout->addWidget(dataBox, 1);
}

int RunSetupPanel::processes() const { return processes_->value(); }

void RunSetupPanel::connectEdits() {
  auto intKey = [this](QSpinBox* box, const QString& key, bool zeroIsNull) {
    connect(box, qOverload<int>(&QSpinBox::valueChanged), this, [this, key, zeroIsNull](int v) {
      if (refreshing_) return;
      doc_->setScalar(key, zeroIsNull && v == 0 ? "null" : QString::number(v));
    });
  };
  intKey(epochs_, "epochs", false);
  intKey(maxSteps_, "max_steps_per_epoch", true);
  intKey(batchSize_, "batch_size", false);
  intKey(gradAccum_, "gradient_accumulation_steps", false);
  intKey(loraRank_, "model.lora_rank", false);
  intKey(threads_, "num_threads", true);
  connect(loraAlpha_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double v) {
    if (!refreshing_) doc_->setScalar("model.lora_alpha", QString::number(v, 'g', 8));
  });
  connect(lr_, &QLineEdit::editingFinished, this, [this] {
    if (refreshing_ || !lr_->hasAcceptableInput()) return;
    if (lr_->text() != doc_->scalar("optimizer.lr")) doc_->setScalar("optimizer.lr", lr_->text());
  });
  connect(outputDir_, &QLineEdit::editingFinished, this, [this] {
    if (!refreshing_ && outputDir_->text() != doc_->scalar("output_dir")) doc_->setScalar("output_dir", outputDir_->text());
  });
  connect(compile_, &QCheckBox::toggled, this, [this](bool on) {
    if (!refreshing_) doc_->setScalar("compile", on ? "true" : "false");
  });
  connect(dtype_, &QComboBox::currentTextChanged, this, [this](const QString& t) {
    if (!refreshing_) doc_->setScalar("dtype", t);
  });
  connect(recipe_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int) {
    if (refreshing_) return;
    doc_->setRecipeKind(RecipeKind(recipe_->currentData().toInt()));
    refreshFromDocument();  // LoRA fields appear or go
  });
  connect(model_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
    const QString name = model_->itemText(index);
    const QString folder = model_->itemData(index).toString();
    if (tb::models::preset_args(name.toStdString())) {
      doc_->setModelPreset(name);
    } else if (!folder.isEmpty() && QFileInfo(folder).absoluteFilePath() != QFileInfo(doc_->inputPath("model.path")).absoluteFilePath()) {
      QString error;  // a folder opened before in this window: open it again
      if (!openModelFolder(folder, &error)) QMessageBox::warning(this, "Open model folder", error);
    }
  });
  connect(getModel_, &QPushButton::clicked, this, [this] {
    GetModelDialog dialog(this);
    // What training another model as this setup stands would take, before it is fetched.
    dialog.setFitEstimate([this](const tb::models::ModelArgs& args) -> GetModelDialog::Fit {
      const auto e = estimateFor(*doc_, args);
      const auto m = tb::compile::machine_info();
      QString text = QString("Training it as set up (%1, %2, batch %3 of %4 tokens) needs about %5")
                         .arg(recipeKindLabel(doc_->recipeKind()), doc_->scalar("dtype", "fp32"))
                         .arg(e.batch_size)
                         .arg(e.seq_len)
                         .arg(formatBytes(e.total_bytes()));
      if (m.memory_total > 0)
        text += QString("; this computer has %1 (%2 free)").arg(formatBytes(double(m.memory_total)), formatBytes(double(m.memory_available)));
      const bool fits = m.memory_available == 0 || e.total_bytes() <= double(m.memory_available);
      if (!fits) text += ": it would not fit (QLoRA, a shorter sequence or a smaller model would need less)";
      return {text + ".", fits};
    });
    if (getModelHook_) getModelHook_(dialog);
    else dialog.exec();
    if (dialog.folder().isEmpty()) return;
    QString error;
    if (!openModelFolder(dialog.folder(), &error)) QMessageBox::warning(this, "Get model", error);
  });
  connect(localModels_, &QPushButton::clicked, this, [this] {
    LocalModelsDialog dialog(this);
    if (localModelsHook_) localModelsHook_(dialog);
    else dialog.exec();
    if (dialog.folder().isEmpty()) return;
    QString error;
    if (!openModelFolder(dialog.folder(), &error)) QMessageBox::warning(this, "Models on this computer", error);
  });
  connect(openModel_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a Hugging Face model folder");
    if (dir.isEmpty()) return;
    QString error;
    if (!openModelFolder(dir, &error)) QMessageBox::warning(this, "Open model folder", error);
  });
  connect(dataset_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
    QString path = dataset_->itemData(index).toString();
    if (path == kChooseFile) {
      path = QFileDialog::getOpenFileName(this, "Dataset file", {}, "Data (*.json *.jsonl *.csv *.tsv *.txt *.parquet)");
      if (path.isEmpty()) {
        refreshFromDocument();
        return;
      }
    }
    QString error;
    if (path == kFromHub) {
      HubDatasetDialog dialog(this);
      if (hubDatasetHook_) hubDatasetHook_(dialog);
      else dialog.exec();
      if (dialog.result() == QDialog::Accepted &&
          !useHubDataset(dialog.repo(), dialog.configName(), dialog.split(), &error, &dialog.firstRow()))
        QMessageBox::warning(this, "Dataset from the Hub", error);
      refreshFromDocument();
      return;
    }
    if (path == kLocalDatasets) {
      LocalDatasetsDialog dialog(this);
      if (localDatasetsHook_) localDatasetsHook_(dialog);
      else dialog.exec();
      if (!dialog.repo().isEmpty() && !useHubDataset(dialog.repo(), {}, "train", &error))
        QMessageBox::warning(this, "Datasets on this computer", error);
      refreshFromDocument();
      return;
    }
    if (path.isEmpty()) return;
    if (!useDatasetFile(path, &error)) QMessageBox::warning(this, "Dataset", error);
  });
}

void RunSetupPanel::refreshFromDocument() {
  refreshing_ = true;
  const RecipeKind kind = doc_->recipeKind();
  recipe_->setCurrentIndex(recipe_->findData(int(kind)));
  compile_->setChecked(doc_->boolean("compile", false));
  const QString dtype = doc_->scalar("dtype", "fp32");
  if (dtype_->findText(dtype) < 0) dtype_->addItem(dtype);
  dtype_->setCurrentText(dtype);

  const QString base = doc_->modelBaseName();
  int modelIndex = model_->findText(base);
  if (modelIndex < 0) {
    // Not a preset: show what the config builds, as an extra entry.
    // Folders stay listed (with their path) after another model is chosen, so one click goes back.
    const bool folder = base == "from_hf_config";
    const QString path = folder ? QFileInfo(doc_->inputPath("model.path")).absoluteFilePath() : QString();
    const QString repo = QString::fromStdString(tb::hub::snapshot_repo_id(path.toStdString()));
    const QString label = !folder ? doc_->scalar("model._component_", "(no model)")
                          : repo.isEmpty() ? "HF folder: " + QFileInfo(path).fileName() : repo + " (downloaded)";
    modelIndex = folder ? model_->findData(path) : model_->findText(label);
    if (modelIndex < 0) {
      model_->addItem(label, path);
      modelIndex = model_->count() - 1;
    }
  }
  model_->setCurrentIndex(modelIndex);

  auto setInt = [](QSpinBox* box, const QString& text, int fallback) {
    bool ok = false;
    const int v = text.toInt(&ok);
    box->setValue(ok ? v : fallback);
  };
  // A key the config does not set (misspelled, say) is shown as missing, not as a value it does not have.
  auto markMissing = [this](QWidget* field, const QString& key) {
    const bool missing = !doc_->value(key).IsDefined();
    const QString note = "Not set in the config (misspelled? the Config tab lists its problems). ";
    QString tip = field->toolTip();
    if (tip.startsWith(note)) tip = tip.mid(note.size());
    field->setToolTip(missing ? note + tip : tip);
    field->setStyleSheet(missing ? "background-color: #fde0dc;" : QString());
    field->setProperty("missingKey", missing);
  };
  setInt(epochs_, doc_->scalar("epochs"), 1);
  setInt(maxSteps_, doc_->scalar("max_steps_per_epoch"), 0);
  setInt(batchSize_, doc_->scalar("batch_size"), 1);
  setInt(gradAccum_, doc_->scalar("gradient_accumulation_steps"), 1);
  markMissing(epochs_, "epochs");
  markMissing(batchSize_, "batch_size");
  setInt(threads_, doc_->scalar("num_threads"), 0);
  setInt(loraRank_, doc_->scalar("model.lora_rank"), 8);
  bool ok = false;
  const double alpha = doc_->scalar("model.lora_alpha").toDouble(&ok);
  loraAlpha_->setValue(ok ? alpha : 16.0);
  const bool lora = kind != RecipeKind::Full;
  loraRank_->setEnabled(lora);
  loraAlpha_->setEnabled(lora);
  if (!lr_->hasFocus()) lr_->setText(doc_->scalar("optimizer.lr"));
  if (!outputDir_->hasFocus()) outputDir_->setText(doc_->scalar("output_dir"));
  runsPath_->setText(runsFolder());
  runsPath_->setCursorPosition(0);
  fillDatasetCombo();
  refreshing_ = false;
}

void RunSetupPanel::fillDatasetCombo() {
  dataset_->clear();
  const QString current = datasetFileOf(*doc_);
  const QString component = doc_->scalar("dataset._component_");
  const QString shortComponent = component.mid(component.lastIndexOf('.') + 1);
  dataset_->addItem(current.isEmpty() ? shortComponent : shortComponent + ": " + QFileInfo(current).fileName(), QString());
  for (const QString& path : bundledDatasets())
    if (QFileInfo(path) != QFileInfo(current)) dataset_->addItem("bundled: " + QFileInfo(path).fileName(), path);
  dataset_->addItem(kChooseFile, QString(kChooseFile));
  dataset_->addItem(kFromHub, QString(kFromHub));
  dataset_->addItem(kLocalDatasets, QString(kLocalDatasets));
  dataset_->setCurrentIndex(0);
}

bool RunSetupPanel::openModelFolder(const QString& folder, QString* error) {
  QString why;
  auto args = modelArgsFromHfFolder(folder, &why);
  if (!args) {
    if (error) *error = why;
    return false;
  }
  const std::string modelType = tb::checkpoint::hf_model_type(tb::checkpoint::read_hf_config(folder.toStdString()));

  const QDir dir(folder);
  // The files the engine loads from the folder (its index, model.safetensors, a checkpoint's manifest);
  // a folder of shards without an index: every safetensors file but an adapter.
  QStringList files;
  try {
    for (const auto& f : tb::checkpoint::resolve_checkpoint_files(folder.toStdString(), {})) files << QString::fromStdString(f);
  } catch (const std::exception&) {
    files = dir.entryList({"*.safetensors"}, QDir::Files, QDir::Name);
    files.removeAll(tb::checkpoint::kAdapterFileName);
  }
  if (files.isEmpty()) {
    if (error) *error = folder + ": no model*.safetensors files in this folder";
    return false;
  }
  for (const QString& f : files) {
    const QString problem = checkSafetensorsFile(dir.filePath(f));
    if (!problem.isEmpty()) {
      if (error) *error = problem;
      return false;
    }
  }
  YAML::Node list(YAML::NodeType::Sequence);
  for (const QString& f : files) list.push_back(f.toStdString());

  const RecipeKind kind = doc_->recipeKind();
  const QString abs = dir.absolutePath();
  QVector<ConfigEdit> edits;
  // Keep the LoRA settings; drop the arguments of whatever builder was there before.
  const YAML::Node model = doc_->value("model");
  if (model.IsMap())
    for (auto it = model.begin(); it != model.end(); ++it) {
      const QString key = QString::fromStdString(it->first.Scalar());
      if (key != "_component_" && !key.startsWith("lora_") && !key.startsWith("apply_lora") && key != "use_dora")
        edits << ConfigEdit::erase("model." + key);
    }
  edits << ConfigEdit::set("model._component_",
                           YAML::Node(kind == RecipeKind::Full ? "tunebench.models.from_hf_config"
                                                               : "tunebench.models.lora_from_hf_config"));
  edits << ConfigEdit::set("model.path", YAML::Node(abs.toStdString()));
  if (kind == RecipeKind::Qlora) edits << ConfigEdit::scalar("model.quantize_base", "true");
  edits << ConfigEdit::set("checkpointer.checkpoint_dir", YAML::Node(abs.toStdString()));
  edits << ConfigEdit::set("checkpointer.checkpoint_files", list);
  edits << ConfigEdit::set("checkpointer.model_type", YAML::Node(modelType));
  // The folder's weights start a fresh run: no adapter or resume state of the model before it.
  if (doc_->value("checkpointer.adapter_checkpoint").IsDefined()) edits << ConfigEdit::erase("checkpointer.adapter_checkpoint");
  if (doc_->value("resume_from_checkpoint").IsDefined()) edits << ConfigEdit::scalar("resume_from_checkpoint", "false");
  if (QFileInfo(dir.filePath("tokenizer.json")).isFile()) {
    // The folder's own tokenizer, special tokens and chat template (conversations are formatted by it).
    YAML::Node tokenizer(YAML::NodeType::Map);
    tokenizer["_component_"] = "tunebench.data.hf_tokenizer";
    tokenizer["path"] = abs.toStdString();
    const YAML::Node old = doc_->value("tokenizer");
    if (old.IsMap() && old["max_seq_len"]) tokenizer["max_seq_len"] = YAML::Clone(old["max_seq_len"]);
    edits << ConfigEdit::set("tokenizer", tokenizer);
  } else if (QFileInfo(dir.filePath("tokenizer.model")).isFile()) {
    edits << ConfigEdit::set("tokenizer.path", YAML::Node(dir.filePath("tokenizer.model").toStdString()));
  }
  doc_->apply(edits);
  refreshFromDocument();
  return true;
}

bool RunSetupPanel::useDatasetFile(const QString& path, QString* error) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  const bool plainText = suffix == "txt";
  const std::string source = plainText                                               ? "text"
                             : (suffix == "csv" || suffix == "tsv" || suffix == "tab") ? "csv"
                             : suffix == "parquet"                                     ? "parquet"
                                                                                       : "json";
  try {
    // Only the first row is read: a file of gigabytes opens at once.
    tb::data::Row row;
    if (!tb::data::open_rows(source, {path.toStdString()})->next(row)) throw std::runtime_error(path.toStdString() + ": no rows");
    YAML::Node where(YAML::NodeType::Map);
    where["source"] = source;
    where["data_files"] = QFileInfo(path).absoluteFilePath().toStdString();
    doc_->apply(datasetEdits(*doc_, datasetChoiceFor(row, plainText), where));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  refreshFromDocument();
  return true;
}

bool RunSetupPanel::useHubDataset(const QString& repo, const QString& configName, const QString& split, QString* error,
                                  const tb::data::Row* firstRow) {
  try {
    tb::components::HubDatasetRequest r{repo.toStdString(), configName.toStdString(), "train", {}, {}};
    r.split = tb::data::parse_split(split.toStdString()).parts.at(0).split;
    tb::data::Row row = firstRow ? *firstRow : tb::data::Row{};
    if (!firstRow && !tb::components::open_hub_dataset(r, std::nullopt)->next(row))
      throw std::runtime_error(repo.toStdString() + ": no rows");
    YAML::Node where(YAML::NodeType::Map);
    where["source"] = repo.toStdString();
    if (!configName.isEmpty()) where["name"] = configName.toStdString();
    where["split"] = split.toStdString();
    doc_->apply(datasetEdits(*doc_, datasetChoiceFor(row, false), where));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  refreshFromDocument();
  return true;
}

QString RunSetupPanel::memoryText() const { return memory_->text(); }
QString RunSetupPanel::modelInfoText() const { return modelInfo_->text(); }

void RunSetupPanel::updateModelInfo() {
  QString problem;
  const QString weights = weightsAndTokenizerText(*doc_, &problem);
  weights_->setText(problem.isEmpty() ? weights.toHtmlEscaped().replace('\n', "<br>")
                                      : weights.toHtmlEscaped().replace('\n', "<br>") +
                                            "<br><span style='color:#c62828'>" + problem.toHtmlEscaped() + "</span>");
  QString error;
  const auto args = modelArgsOf(*doc_, &error);
  if (!args) {
    modelInfo_->setText(error);
    memory_->clear();
    return;
  }
  modelInfo_->setText(describeArchitecture(*args));
  if (const auto e = estimateOf(*doc_)) memory_->setText(describeEstimate(*e));
}

QString RunSetupPanel::weightsText() const { return weights_->text(); }

void RunSetupPanel::schedulePreview() {
  const QString key = QString::fromStdString(tb::config::yaml_flow(doc_->value("dataset")) +
                                             tb::config::yaml_flow(doc_->value("tokenizer")));
  if (key == previewKey_) return;
  previewKey_ = key;
  if (!previewTimer_) {
    previewTimer_ = new QTimer(this);
    previewTimer_->setSingleShot(true);
    previewTimer_->setInterval(400);
    connect(previewTimer_, &QTimer::timeout, this, &RunSetupPanel::runPreview);
  }
  previewTimer_->start();
}

RunSetupPanel::~RunSetupPanel() {
  if (previewStop_) previewStop_->store(true);  // a preview still reading rows stops; its result is dropped
}

void RunSetupPanel::runPreview() {
  const int generation = ++previewGeneration_;
  datasetProblem_.clear();  // until this preview says
  const auto result = doc_->validate();
  QPointer<RunSetupPanel> self(this);
  if (!result.ok()) {
    const auto d = result.diagnostics.empty() ? std::string("the config is not valid") : result.diagnostics.front().format();
    showPreview(generation, rawDatasetPreview(datasetFileOf(*doc_), 3,
                                              "Tokens are shown once the config is valid (" + QString::fromStdString(d) + ")"));
    return;
  }
  tb::config::Config config = *result.config;
  config.root = YAML::Clone(config.root);
  preview_->setHtml("<i>Tokenizing the first samples…</i>");
  // A preview still counting a large dataset's rows stops when a newer one starts.
  if (previewStop_) previewStop_->store(true);
  previewStop_ = std::make_shared<std::atomic<bool>>(false);
  QThreadPool::globalInstance()->start([self, generation, config, stop = previewStop_] {
    const tb::config::InterruptScope stoppable(stop.get());
    const auto show = [&](const DatasetPreviewResult& preview) {
      QMetaObject::invokeMethod(qApp, [self, generation, preview] {
        if (self) self->showPreview(generation, preview);
      });
    };
    show(buildDatasetPreview(config, 3, show));
  });
}

void RunSetupPanel::showPreview(int generation, const DatasetPreviewResult& result) {
  if (generation != previewGeneration_) return;  // a newer request is on its way
  // A valid config whose dataset could not be tokenized: the run would fail on it the same way.
  datasetProblem_ = !result.tokenized && !result.note.startsWith("Tokens are shown once") ? result.note : QString();
  preview_->setHtml(previewHtml(result));
  Q_EMIT previewReady();
}

}  // namespace tb::ui
