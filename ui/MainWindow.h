// The Tunebench window: run setup in a dock; Live (metric tiles and plots), Config, Checkpoints, Runs and
// Chat as tabs; a toolbar with Start / Pause / Stop, a progress bar and the ETA (steady steps only). Thin: it
// wires the panels to one ConfigDocument and one TrainingController.
#pragma once

#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <functional>
#include <string>
#include <vector>

#include "RunHistory.h"
#include "RunTypes.h"
#include "training/metric_loggers.h"

class QAction;
class QLabel;
class QProgressBar;
class QTabWidget;
class QTimer;

namespace tb::ui {

class ChatPanel;
class CheckpointsPanel;
class ConfigDocument;
class ConfigEditorPanel;
class LivePlot;
class MetricTile;
class RunSetupPanel;
class RunsPanel;
class TrainingController;

// The config the window opens when nothing else is asked for.
inline constexpr const char* kEmbeddedDefaultConfig = "tiny/full_single_device";

struct StartupOptions {
  QString config;           // a bundled config name or a YAML file; empty: the remembered setup or the default
  bool useDefault = false;  // ignore the remembered setup
  bool autostart = false;   // press Start once the window is up
  int quitAfterSteps = 0;   // with autostart: stop (saving) after this many steps, then quit
  QString screenshot;       // PNG of the window when quitting; the other tabs go to <name>-config.png, ...
                            // and the Live tab at 1024x640 to <name>-1024x640.png
  QString chatPrompt;       // with screenshot: asked of the last checkpoint (and its base) before the Chat shot
  QStringList overrides;    // `key=value` / `~key`, as tunebench-cli takes them, applied to the opened setup
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const StartupOptions& options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Validates the setup and starts it; false with the reason (also shown) when it cannot.
  bool startRun(QString* error = nullptr);
  // Resumes training from a checkpoint: resume_from_checkpoint=true, checkpointer.checkpoint_dir=<it>.
  // Both take the checkpoint by value: the panel's entry it comes from is rebuilt when the run starts.
  bool reloadCheckpoint(CheckpointEntry checkpoint, QString* error = nullptr);
  // A new run (step 1) from the checkpoint's weights, into a new output folder.
  bool startFromWeights(CheckpointEntry checkpoint, QString* error = nullptr);
  void loadEmbeddedDefault();

  // Asked before closing during a run; true = stop (saving) and close. Default: a message box.
  void setCloseConfirmation(std::function<bool()> confirm) { confirmClose_ = std::move(confirm); }
  // Asked before a run writes into a folder that already holds one; true = replace it (the earlier run's
  // checkpoints and log are deleted: overwrite_output_dir). Default: a message box.
  void setReuseConfirmation(std::function<bool(const QString& folder)> confirm) { confirmReuse_ = std::move(confirm); }
  // Asked before a run whose memory estimate exceeds the memory available; true = start anyway.
  void setMemoryConfirmation(std::function<bool(const QString& why)> confirm) { confirmMemory_ = std::move(confirm); }
  // The absolute folder the setup's runs go to (config/user_dirs.h: a relative output_dir is put under
  // the user's data folder, never under the share folder or the working directory).
  QString runsFolder() const;
  // The folder the next Start writes to: runsFolder()/<run name>, or runsFolder()/<recipe>-<eager|compile>-<time>.
  QString nextRunFolder() const;
  QString startupMessage() const { return startupMessage_; }

  ConfigDocument* document() const { return doc_; }
  TrainingController* controller() const { return controller_; }
  RunSetupPanel* setupPanel() const { return setup_; }
  ConfigEditorPanel* editorPanel() const { return editor_; }
  CheckpointsPanel* checkpointsPanel() const { return checkpoints_; }
  RunsPanel* runsPanel() const { return runs_; }
  ChatPanel* chatPanel() const { return chat_; }
  LivePlot* livePlot() const { return live_; }
  QProgressBar* progressBar() const { return progress_; }
  QString etaText() const;
  // The run's memory budget as the recipe logged it: weights + gradients + optimizer states ("–" before).
  QString memoryFloorText() const;
  QString bannerText() const;
  // "compile: 1.52x eager" once this setup has a compiled and an eager run (this one and a twin); empty before.
  QString compileTileText() const;
  QString hardwareText() const;  // the status bar's machine line
  QString aboutText() const;     // Help > About
  QAction* startAction() const { return start_; }
  QAction* pauseAction() const { return pause_; }
  QAction* stopAction() const { return stop_; }

 protected:
  void closeEvent(QCloseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void buildUi();
  void buildActions();
  void loadInitialSetup();
  void applyStartupOverrides();
  void restoreSettings();
  void saveSettings();
  void saveSetup();  // the setup's text and file, on every change (a crash loses nothing)
  bool startWith(const std::vector<std::string>& overrides, qint64 resumeStep, QString* error);
  void onStep(const tb::training::StepMetrics& m);
  void onEvent(const RunEvent& e);
  void onState(RunState state, const QString& message);
  void onFinished(const RunOutcome& outcome);
  void updateTitle();
  void updateHardwareLabel();  // the machine line read again
  void elideHardwareLabel();   // fitted to the window's width
  void updateCompileTile();
  bool memoryAllowsStart(QString* error);
  void setBanner(const QString& html);
  void takeScreenshotsAndQuit(int exitCode);
  void askChatForScreenshot();

  StartupOptions options_;
  ConfigDocument* doc_;
  TrainingController* controller_;
  RunSetupPanel* setup_;
  ConfigEditorPanel* editor_;
  CheckpointsPanel* checkpoints_;
  RunsPanel* runs_;
  ChatPanel* chat_;
  LivePlot* live_;
  MetricTile* lossTile_;
  MetricTile* tokensTile_;
  MetricTile* stepTile_;
  MetricTile* etaTile_;
  MetricTile* memTile_;
  MetricTile* compileTile_;
  QLabel* banner_;
  QString bannerMain_;
  QStringList runWarnings_;
  QTabWidget* tabs_;
  QAction* start_ = nullptr;
  QAction* pause_ = nullptr;
  QAction* stop_ = nullptr;
  QAction* stopNoSave_ = nullptr;
  QProgressBar* progress_;
  QLabel* etaLabel_;
  QLabel* stateLabel_;
  QLabel* hardwareLabel_ = nullptr;
  QString hardwareFull_;
  // The live run, for the compile tile: its setup key, mode, steady tokens/s, warm-up.
  QString runSetup_;
  bool runCompiled_ = false;
  std::vector<double> steadyTokensPerSecond_;
  int warmupSteps_ = 0;
  double compileSeconds_ = -1;
  tb::training::EtaEstimator eta_;
  int liveRun_ = -1;
  bool closeAfterStop_ = false;
  bool autoStopRequested_ = false;
  std::function<bool()> confirmClose_;
  std::function<bool(const QString&)> confirmReuse_;
  std::function<bool(const QString&)> confirmMemory_;
  QString startupMessage_;
  QTimer* saveSetupTimer_ = nullptr;
};

}  // namespace tb::ui
