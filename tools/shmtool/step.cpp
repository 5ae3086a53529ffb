// shmtool play --step: replay in module-dependency order
// (shmbus::record::StepReplay); this maps the options and prints.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/record/step_replay.hpp"

namespace shmbus::tool {

int run_play_step(const Globals& g, const PlayOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  const std::vector<std::string>& files = o.player.files;
  if (files.size() != 1) {
    throw Error(Errc::kInvalidArgument, "play --step: give one recording (a split recording: merge it first)");
  }
  record::StepReplayOptions options = o.step_replay;
  options.node = "shmtool-play";
  options.library = "shmtool play --step";
  options.recording = files.front();
  options.on_note = [](const std::string& line) { print(line); };
  record::StepReplay replay(config, std::move(options));
  const auto stop = [] { return stop_requested(); };
  replay.await_modules(stop);
  print(fmt::format("step replay of {}: {} frames through {} (live), first module {}; writing {}\n", files.front(),
                    replay.frame_count(), fmt::join(replay.live_modules(), ", "), replay.live_modules().front(),
                    o.step_replay.output));
  const auto& unframed = replay.unframed();
  for (std::size_t k = 0; k < unframed.size() && k < 3; ++k) {
    print(fmt::format("recorded {} is in no frame and is not replayed\n", unframed[k]));
  }
  const record::StepReplaySummary s = replay.run(stop);
  print(
      fmt::format("replayed {} frames in {:.3f} s ({:.0f} frames/s): {} answered by the live modules, {} failed; "
                  "{} live outputs matched no frame; {} recorded outputs in no frame\n",
                  s.frames, s.took_s, s.took_s > 0 ? static_cast<double>(s.frames) / s.took_s : 0.0,
                  s.frames - s.failed, s.failed, s.unmatched, unframed.size()));
  return s.failed == 0 && unframed.empty() ? 0 : 1;
}

}  // namespace shmbus::tool
