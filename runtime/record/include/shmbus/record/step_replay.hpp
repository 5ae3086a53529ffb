#pragma once
/// @file step_replay.hpp
/// Replay in module-dependency order: the modules named live run as real
/// processes (the user starts them; they may be new versions); everything
/// else comes from the recording, one frame at a time.
///
/// A frame is one recorded output of the first live module in topological
/// order (the root), with every recorded output of the other live modules
/// that cites it, directly or through each other. For each frame, in
/// recorded order, the replay publishes the recorded messages those
/// outputs cite and no live module makes (side inputs first, then each
/// output's trigger), then waits until every live module has answered: a
/// live output answers a recorded one when its trigger is the live
/// counterpart of the recorded one's trigger, and replaces it downstream.
/// A module that does not answer within the timeout gets a note; the
/// recorded output is published in its place and the frame is failed.
///
/// The output file is the replayed run in the recording's identities (fed
/// messages as recorded, each live output under the channel and sequence
/// of the recorded output it replaces), so `bag diff` matches frames.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shmbus/config.hpp"

namespace shmbus::record {

struct StepReplayOptions {
  std::string recording;                       ///< one MCAP file (a split recording: merge it first)
  std::vector<std::string> modules;            ///< the live modules, by node name
  std::string output;                          ///< the replayed run's recording
  double timeout_s = 5.0;                      ///< how long a live module may take to subscribe or answer
  std::string node = "shmbus-play";            ///< the node the replay's endpoints register under
  std::string library = "shmbus step replay";  ///< the output's MCAP library
  /// Lines for a person while it replays (a module that did not answer, a
  /// frame's inputs missing from the recording); none when empty.
  std::function<void(const std::string&)> on_note;
};

struct StepReplaySummary {
  std::uint64_t frames = 0;     ///< frames replayed
  std::uint64_t failed = 0;     ///< frames a live module did not answer in time
  std::uint64_t unmatched = 0;  ///< live outputs that answered no frame
  double took_s = 0;
  bool stopped = false;  ///< the stop predicate ended it early
};

class StepReplay {
 public:
  /// Reads the recording and plans the frames. Throws Error: kNotFound for
  /// a module the recording does not have or no frame of the root,
  /// kInvalidArgument for options that cannot replay (no output, no module,
  /// a module that reads nothing, several files).
  StepReplay(const Config& config, StepReplayOptions options);
  ~StepReplay();
  StepReplay(const StepReplay&) = delete;
  StepReplay& operator=(const StepReplay&) = delete;
  StepReplay(StepReplay&&) = delete;
  StepReplay& operator=(StepReplay&&) = delete;

  [[nodiscard]] std::size_t frame_count() const noexcept;
  /// The live modules in topological order; the first is the root.
  [[nodiscard]] const std::vector<std::string>& live_modules() const noexcept;
  /// Recorded outputs of the live modules that no frame reaches, and why
  /// ("channel#sequence: reason"); the replay cannot make them again.
  [[nodiscard]] const std::vector<std::string>& unframed() const noexcept;

  /// Opens the output and the channels and waits until every live module
  /// reads every channel it read in the recording. Throws Error(kNotFound)
  /// naming the module and channel after the timeout, or when stopped.
  void await_modules(const std::function<bool()>& stop = {});
  /// Replays every frame (awaiting the modules first if not done yet) and
  /// closes the output.
  StepReplaySummary run(const std::function<bool()>& stop = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmbus::record
