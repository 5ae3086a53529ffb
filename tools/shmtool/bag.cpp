// shmtool record, play and bag info: the bus to MCAP, back onto the bus, and
// what a recording holds.
//
// The recorder is a subscriber on every channel it records (node
// "shmtool-record"): it never slows a publisher, and what it loses on the
// rings is counted per channel. A reader thread drains the rings into a
// bounded queue; a writer thread compresses and writes, so a slow disk
// loses messages only when the queue is full, and those are counted too.
// Both counts are written into the file (metadata "shmbus.lost") and
// printed at the end.
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus::tool {

namespace {

using Json = nlohmann::json;

constexpr const char* kRecorderNode = "shmtool-record";
constexpr const char* kLostMetadata = "shmbus.lost";

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  for (const auto& g : globs) {
    if (::fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

/// One message between the reader and the writer thread.
struct Taken {
  std::size_t channel;  ///< index into Recorder::channels_
  std::uint64_t sequence;
  std::uint64_t log_time;
  std::uint64_t publish_time;
  std::vector<std::byte> data;
};

/// A bounded byte budget between the threads.
class Queue {
 public:
  explicit Queue(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}
  /// False when the message does not fit (counted by the caller).
  bool push(Taken&& t) {
    const std::lock_guard lock(mutex_);
    if (bytes_ + t.data.size() > max_bytes_ && !items_.empty()) return false;
    bytes_ += t.data.size();
    items_.push_back(std::move(t));
    ready_.notify_one();
    return true;
  }
  /// Waits up to 100 ms; moves what is queued into `out`.
  void pop_all(std::deque<Taken>& out) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !items_.empty(); });
    out.swap(items_);
    bytes_ = 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Taken> items_;
  std::uint64_t bytes_ = 0;
  std::uint64_t max_bytes_;
};

struct RecordedChannel {
  std::string name;
  std::unique_ptr<Subscriber> sub;
  std::uint16_t mcap_id = 0;
  /// When the recorder subscribed: a message published before (taken from
  /// the ring's history) is logged at its publish time, not at the moment
  /// the recorder found its channel.
  std::int64_t subscribed_wall_ns = 0;
  std::atomic<std::uint64_t> queue_dropped{0};
  std::uint64_t written = 0;  ///< writer thread
};

/// The recorder: which channels, the threads, the file.
class Recorder {
 public:
  Recorder(const Config& config, const RecordOptions& o)
      : o_(o), config_(config), queue_(o.queue_bytes), writer_(o.output, writer_options(o)) {
    Config c = config;
    c.node = kRecorderNode;
    context_ = std::make_unique<Context>(std::move(c));
    writer_.write_metadata({"shmbus.recording",
                            {{"host", host_name()},
                             {"domain", config.domain},
                             {"start_wall_ns", std::to_string(wall_now_ns())},
                             {"recorder", "shmtool record"}}});
  }

  int run() {
    discover();
    if (channels_.empty() && o_.patterns.empty() && !o_.all) {
      throw Error(Errc::kInvalidArgument, "record: no channel to record; name channels or globs, or give --all");
    }
    print(fmt::format("recording {} into {} ({} compression); Ctrl-C stops\n",
                      o_.all ? std::string("every channel") : fmt::format("{}", fmt::join(o_.patterns, " ")), o_.output,
                      o_.compression));
    std::thread writer([this] { write_loop(); });
    const std::int64_t end =
        o_.duration_s > 0 ? mono_now_ns() + static_cast<std::int64_t>(o_.duration_s * 1e9) : INT64_MAX;
    std::int64_t next_discovery = mono_now_ns() + 200'000'000;
    std::vector<std::size_t> ready;
    std::vector<std::byte> buffer;
    while (!stop_requested() && !write_failed_.load() && mono_now_ns() < end) {
      if (mono_now_ns() >= next_discovery) {
        discover();  // channels that appear after the start and match
        next_discovery = mono_now_ns() + 200'000'000;
      }
      const std::int64_t until = std::min({end, next_discovery, mono_now_ns() + 100'000'000});
      wait_set_.wait(std::chrono::nanoseconds(std::max<std::int64_t>(until - mono_now_ns(), 0)), ready);
      for (const std::size_t i : ready) drain(i, buffer);
    }
    for (std::size_t i = 0; i < channels_.size(); ++i) drain(i, buffer);  // what is left in the rings
    reading_done_ = true;
    writer.join();
    if (write_error_) std::rethrow_exception(write_error_);
    return finish();
  }

 private:
  static mcap::WriterOptions writer_options(const RecordOptions& o) {
    mcap::WriterOptions w;
    const auto c = mcap::parse_compression(o.compression);
    if (!c) {
      throw Error(Errc::kInvalidArgument,
                  "record: unknown --compression '" + o.compression + "'; use zstd, lz4 or none");
    }
    w.compression = *c;
    w.chunk_size = o.chunk_size;
    w.library = "shmtool record";
    return w;
  }

  bool wanted(const std::string& name) const {
    if (matches_any(o_.exclude, name)) return false;
    return o_.all || matches_any(o_.patterns, name);
  }

  /// Subscribes to the matching channels not yet recorded. A channel that
  /// appeared after the start is read from its oldest message still in the
  /// ring: everything in it was published while recording.
  void discover() {
    const bool started = discovered_once_;
    discovered_once_ = true;
    std::vector<std::string> names;
    try {
      names = introspect::DomainView(config_.domain, config_.access()).channel_names();
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
      return;  // the domain has no channel yet: they are looked for again
    }
    for (const auto& name : names) {
      if (recorded_.count(name) != 0 || !wanted(name)) continue;
      auto rc = std::make_unique<RecordedChannel>();
      rc->name = name;
      try {
        rc->sub = std::make_unique<Subscriber>(
            name, std::nullopt, *context_,
            SubscriberOptions{.history = started ? UINT32_MAX : 0U, .node = kRecorderNode});
      } catch (const Error&) {
        continue;  // removed meanwhile: found again if it comes back
      }
      rc->subscribed_wall_ns = wall_now_ns();
      const TypeInfo type = rc->sub->type();
      rc->mcap_id = add_to_file(name, type);
      recorded_.insert(name);
      wait_set_.attach(*rc->sub);
      const std::lock_guard lock(channels_mutex_);
      channels_.push_back(std::move(rc));
    }
  }

  std::uint16_t add_to_file(const std::string& name, const TypeInfo& type) {
    const std::lock_guard lock(writer_mutex_);
    auto it = schemas_.find(type.hash);
    if (it == schemas_.end()) {
      it = schemas_.emplace(type.hash, writer_.add_schema(type.name, "shmbus.msg", type.schema)).first;
    }
    return writer_.add_channel(it->second, name, "shmbus",
                               {{"type_name", type.name},
                                {"type_hash", fmt::format("{:016x}", type.hash)},
                                {"host", host_name()},
                                {"domain", config_.domain}});
  }

  /// Takes what channel `i` has into the queue.
  void drain(std::size_t i, std::vector<std::byte>& buffer) {
    RecordedChannel& rc = *channels_[i];
    buffer.resize(rc.sub->max_message_size());
    for (;;) {
      const TakeResult r = rc.sub->take(buffer);
      if (!r.ok()) return;
      const std::int64_t received =
          r.info.publish_wall_ns < rc.subscribed_wall_ns ? r.info.publish_wall_ns : wall_now_ns();
      Taken t{i, r.info.sequence, static_cast<std::uint64_t>(received),
              static_cast<std::uint64_t>(r.info.publish_wall_ns),
              std::vector<std::byte>(buffer.begin(), buffer.begin() + r.info.size)};
      if (!queue_.push(std::move(t))) rc.queue_dropped.fetch_add(1, std::memory_order_relaxed);
    }
  }

  /// The writer thread. A write error (a full disk) ends the recording:
  /// the reader stops and run() rethrows it (one line, exit 1).
  void write_loop() {
    try {
      write_batches();
    } catch (...) {
      write_error_ = std::current_exception();
      write_failed_ = true;
    }
  }

  void write_batches() {
    std::deque<Taken> batch;
    for (;;) {
      const bool last = reading_done_.load();
      queue_.pop_all(batch);
      for (Taken& t : batch) {
        RecordedChannel* rc = nullptr;
        {
          const std::lock_guard lock(channels_mutex_);
          rc = channels_[t.channel].get();
        }
        const std::lock_guard lock(writer_mutex_);
        writer_.write({rc->mcap_id, static_cast<std::uint32_t>(t.sequence), t.log_time, t.publish_time, t.data});
        ++rc->written;
      }
      batch.clear();
      if (last) return;
    }
  }

  int finish() {
    mcap::KeyValues lost;
    std::uint64_t total = 0;
    std::uint64_t total_lost = 0;
    for (const auto& rc : channels_) {
      const std::uint64_t n = rc->sub->lost() + rc->queue_dropped.load();
      lost.emplace_back(rc->name, std::to_string(n));
      total += rc->written;
      total_lost += n;
      print(fmt::format("  {}: {} messages, {} lost ({} on the ring, {} with the queue full)\n", rc->name, rc->written,
                        n, rc->sub->lost(), rc->queue_dropped.load()));
    }
    writer_.write_metadata({kLostMetadata, lost});
    writer_.close();
    print(fmt::format("recorded {} messages on {} channels into {} ({}), {} lost\n", total, channels_.size(), o_.output,
                      human_bytes(writer_.bytes()), total_lost));
    return 0;
  }

  RecordOptions o_;
  Config config_;
  std::unique_ptr<Context> context_;
  Queue queue_;
  mcap::Writer writer_;
  std::mutex writer_mutex_;  ///< discovery adds channels while the writer thread writes
  std::mutex channels_mutex_;
  std::map<std::uint64_t, std::uint16_t> schemas_;  ///< type hash -> schema id
  std::set<std::string> recorded_;
  std::vector<std::unique_ptr<RecordedChannel>> channels_;
  WaitSet wait_set_;
  std::atomic<bool> reading_done_{false};
  std::atomic<bool> write_failed_{false};
  std::exception_ptr write_error_;  ///< set by the writer thread before write_failed_
  bool discovered_once_ = false;
};

/// The per-channel losses the recorder wrote, by channel name.
std::map<std::string, std::uint64_t> recorded_losses(const mcap::FileInfo& info) {
  std::map<std::string, std::uint64_t> lost;
  for (const auto& m : info.metadata) {
    if (m.name != kLostMetadata) continue;
    for (const auto& [k, v] : m.values) lost[k] += std::stoull(v);
  }
  return lost;
}

/// The type a recorded channel had, from its metadata and schema.
TypeInfo recorded_type(const mcap::FileInfo& info, const mcap::Channel& c) {
  TypeInfo t{"shmbus/Bytes", 0, ""};
  for (const auto& [k, v] : c.metadata) {
    if (k == "type_name") t.name = v;
    if (k == "type_hash") t.hash = std::stoull(v, nullptr, 16);
  }
  if (const mcap::Schema* s = info.schema(c.schema_id)) t.schema = s->data;
  return t;
}

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

/// One file's channels as publishers in the domain (by MCAP channel id).
struct PlayedFile {
  std::unique_ptr<mcap::Reader> reader;
  std::map<std::uint16_t, Publisher*> publishers;
};

}  // namespace

int run_play(const Globals& g, const PlayOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  const auto remaps = parse_remaps(o.remap);
  Config c = config;
  c.node = "shmtool-play";
  Context ctx(std::move(c));
  std::vector<PlayedFile> files;
  for (const auto& path : o.files) files.push_back({std::make_unique<mcap::Reader>(path), {}});
  std::sort(files.begin(), files.end(), [](const PlayedFile& a, const PlayedFile& b) {
    return a.reader->info().statistics.message_start_time < b.reader->info().statistics.message_start_time;
  });
  // One publisher per played name; the recording's type and schema create a
  // missing channel, and a channel that exists with another type is
  // refused naming both (Error kTypeMismatch).
  std::map<std::string, std::unique_ptr<Publisher>> publishers;
  for (PlayedFile& f : files) {
    const mcap::FileInfo& info = f.reader->info();
    for (const auto& ch : info.channels) {
      if ((!o.channels.empty() && !matches_any(o.channels, ch.topic)) || matches_any(o.exclude, ch.topic)) continue;
      const std::string name = remaps.count(ch.topic) != 0 ? remaps.at(ch.topic) : ch.topic;
      auto& p = publishers[name];
      if (!p) p = std::make_unique<Publisher>(name, recorded_type(info, ch), ctx);
      f.publishers[ch.id] = p.get();
    }
  }
  if (publishers.empty()) {
    throw Error(Errc::kNotFound, "play: no recorded channel matches; see shmtool bag info " + o.files.front());
  }
  if (o.wait_for_subscribers) {
    print(fmt::format("waiting for a subscriber on each of the {} channels\n", publishers.size()));
    for (const auto& [name, p] : publishers) {
      while (!stop_requested() && introspect::ChannelReader(config.domain, name).view().subscribers.empty()) {
        sleep_until(mono_now_ns() + 10'000'000);
      }
    }
  }
  print(fmt::format("playing {} channels from {} file(s) at {}x{}; Ctrl-C stops\n", publishers.size(), files.size(),
                    o.rate, o.loop ? ", looping" : ""));
  std::uint64_t played = 0;
  const std::int64_t started = mono_now_ns();
  do {
    // Deadlines are absolute: start + (log_time - first) / rate, so the
    // recorded spacing is kept and nothing drifts.
    const std::int64_t t0 = mono_now_ns();
    std::uint64_t first = 0;
    for (PlayedFile& f : files) {
      if (stop_requested()) break;
      f.reader->read_messages([&](const mcap::MessageView& m) {
        const auto it = f.publishers.find(m.channel_id);
        if (it == f.publishers.end()) return true;
        if (first == 0) first = m.log_time;
        const auto offset = static_cast<double>(m.log_time - first) / o.rate;
        if (!sleep_until(t0 + static_cast<std::int64_t>(offset))) return false;
        it->second->publish(m.data);
        ++played;
        return true;
      });
    }
  } while (o.loop && !stop_requested());
  print(fmt::format("played {} messages in {:.3f} s\n", played, static_cast<double>(mono_now_ns() - started) / 1e9));
  return 0;
}

int run_record(const Globals& g, const RecordOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  Recorder recorder(config, o);
  return recorder.run();
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
