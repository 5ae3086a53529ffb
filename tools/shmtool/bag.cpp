// shmtool play and bag (info, recover, export): a recording back onto the
// bus, what it holds, an indexed file from an unfinished one, and a copy
// with JSON messages that any MCAP tool decodes.
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <poll.h>
#include <sys/prctl.h>
#include <termios.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus_msgs/Clock.hpp"

namespace shmbus::tool {

using namespace record;  // NOLINT(google-build-using-namespace): the recording names

namespace {

using Json = nlohmann::json;

/// FROM=TO pairs.
std::map<std::string, std::string> parse_remaps(const std::vector<std::string>& remaps) {
  std::map<std::string, std::string> out;
  for (const auto& r : remaps) {
    const auto eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      throw Error(Errc::kInvalidArgument, "play: --remap '" + r + "' is not FROM=TO, e.g. --remap /imu=/imu_replayed");
    }
    out[r.substr(0, eq)] = r.substr(eq + 1);
  }
  return out;
}

/// RFC 4648 base64, for raw payloads in JSON (as Foxglove shows bytes).
std::string base64(std::span<const std::byte> data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < data.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, data.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? std::to_integer<std::uint32_t>(data[i + k]) : 0U);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63U] : '=';
  }
  return out;
}

/// The jsonschema of a raw channel's exported messages.
Json raw_json_schema() {
  return Json{{"$schema", "http://json-schema.org/draft-07/schema#"},
              {"title", "shmbus/Bytes"},
              {"type", "object"},
              {"properties", {{"data", {{"type", "string"}, {"contentEncoding", "base64"}}}}},
              {"required", {"data"}},
              {"additionalProperties", false}};
}

/// One file's channels as publishers in the domain (by MCAP channel id).
struct PlayedFile {
  std::unique_ptr<mcap::Reader> reader;
  std::map<std::uint16_t, Publisher*> publishers;
};

/// A wall time for --begin/--end: nanoseconds since the epoch, or ISO 8601
/// in UTC ("2026-11-23T10:00:00", fractions and a trailing Z allowed).
std::uint64_t parse_wall_time(const std::string& option, const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return std::stoull(text);
  std::tm tm{};
  const char* rest = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  double fraction = 0;
  if (rest != nullptr && *rest == '.') {
    char* after = nullptr;
    fraction = std::strtod(rest, &after);
    rest = after;
  }
  if (rest != nullptr && *rest == 'Z') ++rest;
  if (rest == nullptr || *rest != '\0') {
    throw Error(Errc::kInvalidArgument, "play: " + option + " '" + text +
                                            "' is not a wall time; use UTC like 2026-11-23T10:00:00.5Z or "
                                            "nanoseconds since the epoch (see shmtool bag info for the span)");
  }
  return static_cast<std::uint64_t>(::timegm(&tm)) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(std::llround(fraction * 1e9));
}

/// The keys on a terminal (space pauses and resumes, s steps one message
/// while paused, + and - double and halve the rate) and the status line.
/// Inactive, and silent, when stdin is not a terminal.
class Controls {
 public:
  explicit Controls(bool paused) : active_(::isatty(STDIN_FILENO) == 1), paused_(paused) {
    if (!active_) return;
    ::tcgetattr(STDIN_FILENO, &saved_);
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  ~Controls() {
    if (!active_) return;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    std::fputs("\n", stderr);
  }
  Controls(const Controls&) = delete;
  Controls& operator=(const Controls&) = delete;

  [[nodiscard]] bool active() const noexcept { return active_; }
  [[nodiscard]] bool paused() const noexcept { return paused_; }

  /// Waits up to `ms` for a key; returns it (0: none).
  char key(int ms) const {
    if (!active_) return 0;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return 0;
    char c = 0;
    return ::read(STDIN_FILENO, &c, 1) == 1 ? c : '\0';
  }
  void toggle_pause() noexcept { paused_ = !paused_; }

  void status(double position_s, double length_s, double rate, std::uint64_t played) {
    if (!active_ || mono_now_ns() < next_status_) return;
    next_status_ = mono_now_ns() + 100'000'000;
    std::fprintf(stderr, "\r[%s] %8.3f / %.3f s  x%g  %llu messages   ", paused_ ? "paused " : "playing", position_s,
                 length_s, rate, static_cast<unsigned long long>(played));
  }

 private:
  bool active_;
  bool paused_;
  termios saved_{};
  std::int64_t next_status_ = 0;
};

/// How long before a message is due the player stops sleeping and spins.
constexpr std::int64_t kSpinNs = 100'000;

/// When each message is due: base_mono + (log_time - base_log) / rate,
/// absolute deadlines on CLOCK_MONOTONIC (nothing drifts), re-based when
/// the rate changes or a pause ends.
class Pacer {
 public:
  Pacer(double rate, std::uint64_t from_log, Controls& controls)
      : rate_(rate), base_log_(from_log), base_mono_(mono_now_ns()), controls_(controls) {}

  /// Starts over: the next message is due at once and fixes the schedule
  /// (loading the first chunk is not counted against the spacing).
  void restart() noexcept { anchored_ = false; }

  /// Waits until `log_time` is due (handling the keys meanwhile); false
  /// when a stop was requested.
  bool wait(std::uint64_t log_time, double length_s, std::uint64_t played) {
    if (!anchored_) {
      anchored_ = true;
      base_log_ = log_time;
      base_mono_ = mono_now_ns();
    }
    for (;;) {
      if (stop_requested()) return false;
      const std::int64_t now = mono_now_ns();
      controls_.status(static_cast<double>(position(now) - first_) / 1e9, length_s, rate_, played);
      if (controls_.paused()) {
        if (handle(controls_.key(20), log_time)) return true;  // a step
        continue;
      }
      const std::int64_t due =
          base_mono_ + static_cast<std::int64_t>(static_cast<double>(log_time - base_log_) / rate_);
      if (now >= due) return true;
      const std::int64_t left_ms = (due - now) / 1'000'000;
      if (controls_.active() && left_ms > 2) {
        handle(controls_.key(static_cast<int>(std::min<std::int64_t>(left_ms - 1, 50))), log_time);
        continue;
      }
      // Sleep until shortly before, then spin: a wake-up is late by tens of
      // microseconds, which would shift every message by as much.
      if (due - now > kSpinNs && !sleep_until(due - kSpinNs)) return false;
      while (mono_now_ns() < due) {
      }
      return true;
    }
  }
  void set_first(std::uint64_t first) noexcept { first_ = first; }
  [[nodiscard]] double rate() const noexcept { return rate_; }

 private:
  /// The recording time now corresponds to.
  [[nodiscard]] std::uint64_t position(std::int64_t now) const noexcept {
    if (controls_.paused() || now <= base_mono_) return base_log_;
    return base_log_ + static_cast<std::uint64_t>(static_cast<double>(now - base_mono_) * rate_);
  }

  /// One key; true when it releases the next message (a step).
  bool handle(char key, std::uint64_t next_log) {
    const std::int64_t now = mono_now_ns();
    switch (key) {
      case ' ':
        // Pausing holds the position; resuming continues from it.
        if (!controls_.paused()) base_log_ = position(now);
        base_mono_ = now;
        controls_.toggle_pause();
        return false;
      case 's':
        if (!controls_.paused()) return false;
        base_log_ = next_log;
        return true;
      case '+':
      case '-':
        base_log_ = position(now);
        base_mono_ = now;
        rate_ = std::clamp(key == '+' ? rate_ * 2 : rate_ / 2, 0.001, 1000.0);
        return false;
      default:
        return false;
    }
  }

  double rate_;
  std::uint64_t base_log_;
  std::int64_t base_mono_;
  bool anchored_ = false;
  std::uint64_t first_ = 0;
  Controls& controls_;
};

}  // namespace

namespace {

/// What part of the recording plays: [from, to] of its span [start, last]
/// (start UINT64_MAX: no message).
struct PlayWindow {
  std::uint64_t start = UINT64_MAX;
  std::uint64_t last = 0;
  std::uint64_t from = 0;
  std::uint64_t to = UINT64_MAX;
  [[nodiscard]] double length_s() const {
    return start == UINT64_MAX ? 0.0 : static_cast<double>(std::min(last, to) - from) / 1e9;
  }
};

PlayWindow play_window(const std::vector<PlayedFile>& files, const PlayOptions& o) {
  PlayWindow w;
  for (const PlayedFile& f : files) {
    const mcap::Statistics& s = f.reader->info().statistics;
    if (s.message_count == 0) continue;
    w.start = std::min(w.start, s.message_start_time);
    w.last = std::max(w.last, s.message_end_time);
  }
  w.from = w.start == UINT64_MAX ? 0 : w.start + static_cast<std::uint64_t>(o.start_offset_s * 1e9);
  if (!o.begin.empty()) w.from = std::max(w.from, parse_wall_time("--begin", o.begin));
  w.to = o.end.empty() ? UINT64_MAX : parse_wall_time("--end", o.end);
  if (w.start != UINT64_MAX && (w.from > w.last || w.to < w.from)) {
    throw Error(
        Errc::kInvalidArgument,
        fmt::format("play: nothing to play between {} and {}; the recording spans {} to {}",
                    wall_time_text(static_cast<std::int64_t>(w.from)),
                    w.to == UINT64_MAX ? std::string("its end") : wall_time_text(static_cast<std::int64_t>(w.to)),
                    wall_time_text(static_cast<std::int64_t>(w.start)),
                    wall_time_text(static_cast<std::int64_t>(w.last))));
  }
  return w;
}

/// One publisher per played name; the recording's type and schema create a
/// missing channel, and a channel that exists with another type is refused
/// naming both (Error kTypeMismatch).
std::map<std::string, std::unique_ptr<Publisher>> played_publishers(std::vector<PlayedFile>& files,
                                                                    const PlayOptions& o, Context& ctx) {
  const auto remaps = parse_remaps(o.remap);
  std::map<std::string, std::unique_ptr<Publisher>> publishers;
  for (PlayedFile& f : files) {
    const mcap::FileInfo& info = f.reader->info();
    for (const auto& ch : info.channels) {
      if ((!o.channels.empty() && !matches_any(o.channels, ch.topic)) || matches_any(o.exclude, ch.topic)) continue;
      if (ch.topic == kProvenanceChannel) continue;  // facts about the recording, never traffic
      const std::string name = remaps.count(ch.topic) != 0 ? remaps.at(ch.topic) : ch.topic;
      auto& p = publishers[name];
      if (!p) p = std::make_unique<Publisher>(name, recorded_type(info, ch), ctx);
      f.publishers[ch.id] = p.get();
    }
  }
  if (publishers.empty()) {
    throw Error(Errc::kNotFound, "play: no recorded channel matches; see shmtool bag info " + o.files.front());
  }
  return publishers;
}

/// Publishes the window's messages of every file once, paced; false when
/// stopped (Ctrl-C, or q).
bool play_files(std::vector<PlayedFile>& files, const PlayWindow& w, Pacer& pacer,
                TypedPublisher<shmbus_msgs::Clock>* clock, std::uint64_t& played) {
  std::uint64_t last_clock = 0;
  bool stopped = false;
  pacer.restart();
  for (PlayedFile& f : files) {
    if (stopped) break;
    f.reader->read_messages([&](const mcap::MessageView& m) {
      if (m.log_time > w.to) return false;
      const auto it = f.publishers.find(m.channel_id);
      if (m.log_time < w.from || it == f.publishers.end()) return true;
      if (!pacer.wait(m.log_time, w.length_s(), played)) {
        stopped = true;
        return false;
      }
      if (clock != nullptr && (last_clock == 0 || m.log_time >= last_clock + 1'000'000 || m.log_time < last_clock)) {
        shmbus_msgs::Clock t{};
        t.clock_ns = m.log_time;
        clock->publish(t);
        last_clock = m.log_time;
      }
      it->second->publish(m.data);
      ++played;
      return true;
    });
  }
  return !stopped;
}

}  // namespace

int run_play(const Globals& g, const PlayOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  if (o.paused && ::isatty(STDIN_FILENO) != 1) {
    throw Error(Errc::kInvalidArgument, "play: --paused needs a terminal on stdin (space resumes); run it from one");
  }
  Config c = config;
  c.node = "shmtool-play";
  Context ctx(std::move(c));
  std::vector<PlayedFile> files;
  for (const auto& path : o.files) files.push_back({std::make_unique<mcap::Reader>(path), {}});
  std::sort(files.begin(), files.end(), [](const PlayedFile& a, const PlayedFile& b) {
    return a.reader->info().statistics.message_start_time < b.reader->info().statistics.message_start_time;
  });
  const PlayWindow window = play_window(files, o);
  const auto publishers = played_publishers(files, o, ctx);
  std::unique_ptr<TypedPublisher<shmbus_msgs::Clock>> clock;
  if (o.clock) clock = std::make_unique<TypedPublisher<shmbus_msgs::Clock>>(kClockChannel, ctx);
  if (o.wait_for_subscribers) {
    print(fmt::format("waiting for a subscriber on each of the {} channels\n", publishers.size()));
    for (const auto& [name, p] : publishers) {
      while (!stop_requested() && introspect::ChannelReader(config.domain, name).view().subscribers.empty()) {
        sleep_until(mono_now_ns() + 10'000'000);
      }
    }
  }
  Controls controls(o.paused);
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // wake-ups as asked, not up to 50 us later
  print(fmt::format("playing {} channels from {} file(s) at {}x{}{}; {}Ctrl-C stops\n", publishers.size(), files.size(),
                    o.rate, o.loop ? ", looping" : "", o.clock ? fmt::format(", time on {}", kClockChannel) : "",
                    controls.active() ? "space pauses, s steps, +/- change the rate; " : ""));
  std::uint64_t played = 0;
  const std::int64_t started = mono_now_ns();
  Pacer pacer(o.rate, window.from, controls);
  pacer.set_first(window.from);
  while (play_files(files, window, pacer, clock.get(), played) && o.loop && !stop_requested()) {
  }
  print(fmt::format("played {} messages in {:.3f} s\n", played, static_cast<double>(mono_now_ns() - started) / 1e9));
  return 0;
}

int run_bag_recover(const Globals& /*g*/, const std::string& in, const std::string& out) {
  if (in == out) {
    throw Error(Errc::kInvalidArgument, "bag recover: -o must name another file than " + in + " (it is read whole)");
  }
  const mcap::RecoverReport r = mcap::recover(in, out);
  const mcap::Reader check(out);  // what was written reads back as a complete file
  print(fmt::format("recovered {} messages in {} chunks ({} metadata records) from {} into {} ({})\n", r.messages,
                    r.chunks, r.metadata, in, out, human_bytes(check.info().bytes)));
  if (!r.stopped_because.empty()) {
    print(fmt::format("the rest of {} (from byte {}) is unreadable: {}\n", in, r.valid_bytes, r.stopped_because));
  }
  return 0;
}

int run_bag_export(const Globals& /*g*/, const std::string& in, const std::string& out, const std::string& encoding) {
  if (encoding != "json") {
    throw Error(Errc::kInvalidArgument, "bag export: unknown --encoding '" + encoding + "'; use json");
  }
  if (in == out) throw Error(Errc::kInvalidArgument, "bag export: -o must name another file than " + in);
  mcap::Reader reader(in);
  const mcap::FileInfo& info = reader.info();
  mcap::WriterOptions w;
  w.profile = info.profile;
  w.library = "shmtool bag export";
  w.compression = mcap::parse_compression(info.compression).value_or(mcap::Compression::kZstd);
  mcap::Writer writer(out, w);
  // Per recorded channel: its decoder and its id in the copy. A raw
  // channel (no schema) becomes {"data": base64}.
  struct Exported {
    std::optional<schema::Schema> schema;
    std::uint16_t id = 0;
  };
  std::map<std::uint16_t, Exported> channels;
  std::map<std::string, std::uint16_t> schema_ids;  // jsonschema text -> id
  for (const auto& ch : info.channels) {
    Exported e;
    const TypeInfo type = recorded_type(info, ch);
    e.schema = schema_of(type);
    const std::string js = e.schema ? e.schema->json_schema().dump() : raw_json_schema().dump();
    auto it = schema_ids.find(js);
    if (it == schema_ids.end()) it = schema_ids.emplace(js, writer.add_schema(type.name, "jsonschema", js)).first;
    e.id = writer.add_channel(it->second, ch.topic, "json", ch.metadata);
    channels[ch.id] = std::move(e);
  }
  for (const auto& m : info.metadata) writer.write_metadata(m);
  std::uint64_t n = 0;
  reader.read_messages([&](const mcap::MessageView& m) {
    const Exported& e = channels.at(m.channel_id);
    const std::string text = e.schema ? e.schema->decode(m.data).dump() : Json{{"data", base64(m.data)}}.dump();
    writer.write({e.id, m.sequence, m.log_time, m.publish_time, std::as_bytes(std::span{text})});
    ++n;
    return true;
  });
  writer.close();
  print(fmt::format("exported {} messages on {} channels from {} into {} (json, {})\n", n, channels.size(), in, out,
                    human_bytes(writer.bytes())));
  return 0;
}

int run_bag_info(const Globals& g, const std::string& path) {
  const mcap::Reader reader(path);
  const mcap::FileInfo& info = reader.info();
  const mcap::Statistics& s = info.statistics;
  const double duration_s = static_cast<double>(s.message_end_time - s.message_start_time) / 1e9;
  const std::map<std::string, std::uint64_t> lost = recorded_losses(info);
  Json channels = Json::array();
  for (const auto& c : info.channels) {
    std::uint64_t count = 0;
    for (const auto& [id, n] : s.channel_message_counts) count += id == c.id ? n : 0;
    const mcap::Schema* schema = info.schema(c.schema_id);
    const double rate = duration_s > 0 ? static_cast<double>(count) / duration_s : 0.0;
    channels.push_back({{"name", c.topic},
                        {"type", schema != nullptr ? schema->name : ""},
                        {"messages", count},
                        {"lost", lost.count(c.topic) != 0 ? lost.at(c.topic) : 0},
                        {"rate_hz", rate}});
  }
  if (g.json) {
    const Json j{{"path", path},
                 {"bytes", info.bytes},
                 {"profile", info.profile},
                 {"compression", info.compression.empty() ? "none" : info.compression},
                 {"start_ns", s.message_start_time},
                 {"end_ns", s.message_end_time},
                 {"duration_s", duration_s},
                 {"messages", s.message_count},
                 {"channels", channels}};
    print(j.dump(2) + "\n");
    return 0;
  }
  std::string out =
      fmt::format("path:        {}\nsize:        {}\nprofile:     {}\ncompression: {}\n", path, human_bytes(info.bytes),
                  info.profile, info.compression.empty() ? "none" : info.compression);
  out += fmt::format("start:       {}\nend:         {}\nduration:    {:.3f} s\nmessages:    {}\nchannels:\n",
                     wall_time_text(static_cast<std::int64_t>(s.message_start_time)),
                     wall_time_text(static_cast<std::int64_t>(s.message_end_time)), duration_s, s.message_count);
  Table t({"CHANNEL", "TYPE", "MESSAGES>", "RATE>", "LOST>"});
  for (const auto& c : channels) {
    t.add({c["name"], c["type"], std::to_string(c["messages"].get<std::uint64_t>()),
           fmt::format("{:.1f} Hz", c["rate_hz"].get<double>()), std::to_string(c["lost"].get<std::uint64_t>())});
  }
  print(out + t.render(2));
  return 0;
}

}  // namespace shmbus::tool
