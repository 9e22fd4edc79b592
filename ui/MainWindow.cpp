#include "MainWindow.h"

#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QEventLoop>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <iostream>

#include <yaml-cpp/yaml.h>

#include "AppIcon.h"
#include "ChatPanel.h"
#include "CheckpointsPanel.h"
#include "ConfigDocument.h"
#include "ConfigEditorPanel.h"
#include "LivePlot.h"
#include "MetricTile.h"
#include "ModelInfo.h"
#include "RunHistory.h"
#include "RunSetupPanel.h"
#include "RunsPanel.h"
#include "TrainingController.h"
#include "YamlEditor.h"
#include "checkpoint/checkpoint_files.h"
#include "compile/machine_info.h"
#include "config/overrides.h"
#include "config/schema.h"
#include "qcp.h"
#include "training/run_log.h"

namespace tb::ui {

MainWindow::MainWindow(const StartupOptions& options, QWidget* parent)
    : QMainWindow(parent), options_(options), doc_(new ConfigDocument(this)), controller_(new TrainingController(this)) {
  setWindowIcon(appIcon());
  loadInitialSetup();  // before the panels, so they open on it
  applyStartupOverrides();
  buildUi();
  buildActions();
  restoreSettings();

  connect(controller_, &TrainingController::stepLogged, this, &MainWindow::onStep);
  connect(controller_, &TrainingController::eventLogged, this, &MainWindow::onEvent);
  connect(controller_, &TrainingController::stateChanged, this, &MainWindow::onState);
  connect(controller_, &TrainingController::finished, this, &MainWindow::onFinished);
  connect(doc_, &ConfigDocument::fileStateChanged, this, &MainWindow::updateTitle);
  connect(doc_, &ConfigDocument::changed, this, &MainWindow::updateTitle);
  // The setup is remembered as it changes (coalesced while the user types), not only on a clean exit.
  saveSetupTimer_ = new QTimer(this);
  saveSetupTimer_->setSingleShot(true);
  saveSetupTimer_->setInterval(300);
  connect(saveSetupTimer_, &QTimer::timeout, this, &MainWindow::saveSetup);
  connect(doc_, &ConfigDocument::changed, saveSetupTimer_, qOverload<>(&QTimer::start));
  connect(doc_, &ConfigDocument::fileStateChanged, saveSetupTimer_, qOverload<>(&QTimer::start));
  connect(checkpoints_, &CheckpointsPanel::reloadRequested, this, [this](const CheckpointEntry& c) {
    reloadCheckpoint(c);
  });
  connect(checkpoints_, &CheckpointsPanel::newRunRequested, this, [this](const CheckpointEntry& c) {
    startFromWeights(c);
  });
  connect(editor_, &ConfigEditorPanel::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 6000); });
  connect(editor_, &ConfigEditorPanel::validated, this, [this](bool ok, int count) {
    if (!controller_->isActive())
      start_->setToolTip(ok ? "Start training"
                            : count == 1 ? QString("The config has a problem") : QString("The config has %1 problems").arg(count));
  });
  // The newest run under the setup's output folder (or a run written straight into it) opens the
  // Checkpoints and Chat tabs.
  runs_->setRunsRoot(runsFolder());
  const QString newest = runs_->listedRuns().isEmpty() ? runsFolder() : runs_->listedRuns().first();
  checkpoints_->setOutputDir(newest);
  chat_->setOutputDir(newest);
  connect(doc_, &ConfigDocument::changed, this, [this] {
    if (!controller_->isActive()) runs_->setRunsRoot(runsFolder());
    updateHardwareLabel();
  });
  onState(RunState::Idle, {});
  updateTitle();
  if (!startupMessage_.isEmpty()) statusBar()->showMessage(startupMessage_);

  // --screenshot alone: the window as it opens (before any run), then quit.
  if (!options_.screenshot.isEmpty() && !options_.autostart)
    QTimer::singleShot(500, this, [this] { takeScreenshotsAndQuit(0); });
  if (options_.autostart) {
    QTimer::singleShot(0, this, [this] {
      QString error;
      if (!startRun(&error)) {
        std::cerr << "tunebench: cannot start: " << error.toStdString() << "\n";
        if (!options_.screenshot.isEmpty() || options_.quitAfterSteps > 0) takeScreenshotsAndQuit(1);
      }
    });
  }
}

MainWindow::~MainWindow() = default;

void MainWindow::loadInitialSetup() {
  QString error;
  if (!options_.config.isEmpty()) {
    const bool ok = QFileInfo(options_.config).isFile() ? doc_->loadFile(options_.config, &error)
                                                        : doc_->loadBundled(options_.config, &error);
    if (ok) return;
    startupMessage_ = error + " — opened the embedded default instead";
    std::cerr << "tunebench: " << error.toStdString() << "\n";
  } else if (!options_.useDefault) {
    QSettings settings;
    const QString text = settings.value("setup/text").toString();
    if (!text.trimmed().isEmpty()) {
      doc_->loadText(text, settings.value("setup/file").toString(), settings.value("setup/bundled").toString());
      return;
    }
  }
  loadEmbeddedDefault();
}

// The command line's overrides become form edits of the opened setup (so "Copy CLI command" gives
// them back); one that is not `key=value` or `~key` is reported and skipped.
void MainWindow::applyStartupOverrides() {
  QVector<ConfigEdit> edits;
  QStringList bad;
  for (const QString& o : options_.overrides) {
    try {
      const auto parsed = tb::config::parse_override(o.toStdString());  // read as tunebench-cli reads it
      const QString key = QString::fromStdString(parsed.key);
      edits << (parsed.remove ? ConfigEdit::erase(key) : ConfigEdit::set(key, parsed.value));
    } catch (const std::invalid_argument& e) {
      bad << o + " (" + QString::fromStdString(e.what()) + ")";
    }
  }
  if (!edits.isEmpty()) doc_->apply(edits);
  if (bad.isEmpty()) return;
  const QString why = "ignored override(s) " + bad.join(", ");
  std::cerr << "tunebench: " << why.toStdString() << "\n";
  startupMessage_ = startupMessage_.isEmpty() ? why : startupMessage_ + "; " + why;
}

void MainWindow::loadEmbeddedDefault() {
  QString error;
  if (doc_->loadBundled(kEmbeddedDefaultConfig, &error)) return;
  const auto all = tb::config::bundled_configs();
  if (!all.empty()) {
    doc_->loadBundled(QString::fromStdString(all.front().name));
    startupMessage_ = QString("The embedded default %1 is not installed; opened %2")
                          .arg(kEmbeddedDefaultConfig, QString::fromStdString(all.front().name));
    return;
  }
  doc_->loadText(QString("# No bundled configs were found under %1/configs.\n"
                         "# Open a config (File > Open) or write one here.\n")
                     .arg(QString::fromStdString(tb::config::share_dir())),
                 {}, {});
  startupMessage_ = "No bundled configs found: open a config file to start";
}

void MainWindow::buildUi() {
  setup_ = new RunSetupPanel(doc_, this);
  editor_ = new ConfigEditorPanel(doc_, this);
  checkpoints_ = new CheckpointsPanel(this);
  runs_ = new RunsPanel(this);
  chat_ = new ChatPanel(doc_, this);
  live_ = new LivePlot(this);
  lossTile_ = new MetricTile("loss", this);
  tokensTile_ = new MetricTile("trained tokens / s", this);
  tokensTile_->setDetail("tokens in the loss");
  stepTile_ = new MetricTile("step", this);
  etaTile_ = new MetricTile("ETA", this);
  etaTile_->setDetail("from steady steps");
  memTile_ = new MetricTile("memory floor", this);
  memTile_->setDetail("weights + gradients + optimizer");
  compileTile_ = new MetricTile("compile vs eager", this);
  compileTile_->setToolTip("This setup's compiled run against its eager run (median steady tokens/s), and what "
                           "the compile warm-up cost; shown once the setup has one of each");
  compileTile_->setVisible(false);
  lossTile_->setToolTip("The last step's training loss");
  tokensTile_->setToolTip("Tokens the loss counts, per second, in the last step: what the model learns from. Masked "
                          "tokens (prompts with train_on_input: false, padding) are read too but not counted, so two "
                          "datasets of one model can differ many times over");
  stepTile_->setToolTip("Optimizer steps done, of the run's total");
  etaTile_->setToolTip("Time left, from the median of the steady (post-warm-up) steps");
  banner_ = new QLabel(this);
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* live = new QWidget(this);
  auto* tiles = new QHBoxLayout;
  for (MetricTile* t : {lossTile_, tokensTile_, stepTile_, etaTile_, memTile_, compileTile_}) tiles->addWidget(t);
  auto* liveLayout = new QVBoxLayout(live);
  liveLayout->addLayout(tiles);
  liveLayout->addWidget(banner_);
  liveLayout->addWidget(live_, 1);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(live, "Live");
  tabs_->addTab(editor_, "Config");
  tabs_->addTab(checkpoints_, "Checkpoints");
  tabs_->addTab(runs_, "Runs");
  tabs_->addTab(chat_, "Chat");
  setCentralWidget(tabs_);

  auto* scroll = new QScrollArea(this);
  scroll->setWidget(setup_);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(320);
  auto* dock = new QDockWidget("Run setup", this);
  dock->setObjectName("RunSetupDock");
  dock->setWidget(scroll);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, dock);

  progress_ = new QProgressBar(this);
  progress_->setMinimumWidth(220);
  progress_->setFormat("no run yet");
  progress_->setRange(0, 1);
  progress_->setValue(0);
  etaLabel_ = new QLabel("ETA –", this);
  etaLabel_->setMinimumWidth(110);
  stateLabel_ = new QLabel(this);
  hardwareLabel_ = new QLabel(this);
  statusBar()->addPermanentWidget(hardwareLabel_);
  updateHardwareLabel();
  statusBar()->addPermanentWidget(stateLabel_);
  resize(1360, 860);
}

void MainWindow::buildActions() {
  start_ = new QAction(style()->standardIcon(QStyle::SP_MediaPlay), "Start", this);
  start_->setShortcut(QKeySequence("Ctrl+R"));
  start_->setToolTip("Start training (Ctrl+R)");
  pause_ = new QAction(style()->standardIcon(QStyle::SP_MediaPause), "Pause", this);
  pause_->setShortcut(QKeySequence("Ctrl+P"));
  pause_->setToolTip("Pause after the current step, or resume (Ctrl+P)");
  stop_ = new QAction(style()->standardIcon(QStyle::SP_MediaStop), "Stop", this);
  stop_->setShortcut(QKeySequence("Ctrl+."));
  stop_->setToolTip("Finish the current step, save a checkpoint, end the run (status: stopped) (Ctrl+.)");
  stopNoSave_ = new QAction("Stop without saving", this);
  connect(start_, &QAction::triggered, this, [this] {
    QString error;
    if (!startRun(&error)) QMessageBox::warning(this, "Cannot start", error);
  });
  connect(pause_, &QAction::triggered, this, [this] {
    if (controller_->state() == RunState::Paused)
      controller_->resume();
    else
      controller_->pause();
  });
  connect(stop_, &QAction::triggered, this, [this] { controller_->stop(true); });
  connect(stopNoSave_, &QAction::triggered, this, [this] { controller_->stop(false); });

  auto* toolbar = addToolBar("Run");
  toolbar->setObjectName("RunToolbar");
  toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toolbar->addAction(start_);
  toolbar->addAction(pause_);
  toolbar->addAction(stop_);
  auto* stopMenu = new QMenu(this);
  stopMenu->addAction(stopNoSave_);
  if (auto* button = qobject_cast<QToolButton*>(toolbar->widgetForAction(stop_))) {
    button->setMenu(stopMenu);
    button->setPopupMode(QToolButton::MenuButtonPopup);
  }
  toolbar->addSeparator();
  toolbar->addWidget(progress_);
  toolbar->addWidget(etaLabel_);

  auto* file = menuBar()->addMenu("&File");
  file->addAction("Open config…", QKeySequence::Open, editor_, &ConfigEditorPanel::open);
  file->addAction("Save config", QKeySequence::Save, editor_, &ConfigEditorPanel::save);
  file->addAction("Save config as…", QKeySequence::SaveAs, editor_, &ConfigEditorPanel::saveAs);
  file->addAction("Reset to the embedded default", this, [this] {
    if (doc_->isModified() &&
        QMessageBox::question(this, "Reset", "Discard the current setup and open the embedded default?") !=
            QMessageBox::Yes)
      return;
    loadEmbeddedDefault();
  });
  file->addSeparator();
  file->addAction("Quit", QKeySequence::Quit, this, &QWidget::close);
  auto* run = menuBar()->addMenu("&Run");
  run->addAction(start_);
  run->addAction(pause_);
  run->addAction(stop_);
  run->addAction(stopNoSave_);
  auto* help = menuBar()->addMenu("&Help");
  help->addAction("About Tunebench", this, [this] { QMessageBox::about(this, "About Tunebench", aboutText()); });
}

// The threads are the setup's (num_threads; null or 0: one per core), what a run will use.
QString MainWindow::hardwareText() const {
  const auto m = tb::compile::machine_info();
  bool ok = false;
  const int asked = doc_->scalar("num_threads").toInt(&ok);
  const int threads = ok && asked > 0 ? asked : m.cores;
  QString text = QString("%1 cores · %2 training thread%3 · ATen %4")
                     .arg(m.cores)
                     .arg(threads)
                     .arg(threads == 1 ? "" : "s")
                     .arg(QString::fromStdString(m.aten_isa));
  if (!m.onednn_isa.empty()) text += " · oneDNN " + QString::fromStdString(m.onednn_isa);
  if (m.memory_total > 0)
    text += QString(" · %1 memory, %2 free").arg(formatBytes(double(m.memory_total)), formatBytes(double(m.memory_available)));
  return text;
}

QString MainWindow::aboutText() const {
  const auto m = tb::compile::machine_info();
  return QString("<p><b>Tunebench %1</b>: fine-tune LLMs on this machine.</p>"
                 "<p>LibTorch %2<br>Qt %3<br>oneDNN %4</p>"
                 "<p>Kernels: ATen %5%6<br>%7; LibTorch's default: %8</p>")
      .arg(QCoreApplication::applicationVersion().isEmpty() ? QString(TUNEBENCH_VERSION) : QCoreApplication::applicationVersion(),
           QString::fromStdString(m.torch_version), QString(qVersion()),
           m.onednn_version.empty() ? QString("(not in this build)") : QString::fromStdString(m.onednn_version),
           QString::fromStdString(m.aten_isa),
           m.onednn_isa.empty() ? QString() : ", oneDNN " + QString::fromStdString(m.onednn_isa))
      .arg(m.cores == 1 ? QString("1 core") : QString("%1 cores").arg(m.cores))
      .arg(m.torch_threads == 1 ? QString("1 thread") : QString("%1 threads").arg(m.torch_threads));
}

void MainWindow::restoreSettings() {
  QSettings settings;
  if (settings.contains("window/geometry")) restoreGeometry(settings.value("window/geometry").toByteArray());
  if (settings.contains("window/state")) restoreState(settings.value("window/state").toByteArray());
}

void MainWindow::saveSettings() {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  saveSetup();
}

void MainWindow::saveSetup() {
  if (saveSetupTimer_) saveSetupTimer_->stop();
  QSettings settings;
  settings.setValue("setup/text", doc_->text());
  settings.setValue("setup/file", doc_->filePath());
  settings.setValue("setup/bundled", doc_->bundledName());
}

QString MainWindow::etaText() const { return etaTile_->value(); }
QString MainWindow::compileTileText() const { return compileTile_->isHidden() ? QString() : compileTile_->value(); }

// Once this setup has a compiled run and an eager one (the live run and its newest twin among the runs
// listed), the tile says how much faster the compiled step is and what its warm-up cost.
void MainWindow::updateCompileTile() {
  if (runSetup_.isEmpty() || steadyTokensPerSecond_.empty()) return;
  const double live = tb::training::median(steadyTokensPerSecond_);  // as the twin's, from its log
  const QString self = QDir(controller_->outputDir()).absolutePath();
  for (const RunLog& twin : runs_->listedLogs()) {
    if (twin.setup != runSetup_ || twin.compiled == runCompiled_ || twin.folder() == self) continue;
    const double other = twin.medianSteadyTokensPerSecond();
    if (other <= 0) continue;
    const double ratio = runCompiled_ ? live / other : other / live;
    const int steps = runCompiled_ ? warmupSteps_ : twin.warmupSteps();
    const double seconds = runCompiled_ ? compileSeconds_ : twin.compileSeconds;
    // How noisy each run was (a loaded machine made one eager run's steps 11 s): the ratio is only as good
    // as that.
    const double liveSpread = tb::training::relative_spread(steadyTokensPerSecond_);
    const double twinSpread = tb::training::relative_spread(tb::training::steady_tokens_per_second(twin.steps));
    const int noise = int(std::lround(100 * std::max(liveSpread, twinSpread)));
    compileTile_->setValue(QString("%1x eager").arg(ratio, 0, 'f', 2));
    compileTile_->setDetail(QString("warm-up %1 (%2 step%3) · noise ±%4%")
                                .arg(seconds >= 0 ? QString::number(seconds, 'f', 1) + " s" : QString("–"))
                                .arg(steps)
                                .arg(steps == 1 ? "" : "s")
                                .arg(noise));
    compileTile_->setToolTip(QString("Median steady tokens/s of this %1 run against %2 (%3). Noise: the spread "
                                     "(interquartile range over median) of each run's steady tokens/s, %4% here "
                                     "and %5% there; a ratio within it is not a difference.")
                                 .arg(runCompiled_ ? "compiled" : "eager", twin.folder(), twin.compiled ? "compiled" : "eager")
                                 .arg(int(std::lround(100 * liveSpread)))
                                 .arg(int(std::lround(100 * twinSpread))));
    compileTile_->setVisible(true);
    return;
  }
}
QString MainWindow::memoryFloorText() const { return memTile_->value(); }
QString MainWindow::bannerText() const { return banner_->text(); }

// The banner's line, then the run's warnings (kept until the next run starts, so the end of the run
// does not wipe them).
void MainWindow::setBanner(const QString& html) {
  bannerMain_ = html;
  QString text = html;
  for (const QString& w : runWarnings_)
    text += "<br><span style='color:#b26a00'><b>Warning:</b> " + w.toHtmlEscaped() + "</span>";
  banner_->setText(text);
}

// The file the setup came from and what it trains now: a setup opened from one config and pointed at a
// model folder no longer looks like that config.
void MainWindow::updateTitle() {
  const QString base = doc_->modelBaseName();
  const QString model = base == "from_hf_config" ? QFileInfo(doc_->scalar("model.path")).fileName() : base;
  setWindowTitle(QString("Tunebench — %1%2 — %3, %4")
                     .arg(doc_->displayName(), doc_->isModified() ? " *" : "", model.isEmpty() ? QString("no model") : model,
                          recipeKindLabel(doc_->recipeKind())));
}

namespace {

std::string yamlQuoted(const QString& path) { return tb::config::yaml_quoted(path.toStdString()); }

bool holdsARun(const QString& folder) {
  return QFileInfo(metricsFileOf(folder)).isFile() || !scanCheckpoints(folder).isEmpty();
}

}  // namespace

QString MainWindow::runsFolder() const { return setup_->runsFolder(); }

QString MainWindow::nextRunFolder() const {
  const QString parent = runsFolder();
  const QString name = setup_->runNameEdit()->text().trimmed();
  if (!name.isEmpty()) return parent + "/" + name;
  const QString base = QString("%1-%2-%3")
                           .arg(doc_->recipeKind() == RecipeKind::Full ? "full" : doc_->recipeKind() == RecipeKind::Lora ? "lora" : "qlora",
                                doc_->boolean("compile", false) ? "compile" : "eager",
                                QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss"));
  QString folder = parent + "/" + base;
  for (int n = 2; QFileInfo::exists(folder); ++n) folder = parent + "/" + base + "-" + QString::number(n);
  return folder;
}

// Every Start writes into a folder of its own, so runs never hide each other; a named folder that holds
// a run already is the user's call.
// A run the estimate says will not fit in the memory available is the user's call (the estimate is rough:
// it can be wrong both ways).
bool MainWindow::memoryAllowsStart(QString* error) {
  const auto estimate = estimateOf(*doc_);
  const auto machine = tb::compile::machine_info();
  if (!estimate || machine.memory_available == 0 || estimate->total_bytes() <= double(machine.memory_available)) return true;
  const QString why = QString("This setup is estimated to need %1, and %2 of memory is available now: the run may "
                              "swap or be killed. Start it anyway?")
                          .arg(formatBytes(estimate->total_bytes()), formatBytes(double(machine.memory_available)));
  const bool go = confirmMemory_ ? confirmMemory_(why)
                                 : QMessageBox::question(this, "Not enough memory?", why) == QMessageBox::Yes;
  if (!go && error) *error = why;
  return go;
}

bool MainWindow::startRun(QString* error) {
  if (!setup_->datasetProblem().isEmpty()) {
    const QString why = "The dataset cannot be read: " + setup_->datasetProblem();
    setBanner("<span style='color:#c62828'>" + why.toHtmlEscaped() + "</span>");
    if (error) *error = why;
    return false;
  }
  if (!memoryAllowsStart(error)) return false;
  const QString folder = nextRunFolder();
  std::vector<std::string> overrides = {"output_dir=" + yamlQuoted(folder)};
  if (holdsARun(folder)) {
    // Two runs in one folder would mix their checkpoints and logs: the earlier one goes, or this one waits.
    const bool replace = confirmReuse_ ? confirmReuse_(folder)
                                       : QMessageBox::question(this, "The run folder is in use",
                                                               folder + " holds a run already. Replace it? Its "
                                                               "checkpoints and log are deleted.") == QMessageBox::Yes;
    if (!replace) {
      if (error) *error = folder + " holds a run already: give the run another name";
      return false;
    }
    overrides.push_back("overwrite_output_dir=true");
  }
  if (!startWith(overrides, 0, error)) return false;
  setup_->runNameEdit()->clear();
  return true;
}

bool MainWindow::startWith(const std::vector<std::string>& overrides, qint64 resumeStep, QString* error) {
  runWarnings_.clear();
  editor_->validateNow();
  const auto result = doc_->validate(overrides);
  if (!result.ok()) {
    const size_t n = result.diagnostics.size();
    QString why = n == 1 ? QString("The config has a problem") : QString("The config has %1 problems").arg(n);
    QStringList listed;  // every one, as the Config tab lists them (the first few in the banner)
    for (size_t i = 0; i < std::min<size_t>(n, 5); ++i) listed << QString::fromStdString(result.diagnostics[i].format());
    if (n > 5) listed << QString("… and %1 more in the Config tab").arg(n - 5);
    if (!listed.isEmpty()) why += ":\n" + listed.join('\n');
    tabs_->setCurrentWidget(editor_);
    setBanner("<span style='color:#c62828'>" + why.toHtmlEscaped().replace('\n', "<br>") + "</span>");
    if (error) *error = why;
    return false;
  }
  tb::config::Config config = *result.config;
  // Several processes share the cores, as the CLI's default shares them: never more threads than cores.
  QString threadsNote;
  if (setup_->processes() > 1) {
    const auto split = tb::config::worker_threads(tb::config::setting_int(config, "num_threads"), setup_->processes());
    if (!split.note.empty()) {
      config.root = YAML::Clone(config.root);
      config.root["num_threads"] = split.threads;
      threadsNote = QString::fromStdString(split.note);
    }
  }
  const bool compiled = config.get_bool("compile", false);
  live_->clear();
  liveRun_ = live_->addRun(QString("%1, %2").arg(recipeKindLabel(doc_->recipeKind()), compiled ? "compile" : "eager"));
  const QString outputDir = QString::fromStdString(config.get_string("output_dir", ""));
  if (resumeStep > 0) {
    // The curve up to the checkpoint, from the log, so the resumed run continues it.
    const RunLog history = readRunLog(outputDir);
    std::vector<PlotSample> before;
    for (const auto& s : history.steps)
      if (s.step <= resumeStep)
        before.push_back({double(s.step), s.loss, s.tokens_per_second, s.step_time_s, s.peak_memory_gib,
                          s.phase == tb::training::Phase::Warmup});
    live_->append(liveRun_, before);
  }
  eta_ = tb::training::EtaEstimator();
  progress_->setFormat("%v / %m steps");
  progress_->setRange(0, 1);
  progress_->setValue(0);
  etaLabel_->setText("ETA –");
  for (MetricTile* t : {lossTile_, tokensTile_, stepTile_, etaTile_, memTile_}) t->setValue("–");
  runSetup_.clear();
  runCompiled_ = compiled;
  steadyTokensPerSecond_.clear();
  warmupSteps_ = 0;
  compileSeconds_ = -1;
  compileTile_->setVisible(false);
  memTile_->setToolTip({});
  autoStopRequested_ = false;
  QString why;
  if (!controller_->start(config, doc_->recipe(), &why, setup_->processes())) {
    setBanner("<span style='color:#c62828'>" + why.toHtmlEscaped() + "</span>");
    if (error) *error = why;
    return false;
  }
  setBanner((resumeStep > 0 ? QString("Resuming from step %1 in %2").arg(resumeStep).arg(outputDir)
                             : QString("Training into %1").arg(outputDir)) +
            (threadsNote.isEmpty() ? QString() : "<br>" + threadsNote.toHtmlEscaped()));
  checkpoints_->setOutputDir(outputDir);
  chat_->setOutputDir(outputDir);
  runs_->setRunsRoot(QFileInfo(outputDir).absolutePath());
  runs_->addRecentRun(outputDir);
  tabs_->setCurrentIndex(0);
  return true;
}

bool MainWindow::reloadCheckpoint(CheckpointEntry checkpoint, QString* error) {
  if (!checkpoint.complete) {
    if (error) *error = checkpoint.path + " is incomplete (no manifest)";
    return false;
  }
  // A checkpoint saved after the last epoch has nothing left to train: say so instead of starting a run
  // that ends at once ("completed after 0 steps, loss nan").
  bool ok = false;
  const qint64 epochs = doc_->scalar("epochs").toLongLong(&ok);
  if (ok && checkpoint.epoch >= epochs) {
    const QString why = QString("Nothing is left to train: %1 was saved after epoch %2 of %3. Raise Epochs to train "
                                "on from it, or use \"Start new run from these weights\".")
                            .arg(checkpoint.name)
                            .arg(checkpoint.epoch)
                            .arg(epochs);
    setBanner(why.toHtmlEscaped());
    if (error) *error = why;
    return false;
  }
  // The run continues in its own folder, whatever the setup's output folder says now.
  return startWith({"resume_from_checkpoint=true", "checkpointer.checkpoint_dir=" + yamlQuoted(checkpoint.path),
                    "output_dir=" + yamlQuoted(QFileInfo(checkpoint.path).absolutePath())},
                   std::max<qint64>(1, checkpoint.step), error);
}

bool MainWindow::startFromWeights(CheckpointEntry checkpoint, QString* error) {
  if (!checkpoint.complete) {
    if (error) *error = checkpoint.path + " is incomplete (no manifest)";
    return false;
  }
  // The files this checkpoint holds, as its manifest lists them.
  std::vector<std::string> files;
  try {
    files = tb::checkpoint::resolve_checkpoint_files(checkpoint.path.toStdString(), {});
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  // The weights are this run's only: the setup (and what the window remembers of it) keeps its own.
  QString folder = nextRunFolder();
  if (setup_->runNameEdit()->text().trimmed().isEmpty()) folder += "-from-" + checkpoint.name;
  std::vector<std::string> overrides = {"checkpointer.checkpoint_dir=" + yamlQuoted(checkpoint.path),
                                        "checkpointer.checkpoint_files=" + tb::config::yaml_flow_list(files),
                                        "output_dir=" + yamlQuoted(folder)};
  if (doc_->value("resume_from_checkpoint").IsDefined()) overrides.push_back("resume_from_checkpoint=false");
  if (!startWith(overrides, 0, error)) return false;
  setup_->runNameEdit()->clear();
  setBanner(QString("Training into %1 from the weights of %2").arg(folder, checkpoint.path));
  return true;
}

void MainWindow::onStep(const tb::training::StepMetrics& m) {
  eta_.observe(m);
  lossTile_->setValue(QString::number(m.loss, 'f', 4));
  tokensTile_->setValue(QString::number(m.tokens_per_second, 'f', 0));
  stepTile_->setValue(m.total_steps > 0 ? QString("%1 / %2").arg(m.step).arg(m.total_steps) : QString::number(m.step));
  const auto eta = eta_.eta_seconds();
  const QString etaText = eta ? QString::fromStdString(tb::training::format_duration(*eta)) : "–";
  etaTile_->setValue(etaText);
  etaLabel_->setText("ETA " + etaText);
  if (m.total_steps > 0) {
    progress_->setRange(0, int(m.total_steps));
    progress_->setValue(int(std::min(m.step, m.total_steps)));
  }
  live_->append(liveRun_, PlotSample{double(m.step), m.loss, m.tokens_per_second, m.step_time_s, m.peak_memory_gib,
                                     m.phase == tb::training::Phase::Warmup});
  if (m.phase == tb::training::Phase::Warmup)
    ++warmupSteps_;
  else if (!m.resumed_before)
    steadyTokensPerSecond_.push_back(m.tokens_per_second);
  updateCompileTile();
  if (options_.quitAfterSteps > 0 && m.step >= options_.quitAfterSteps && !autoStopRequested_) {
    autoStopRequested_ = true;
    controller_->stop(true);
  }
}

void MainWindow::onEvent(const RunEvent& e) {
  if (e.kind == "start") {
    runSetup_ = e.setup;
    runCompiled_ = e.compile;
  } else if (e.kind == "compile" && e.seconds >= 0) {
    compileSeconds_ = e.seconds;
    live_->setWarmupSeconds(liveRun_, e.seconds);
    statusBar()->showMessage(QString("Compile warm-up took %1 s%2")
                                 .arg(e.seconds, 0, 'f', 2)
                                 .arg(e.fallback ? "; the fused step disagreed with eager, the run continues eager" : ""),
                             8000);
  } else if (e.kind == "warning") {
    // Said where the user looks (e.g. compile fell back to eager), not only in the log.
    runWarnings_ << e.message;
    setBanner(bannerMain_);
  } else if (e.memory) {
    memTile_->setValue(formatBytes(double(e.memory->floorBytes())));
    memTile_->setToolTip(e.memory->describe() + ". Peak memory adds activations and workspace on top.");
    live_->setMemoryFloor(liveRun_, e.memory->floorGib());
  } else if (e.kind == "checkpoint") {
    checkpoints_->refresh();
    chat_->setOutputDir(controller_->outputDir());
    // The folder's name (its whole path is in the Checkpoints tab): a long path ran into the machine line.
    statusBar()->showMessage("Checkpoint saved: " + QFileInfo(e.path).fileName() + " of " +
                                 QFileInfo(QFileInfo(e.path).absolutePath()).fileName(),
                             8000);
  }
}

void MainWindow::onState(RunState state, const QString& message) {
  const bool active = controller_->isActive();
  start_->setEnabled(!active);
  pause_->setEnabled((state == RunState::Running || state == RunState::Paused) && controller_->canPause());
  pause_->setToolTip(active && !controller_->canPause()
                         ? "Pause is not available for a run of several processes: the workers cannot hold between "
                           "steps. Stop saves a checkpoint, and Reload on it continues the run."
                         : "Pause after the current step, or resume (Ctrl+P)");
  pause_->setText(state == RunState::Paused ? "Resume" : "Pause");
  pause_->setIcon(style()->standardIcon(state == RunState::Paused ? QStyle::SP_MediaPlay : QStyle::SP_MediaPause));
  stop_->setEnabled(state == RunState::Running || state == RunState::Paused);
  stopNoSave_->setEnabled(stop_->isEnabled());
  checkpoints_->setRunActive(active);
  chat_->setTrainingActive(active);
  setup_->setEnabled(!active);
  editor_->editor()->setReadOnly(active);
  QString text = stateName(state);
  text[0] = text[0].toUpper();
  stateLabel_->setText(message.isEmpty() ? text : text + " — " + message);
  if (state == RunState::Failed)
    setBanner("<span style='color:#c62828'><b>Failed:</b> " + message.toHtmlEscaped() + "</span>");
}

void MainWindow::onFinished(const RunOutcome& outcome) {
  etaLabel_->setText("ETA –");
  etaTile_->setValue("–");
  checkpoints_->refresh();
  chat_->setOutputDir(controller_->outputDir());
  runs_->refreshList();
  if (outcome.status != tb::training::RunStatus::Failed) {
    setBanner(QString("%1 after %2 steps, loss %3%4")
                         .arg(outcome.status == tb::training::RunStatus::Completed ? "Completed" : "Stopped")
                         .arg(outcome.stepsDone)
                         .arg(outcome.lastLoss, 0, 'f', 4)
                         .arg(outcome.lastCheckpoint.isEmpty() ? QString() : "; saved " + outcome.lastCheckpoint));
  }
  if (closeAfterStop_) {
    close();
    return;
  }
  if (options_.quitAfterSteps > 0 || (!options_.screenshot.isEmpty() && options_.autostart))
    QTimer::singleShot(300, this, [this, outcome] { takeScreenshotsAndQuit(outcome.status == tb::training::RunStatus::Failed); });
}

void MainWindow::takeScreenshotsAndQuit(int exitCode) {
  if (!options_.screenshot.isEmpty()) {
    const QFileInfo base(options_.screenshot);
    QDir().mkpath(base.absolutePath());
    // Runs: this setup's eager and compiled runs side by side when there are both, else this run.
    if (!runs_->compareEagerVsCompile() && !controller_->outputDir().isEmpty())
      runs_->showRun(controller_->outputDir(), false);
    if (!options_.chatPrompt.isEmpty()) askChatForScreenshot();
    auto shoot = [&](QWidget* tab, const QString& suffix) {
      tabs_->setCurrentWidget(tab);
      live_->drainNow();
      live_->plot()->replot(QCustomPlot::rpImmediateRefresh);
      runs_->plot()->plot()->replot(QCustomPlot::rpImmediateRefresh);
      QApplication::processEvents();
      const QString path = base.absolutePath() + "/" + base.completeBaseName() + suffix + ".png";
      if (!grab().save(path)) {
        std::cerr << "tunebench: could not write " << path.toStdString() << "\n";
        exitCode = 1;
      } else {
        std::cout << "screenshot: " << path.toStdString() << "\n";
      }
    };
    const QList<QPair<QWidget*, QString>> shots = {{tabs_->widget(0), ""},      {editor_, "-config"},
                                                   {checkpoints_, "-checkpoints"}, {runs_, "-runs"},
                                                   {chat_, "-chat"}};
    for (const auto& [tab, suffix] : shots) shoot(tab, suffix);
    resize(1024, 640);
    QApplication::processEvents();
    shoot(tabs_->widget(0), "-1024x640");
    // Every tab at the smallest size the window is made for and at a full-HD screen's.
    for (const QSize size : {QSize(1024, 640), QSize(1920, 1080)}) {
      resize(size);
      QApplication::processEvents();
      const QString tag = QString("%1x%2").arg(size.width()).arg(size.height());
      for (const auto& [tab, suffix] : shots)
        shoot(tab, (suffix.isEmpty() ? QString("-live") : suffix) + "-" + tag);
    }
    tabs_->setCurrentIndex(0);
  }
  saveSettings();
  QApplication::exit(exitCode);
}

// For the Chat tab's screenshot: the run's newest checkpoint beside its base model, greedy, short.
void MainWindow::askChatForScreenshot() {
  chat_->setOutputDir(controller_->outputDir());
  if (chat_->sourceBox()->count() < 2) return;
  chat_->sourceBox()->setCurrentIndex(chat_->sourceBox()->count() - 1);
  chat_->compareBox()->setChecked(true);
  chat_->temperatureBox()->setValue(0);
  chat_->maxTokensBox()->setValue(40);
  QEventLoop loop;
  connect(chat_, &ChatPanel::repliesFinished, &loop, &QEventLoop::quit);
  QTimer::singleShot(120000, &loop, &QEventLoop::quit);
  if (chat_->send(options_.chatPrompt)) loop.exec();
}

// The machine line takes at most 45% of the status bar, elided (whole in its tooltip): the messages on the
// left ran into it in a 1024 px window.
void MainWindow::updateHardwareLabel() {
  hardwareFull_ = hardwareText();  // reads the machine (memory free): not on every resize
  hardwareLabel_->setToolTip(hardwareFull_ + "\nCores, the threads training uses, the instruction sets the kernels "
                                             "picked, and memory (Help > About has the versions)");
  elideHardwareLabel();
}

void MainWindow::elideHardwareLabel() {
  const int room = std::max(120, width() * 45 / 100);
  hardwareLabel_->setText(hardwareLabel_->fontMetrics().elidedText(hardwareFull_, Qt::ElideRight, room));
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  if (hardwareLabel_) elideHardwareLabel();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (controller_->isActive()) {
    if (controller_->state() != RunState::Stopping) {
      const bool stop = confirmClose_ ? confirmClose_()
                                      : QMessageBox::question(this, "A run is in progress",
                                                              "Stop the run (it finishes the current step and saves a "
                                                              "checkpoint) and close?") == QMessageBox::Yes;
      if (!stop) {
        event->ignore();
        return;
      }
      controller_->stop(true);
    }
    closeAfterStop_ = true;
    statusBar()->showMessage("Stopping the run before closing…");
    event->ignore();  // closes from onFinished, once the worker is done
    return;
  }
  saveSettings();
  event->accept();
}

}  // namespace tb::ui
