// The recorder (shmbus/record/recorder.hpp): a reader thread drains the
// rings into a bounded queue of batches, a writer thread writes them; in
// snapshot mode the batches of the last window are kept and written on a
// trigger.
#include "shmbus/record/recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "shmbus/bus_channels.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"
#include "shmbus_msgs/Alert.hpp"
#include "shmbus_msgs/RecordTrigger.hpp"

namespace shmbus::record {

namespace {

/// The reader thread hands a batch over at least every this many bytes
/// or messages, so the writer is never starved by one busy channel.
constexpr std::size_t kBatchBytes = std::size_t{8} << 20;
constexpr std::size_t kBatchMessages = 16384;
/// How often the reader thread looks at the registry for new channels
/// (one atomic load): a channel is found within this, long before a ring
/// of the default 64 slots fills at a few hundred hertz.
constexpr std::int64_t kDiscoveryNs = 20'000'000;
/// The writer thread hands the open chunk to the kernel at least this often.
constexpr std::int64_t kChunkFlushNs = 1'000'000'000;
/// How often the reader thread scans the domain's endpoints for the
/// recording's topology (shmbus.modules).
constexpr std::int64_t kTopologyScanNs = 1'000'000'000;

/// What the reader thread took in one pass: messages with their bytes
/// back to back in one buffer, reused from batch to batch (no allocation
/// per message), or one snapshot trigger.
struct Batch {
  struct Entry {
    std::size_t channel = 0;  ///< index into Recorder::channels_
    std::uint64_t sequence = 0;
    std::uint64_t log_time = 0;
    std::uint64_t publish_time = 0;
    std::size_t offset = 0;  ///< of its bytes
    std::size_t size = 0;
    /// Taken without a copy: the writer thread writes it from the ring
    /// (Subscriber::reread), if it is still there.
    bool in_ring = false;
    // Its provenance (from MessageInfo); entry_count entries are in the
    // buffer at provenance_offset.
    ProvenanceFacts provenance{};
    std::uint16_t entry_count = 0;
    std::size_t provenance_offset = 0;
  };
  std::vector<Entry> entries;
  bool trigger = false;  ///< one entry: its bytes are the reason
  std::unique_ptr<std::byte[]> bytes;
  std::size_t capacity = 0;
  std::size_t used = 0;

  /// `n` writable bytes after the used ones (uninitialised).
  std::span<std::byte> room(std::size_t n) {
    if (used + n > capacity) {
      const std::size_t grown = std::max({capacity * 2, used + n, std::size_t{1} << 16});
      auto bigger = std::make_unique_for_overwrite<std::byte[]>(grown);
      if (used != 0) std::memcpy(bigger.get(), bytes.get(), used);
      bytes = std::move(bigger);
      capacity = grown;
    }
    return {bytes.get() + used, n};
  }
  /// Keeps the `size` bytes written into room() as a message, or only its
  /// header for a message left in the ring.
  void add(Entry e) {
    e.offset = used;
    if (!e.in_ring) used += e.size;
    entries.push_back(e);
  }
  /// Appends `info`'s provenance (a message of channel `channel_index`) to
  /// the last entry added.
  void add_provenance(std::uint32_t channel_index, const MessageInfo& info) {
    Entry& e = entries.back();
    e.provenance = {channel_index,    info.publisher_id,   info.sequence,        info.processing_ns,
                    info.input_count, info.provenance_cut, info.second_level_cut};
    e.entry_count = info.entry_count;
    if (info.entry_count == 0) return;
    // Aligned for the reads through provenance(): a message of a size not a
    // multiple of 8 (a 12-byte action answer) leaves `used` unaligned.
    const std::size_t n = sizeof(Provenance) * info.entry_count;
    const std::size_t pad = (alignof(Provenance) - used % alignof(Provenance)) % alignof(Provenance);
    std::memcpy(room(pad + n).data() + pad, info.provenance.data(), n);
    e.provenance_offset = used + pad;
    used += pad + n;
  }
  [[nodiscard]] std::span<const Provenance> provenance(const Entry& e) const {
    return {reinterpret_cast<const Provenance*>(bytes.get() + e.provenance_offset), e.entry_count};
  }
  [[nodiscard]] std::span<const std::byte> data(const Entry& e) const { return {bytes.get() + e.offset, e.size}; }
  [[nodiscard]] bool empty() const noexcept { return entries.empty(); }
  void clear() noexcept {
    entries.clear();
    trigger = false;
    used = 0;
  }
};

/// A bounded byte budget between the threads, and the used batches going
/// back to the reader for reuse.
class Queue {
 public:
  explicit Queue(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}
  /// Takes `b` (leaving it empty), or returns false and leaves it as it is
  /// when it does not fit (the caller counts its messages lost); `force`
  /// (triggers) always fits.
  bool push(Batch& b, bool force = false) {
    const std::lock_guard lock(mutex_);
    if (!force && bytes_ + b.used > max_bytes_ && !items_.empty()) return false;
    bytes_ += b.used;
    items_.push_back(std::move(b));
    b = Batch{};
    ready_.notify_one();
    return true;
  }
  /// Waits up to 100 ms; moves what is queued into `out`.
  void pop_all(std::deque<Batch>& out) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !items_.empty(); });
    out.swap(items_);
    bytes_ = 0;
  }
  /// A written batch, for the reader to fill again. Buffers are kept up to
  /// the queue's budget: memory once faulted in is reused, not returned and
  /// faulted in again (page faults cost more than the copies).
  void recycle(Batch&& b) {
    b.clear();
    const std::lock_guard lock(mutex_);
    if (free_bytes_ + b.capacity <= max_bytes_) {
      free_bytes_ += b.capacity;
      free_.push_back(std::move(b));
    }
  }
  /// An empty batch (a recycled one when there is one).
  Batch fresh() {
    const std::lock_guard lock(mutex_);
    if (free_.empty()) return {};
    Batch b = std::move(free_.back());
    free_.pop_back();
    free_bytes_ -= b.capacity;
    return b;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Batch> items_;
  std::vector<Batch> free_;
  std::uint64_t free_bytes_ = 0;  ///< capacity of the batches in free_
  std::uint64_t bytes_ = 0;
  std::uint64_t max_bytes_;
};

/// What the recorded system looks like, from its endpoints: every
/// channel's registry index and type, the node of each publisher id, each
/// node's reads and writes. The reader thread scans the domain once a
/// second (and at the end); the writer thread writes the latest into each
/// file's metadata. What was seen once stays: a module that ran during the
/// recording is part of its topology.
class Topology {
 public:
  /// `own_node`: the recorder's, left out of the modules.
  explicit Topology(std::string own_node) : own_node_(std::move(own_node)) {}

  /// Reader thread.
  void scan(const introspect::DomainView& domain, const SegmentAccess& access) {
    for (const std::string& name : domain.channel_names()) scan_channel(domain.domain(), name, access);
  }

  /// Reader thread: one channel (a publisher id not seen before: a module
  /// may live shorter than a scan period).
  void scan_channel(const std::string& domain, const std::string& name, const SegmentAccess& access) {
    {
      auto it = readers_.find(name);
      if (it == readers_.end()) {
        try {
          it = readers_.emplace(name, introspect::ChannelReader(domain, name, false, access)).first;
        } catch (const Error&) {
          return;  // being created or removed: looked at again next time
        }
      }
      const introspect::ChannelView v = it->second.view();
      const std::lock_guard lock(mutex_);
      indexes_[name] = v.registry_index;
      types_[name] = v.type_name;
      for (const auto& ep : v.publishers) {
        nodes_[name][ep.id] = ep.node;
        if (ep.node != own_node_ && !ep.node.empty()) modules_[ep.node].second.insert(name);
      }
      for (const auto& ep : v.subscribers) {
        if (ep.node != own_node_ && !ep.node.empty()) modules_[ep.node].first.insert(name);
      }
    }
  }

  /// Writer thread: the metadata records of a file whose channels had
  /// these first publishers (channel name -> publisher id).
  std::vector<mcap::Metadata> metadata(const std::map<std::string, std::uint32_t>& first_publishers) {
    const std::lock_guard lock(mutex_);
    mcap::KeyValues indexes;
    mcap::KeyValues types;
    mcap::KeyValues writers;
    mcap::KeyValues modules;
    for (const auto& [name, index] : indexes_) indexes.emplace_back(name, std::to_string(index));
    for (const auto& [name, type] : types_) types.emplace_back(name, type);
    for (const auto& [name, first] : first_publishers) {
      nlohmann::json nodes = nlohmann::json::object();
      if (auto it = nodes_.find(name); it != nodes_.end()) {
        for (const auto& [id, node] : it->second) nodes[std::to_string(id)] = node;
      }
      writers.emplace_back(name, nlohmann::json{{"first_publisher", first}, {"nodes", std::move(nodes)}}.dump());
    }
    for (const auto& [node, rw] : modules_) {
      modules.emplace_back(node, nlohmann::json{{"reads", rw.first}, {"writes", rw.second}}.dump());
    }
    return {{kChannelIndexesMetadata, std::move(indexes)},
            {kChannelTypesMetadata, std::move(types)},
            {kWritersMetadata, std::move(writers)},
            {kModulesMetadata, std::move(modules)}};
  }

 private:
  std::map<std::string, introspect::ChannelReader> readers_;  ///< the reader thread's
  std::mutex mutex_;
  std::map<std::string, std::uint32_t> indexes_;
  std::map<std::string, std::string> types_;
  std::map<std::string, std::map<std::uint32_t, std::string>> nodes_;
  /// node -> (reads, writes)
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> modules_;
  std::string own_node_;
};

struct RecordedChannel {
  std::string name;
  TypeInfo type;
  std::uint32_t registry_index = 0;
  std::vector<std::uint32_t> known_publishers;  ///< the reader thread's: ids whose node the topology has
  std::unique_ptr<Subscriber> sub;
  /// When the recorder subscribed: a message published before (taken from
  /// the ring's history) is logged at its publish time, not at the moment
  /// the recorder found its channel.
  std::int64_t subscribed_wall_ns = 0;
  // Counters the reader thread writes and the writer thread reads for each
  // file's losses: relaxed, no ordering partner (a count read mid-run may be
  // a pass behind; the final ones are read after the reader's last store,
  // ordered by reading_done_ and the writer thread's join).
  std::atomic<std::uint64_t> ring_lost{0};      ///< the subscriber's count, kept by the reader thread
  std::atomic<std::uint64_t> queue_dropped{0};  ///< the queue was full
  /// Large messages (each a chunk of its own in the file) are left in the
  /// ring for the writer thread, which writes them from there: no copy
  /// through the queue. Only while the writer is less than this many
  /// messages of the channel behind the reader (a quarter of the ring, so
  /// that the publishers do not lap it before it gets there); further
  /// behind, it gets copies, which the queue holds. Never for snapshots
  /// and iceoryx channels (keeps_copies). Read from the ring's capacity at
  /// each drain: a ring that grows may have fewer slots.
  bool keeps_copies = false;
  /// Messages taken by the reader thread and not yet written. Relaxed, no ordering partner: only a bound on
  /// how far behind the writer may be for the reader to leave a message in
  /// the ring; a stale value moves that bound by a message or two, and a
  /// message overwritten anyway is caught by its RingCheck.
  std::atomic<std::uint32_t> unwritten{0};
  std::atomic<std::uint64_t> overwritten{0};  ///< left in the ring and overwritten before they were written
  /// Written by the writer thread alone; read by status() (relaxed: a
  /// count for a status line, no ordering partner).
  std::atomic<std::uint64_t> written{0};
  // The writer thread's own:
  std::uint64_t lost_in_earlier_files = 0;
  [[nodiscard]] std::uint64_t lost_on_ring() const noexcept { return ring_lost.load() + overwritten.load(); }
  [[nodiscard]] std::uint64_t lost() const noexcept { return lost_on_ring() + queue_dropped.load(); }
};

/// One output file being written (the writer thread's).
struct OpenFile {
  std::unique_ptr<mcap::Writer> writer;
  std::vector<std::uint16_t> ids;         ///< recorded channel index -> MCAP channel id
  std::optional<RecordedChannels> forms;  ///< the channels' form, over `writer`
  std::uint64_t first_log_time = 0;       ///< 0: no message yet
  /// Recorded channel index -> the publisher id of its first message here.
  std::map<std::size_t, std::uint32_t> first_publisher;
  std::optional<std::uint16_t> provenance_id;  ///< the /shmbus/provenance channel, once used
  std::uint64_t provenance_written = 0;
};

}  // namespace

/// The recorder: which channels, the threads, the files.
class Recorder::Impl {
 public:
  Impl(const Config& config, RecorderOptions o)
      : o_(std::move(o)), config_(config), queue_(o_.queue_bytes), options_(writer_options(o_)), topology_(o_.node) {
    if (o_.output.empty()) throw Error(Errc::kInvalidArgument, "record: no output file");
    if (o_.patterns.empty() && !o_.all) {
      throw Error(Errc::kInvalidArgument, "record: no channel to record; name channels or globs, or record all");
    }
    Config c = config;
    c.node = o_.node;
    // The recorder is not latency-bound: its reader thread sleeps on the
    // futex at once instead of spinning first, and leaves the CPU to the
    // writer thread and the publishers.
    c.defaults.wait_spin = std::chrono::nanoseconds(0);
    for (ChannelRule& rule : c.channels) rule.wait_spin.reset();
    context_ = std::make_unique<Context>(std::move(c));
    if (o_.snapshot_s > 0) {
      trigger_sub_ = std::make_unique<TypedSubscriber<shmbus_msgs::RecordTrigger>>(kTriggerChannel, *context_,
                                                                                   SubscriberOptions{.node = o_.node});
      wait_set_.attach(trigger_sub_->untyped());
      wait_set_.attach(snapshot_guard_);
    } else {
      // Nothing to trigger: the first file is opened now, so a path that
      // cannot be written fails before anything is recorded.
      open_next_file();
    }
  }

  [[nodiscard]] std::string first_file() const { return numbered() ? numbered_path(o_.output, 0) : o_.output; }

  RecordSummary run(const std::function<bool()>& stop_requested) {
    stop_requested_ = stop_requested;
    discover();
    std::thread writer([this] { write_loop(); });
    try {
      read_loop();
    } catch (...) {
      reading_done_ = true;
      writer.join();
      throw;
    }
    reading_done_ = true;
    writer.join();
    if (write_error_) std::rethrow_exception(write_error_);
    return finish();
  }

  void stop() noexcept { stop_ = true; }
  void trigger_snapshot() noexcept { snapshot_guard_.trigger(); }

 private:
  static mcap::WriterOptions writer_options(const RecorderOptions& o) {
    mcap::WriterOptions w;
    w.compression = o.compression;
    w.chunk_size = o.chunk_size;
    w.library = o.library;
    return w;
  }

  [[nodiscard]] bool numbered() const noexcept {
    return o_.split_bytes > 0 || o_.split_duration_s > 0 || o_.snapshot_s > 0;
  }

  bool wanted(const std::string& name) const {
    if (name == kTriggerChannel || matches_any(o_.exclude, name)) return false;
    return o_.all || matches_any(o_.patterns, name);
  }

  [[nodiscard]] bool stopping() const { return stop_.load() || (stop_requested_ && stop_requested_()); }

  void read_loop() {
    const std::int64_t end =
        o_.duration_s > 0 ? mono_now_ns() + static_cast<std::int64_t>(o_.duration_s * 1e9) : INT64_MAX;
    std::vector<std::size_t> ready;
    std::int64_t next_scan = 0;
    while (!stopping() && !write_failed_.load() && mono_now_ns() < end) {
      if (registry_changed()) discover();  // channels that appear after the start and match
      if (mono_now_ns() >= next_scan && domain_view_) {
        topology_.scan(*domain_view_, config_.access());
        next_scan = mono_now_ns() + kTopologyScanNs;
      }
      const std::int64_t until = std::min(end, mono_now_ns() + kDiscoveryNs);
      wait_set_.wait(std::chrono::nanoseconds(std::max<std::int64_t>(until - mono_now_ns(), 0)), ready);
      for (const std::size_t w : ready) {
        if (w < slot_channel_.size() && slot_channel_[w] != SIZE_MAX) drain(slot_channel_[w]);
      }
      push_batch();
      if (o_.snapshot_s > 0) take_triggers();
    }
    for (std::size_t i = 0; i < channels_.size(); ++i) drain(i);  // what is left in the rings
    push_batch();
    if (domain_view_) topology_.scan(*domain_view_, config_.access());
  }

  /// Hands the messages taken so far to the writer thread; when the queue
  /// is full they are counted lost on their channels.
  void push_batch() {
    if (batch_.empty()) return;
    if (queue_.push(batch_)) {
      batch_ = queue_.fresh();
      return;
    }
    for (const auto& e : batch_.entries) {
      RecordedChannel& rc = *channels_[e.channel];
      rc.queue_dropped.fetch_add(1, std::memory_order_relaxed);
      rc.unwritten.fetch_sub(1, std::memory_order_relaxed);
    }
    batch_.clear();  // its buffer is filled again
  }

  /// Whether channels were listed or removed since the last look (one
  /// atomic load of the registry's generation; the registry is opened once
  /// the domain exists).
  bool registry_changed() {
    if (!domain_view_) {
      try {
        domain_view_.emplace(config_.domain, config_.access());
      } catch (const Error& e) {
        if (e.code() != Errc::kNotFound) throw;
        return false;  // no channel in the domain yet
      }
    }
    const std::uint64_t g = domain_view_->generation();
    if (g == seen_generation_) return false;
    seen_generation_ = g;
    return true;
  }

  /// Subscribes to the matching channels not yet recorded. A channel that
  /// appeared after the start is read from its first message: everything in
  /// it was published while recording (what its ring no longer holds when
  /// we find it is counted lost).
  void discover() {
    const bool started = discovered_once_;
    discovered_once_ = true;
    if (!domain_view_ && !registry_changed()) return;  // the domain has no channel yet: looked for again
    const std::vector<std::string> names = domain_view_->channel_names();
    if (!started) present_at_start_.insert(names.begin(), names.end());
    if (o_.snapshot_s > 0 && !alerts_sub_ && std::find(names.begin(), names.end(), kAlertsChannel) != names.end()) {
      try {
        alerts_sub_ = std::make_unique<TypedSubscriber<shmbus_msgs::Alert>>(kAlertsChannel, *context_,
                                                                            SubscriberOptions{.node = o_.node});
        wait_set_.attach(alerts_sub_->untyped());
      } catch (const Error&) {
        alerts_sub_.reset();  // removed meanwhile, or another type: looked for again
      }
    }
    for (const auto& name : names) {
      if (recorded_.count(name) != 0 || !wanted(name)) continue;
      auto rc = std::make_unique<RecordedChannel>();
      rc->name = name;
      try {
        rc->sub = std::make_unique<Subscriber>(
            name, std::nullopt, *context_,
            SubscriberOptions{.from_first = present_at_start_.count(name) == 0, .node = o_.node});
      } catch (const Error&) {
        seen_generation_ = UINT64_MAX;  // being created or removed: looked at again next time
        continue;
      }
      rc->subscribed_wall_ns = wall_now_ns();
      rc->type = rc->sub->type();
      rc->registry_index = rc->sub->channel_index();
      // A snapshot keeps copies; so do iceoryx channels, which have no ring
      // to write from later.
      rc->keeps_copies = o_.snapshot_s > 0 || rc->sub->transport() != Transport::kShm;
      recorded_.insert(name);
      const std::size_t slot = wait_set_.attach(*rc->sub);
      const std::lock_guard lock(channels_mutex_);
      if (slot_channel_.size() <= slot) slot_channel_.resize(slot + 1, SIZE_MAX);
      slot_channel_[slot] = channels_.size();
      channels_.push_back(std::move(rc));
    }
  }

  /// Takes what channel `i` has into the batch, straight from the ring
  /// into the batch's buffer (or, for a large message, leaves it in the
  /// ring for the writer thread); a long run is handed over in pieces.
  void drain(std::size_t i) {
    RecordedChannel& rc = *channels_[i];
    for (;;) {
      bool in_ring = false;
      const TakeResult r = rc.sub->read([&](std::span<const std::byte> payload, const MessageInfo& /*info*/) {
        // The ring's slots now: it may have grown (fewer, larger slots).
        const std::uint32_t in_ring_limit = rc.keeps_copies ? 0 : rc.sub->capacity() / 4;
        in_ring =
            mcap::own_chunk(options_, payload.size()) && rc.unwritten.load(std::memory_order_relaxed) < in_ring_limit;
        if (!in_ring) std::memcpy(batch_.room(payload.size()).data(), payload.data(), payload.size());
      });
      if (!r.ok()) break;
      rc.unwritten.fetch_add(1, std::memory_order_relaxed);
      const std::int64_t received =
          r.info.publish_wall_ns < rc.subscribed_wall_ns ? r.info.publish_wall_ns : wall_now_ns();
      batch_.add({i, r.info.sequence, static_cast<std::uint64_t>(received),
                  static_cast<std::uint64_t>(r.info.publish_wall_ns), 0, r.info.size, in_ring});
      batch_.add_provenance(rc.registry_index, r.info);
      if (std::find(rc.known_publishers.begin(), rc.known_publishers.end(), r.info.publisher_id) ==
          rc.known_publishers.end()) {
        rc.known_publishers.push_back(r.info.publisher_id);
        topology_.scan_channel(config_.domain, rc.name, config_.access());
      }
      if (batch_.used >= kBatchBytes || batch_.entries.size() >= kBatchMessages) push_batch();
    }
    rc.ring_lost.store(rc.sub->lost(), std::memory_order_relaxed);
  }

  /// Snapshot triggers: SIGUSR1, /shmbus/record/trigger, and shmbusd
  /// raising an alert (to degraded or critical) on a recorded channel. Each
  /// goes through the queue, after the messages taken before it.
  void take_triggers() {
    const auto trigger = [this](const std::string& reason) {
      push_batch();  // what was taken before it goes first
      Batch t;
      t.trigger = true;
      std::memcpy(t.room(reason.size()).data(), reason.data(), reason.size());
      const auto now = static_cast<std::uint64_t>(wall_now_ns());
      t.add({0, 0, now, now, 0, reason.size()});
      queue_.push(t, true);
    };
    if (snapshot_guard_.reset()) trigger(o_.direct_trigger_reason);
    while (const auto t = trigger_sub_->take()) {
      const std::string reason{t->reason.view()};
      trigger(reason.empty() ? std::string("a message on ") + kTriggerChannel : reason);
    }
    if (!alerts_sub_) return;
    while (const auto a = alerts_sub_->take()) {
      const std::string channel{a->channel.view()};
      if (recorded_.count(channel) == 0 || a->new_level <= a->old_level ||
          a->new_level < shmbus_msgs::Alert::LEVEL_DEGRADED) {
        continue;
      }
      trigger(fmt::format("shmbusd alert: {} {} at {:.2f} Hz", channel,
                          a->new_level == shmbus_msgs::Alert::LEVEL_CRITICAL ? "critical" : "degraded",
                          a->frequency_hz));
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
    std::deque<Batch> batches;
    std::int64_t last_flush = mono_now_ns();
    for (;;) {
      const bool last = reading_done_.load();
      queue_.pop_all(batches);
      for (Batch& b : batches) {
        if (b.trigger) {
          const auto reason = b.data(b.entries[0]);
          write_snapshot(std::string(reinterpret_cast<const char*>(reason.data()), reason.size()),
                         b.entries[0].log_time);
        } else if (o_.snapshot_s > 0) {
          keep(std::move(b));
        } else {
          for (const auto& e : b.entries) {
            write_message(e, b.data(e), b.provenance(e));
            RecordedChannel& rc = channel(e.channel);
            rc.unwritten.fetch_sub(1, std::memory_order_relaxed);
          }
          queue_.recycle(std::move(b));
        }
      }
      batches.clear();
      if (file_.writer && mono_now_ns() - last_flush >= kChunkFlushNs) {
        file_.writer->flush_chunk();  // a SIGKILL loses at most this last second
        last_flush = mono_now_ns();
      }
      if (last) return;
    }
  }

  /// Brings known_ up to channels_ (the reader thread may be appending).
  void sync_known() {
    const std::lock_guard lock(channels_mutex_);
    for (std::size_t k = known_.size(); k < channels_.size(); ++k) known_.push_back(channels_[k].get());
  }

  /// Recorded channel `i`, as the writer thread sees it.
  RecordedChannel& channel(std::size_t i) {
    if (i >= known_.size()) sync_known();
    return *known_.at(i);
  }

  /// Adds the channels discovered since to the open file (a channel shows
  /// in the file even before its first message).
  void add_new_channels() {
    sync_known();
    while (file_.ids.size() < known_.size()) {
      const RecordedChannel& rc = *known_[file_.ids.size()];
      file_.ids.push_back(file_.forms->add(rc.name, rc.type, {{"host", host_}, {"domain", config_.domain}}));
    }
  }

  void open_next_file() {
    const std::string path = numbered() ? numbered_path(o_.output, files_.size()) : o_.output;
    file_ = OpenFile{};
    file_.writer = std::make_unique<mcap::Writer>(path, options_);
    file_.forms.emplace(*file_.writer);
    file_.writer->write_metadata({kRecordingMetadata,
                                  {{"host", host_},
                                   {"domain", config_.domain},
                                   {"start_wall_ns", std::to_string(wall_now_ns())},
                                   {"recorder", o_.library},
                                   {"part", std::to_string(files_.size())}}});
    files_.push_back(path);
  }

  /// Closes the open file with the losses since the previous one.
  void close_file() {
    mcap::KeyValues lost;
    for (std::size_t i = 0; i < file_.ids.size(); ++i) {
      RecordedChannel& rc = channel(i);
      const std::uint64_t total = rc.lost();
      lost.emplace_back(rc.name, std::to_string(total - rc.lost_in_earlier_files));
      rc.lost_in_earlier_files = total;
    }
    file_.writer->write_metadata({kLostMetadata, lost});
    std::map<std::string, std::uint32_t> first_publishers;
    for (const auto& [i, id] : file_.first_publisher) first_publishers.emplace(channel(i).name, id);
    for (const mcap::Metadata& m : topology_.metadata(first_publishers)) file_.writer->write_metadata(m);
    file_.writer->close();
    bytes_in_closed_files_ += file_.writer->bytes();
    file_.writer.reset();
  }

  /// The provenance record of message `t` when it says more than "written
  /// by the channel's first publisher, from no inputs".
  void write_provenance(const Batch::Entry& t, std::span<const Provenance> entries) {
    const std::uint32_t publisher = t.provenance.publisher_id;
    const auto first = file_.first_publisher.emplace(t.channel, publisher).first->second;
    if (t.entry_count == 0 && publisher == first) return;
    if (!file_.provenance_id) {
      file_.provenance_id = add_provenance_channel(*file_.writer, {{"host", host_}, {"domain", config_.domain}});
    }
    const shmbus_msgs::MessageProvenance p = provenance_record(t.provenance, entries);
    file_.writer->write(mcap::Message{*file_.provenance_id, static_cast<std::uint32_t>(file_.provenance_written++),
                                      t.log_time, t.publish_time, std::as_bytes(std::span{&p, 1})});
  }

  void write_message(const Batch::Entry& t, std::span<const std::byte> data, std::span<const Provenance> provenance) {
    if (file_.first_log_time != 0 && o_.split_duration_s > 0 &&
        t.log_time - file_.first_log_time >= static_cast<std::uint64_t>(o_.split_duration_s * 1e9)) {
      close_file();
      open_next_file();
    }
    if (file_.ids.size() <= t.channel) add_new_channels();
    RecordedChannel& rc = channel(t.channel);
    const auto message = [&](std::span<const std::byte> bytes) {
      return mcap::Message{file_.ids[t.channel], static_cast<std::uint32_t>(t.sequence), t.log_time, t.publish_time,
                           bytes};
    };
    if (t.in_ring) {
      // Written from the ring; a publisher that overwrote it meanwhile
      // (the ring lapped the writer) has it taken back out of the file.
      bool written = false;
      std::exception_ptr error;
      rc.sub->reread(t.sequence, [&](std::span<const std::byte> payload, const RingCheck& check) {
        try {
          written = file_.writer->write(message(payload), [&] { return check.unchanged(); });
        } catch (...) {
          error = std::current_exception();
        }
      });
      if (error) std::rethrow_exception(error);
      if (!written) {
        rc.overwritten.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    } else {
      file_.writer->write(message(data));
    }
    if (file_.first_log_time == 0) file_.first_log_time = t.log_time;
    rc.written.store(rc.written.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    bytes_now_.store(bytes_in_closed_files_ + file_.writer->bytes(), std::memory_order_relaxed);
    write_provenance(t, provenance);
    if (o_.split_bytes > 0 && file_.writer->bytes() >= o_.split_bytes) {
      close_file();
      open_next_file();
    }
  }

  /// Snapshot mode: the batches of the last --snapshot seconds (and at
  /// most --queue-size bytes; the oldest go first) stay in memory.
  void keep(Batch&& b) {
    if (b.empty()) return;
    kept_bytes_ += b.used;
    kept_.push_back(std::move(b));
    const auto window = static_cast<std::uint64_t>(o_.snapshot_s * 1e9);
    const std::uint64_t newest = kept_.back().entries.back().log_time;
    while (kept_.size() > 1 &&
           (kept_.front().entries.back().log_time + window < newest || kept_bytes_ > o_.queue_bytes)) {
      kept_bytes_ -= kept_.front().used;
      kept_.pop_front();
    }
  }

  /// Writes what is kept from the DUR before the trigger into the next
  /// numbered file.
  void write_snapshot(const std::string& reason, std::uint64_t trigger_ns) {
    const auto window = static_cast<std::uint64_t>(o_.snapshot_s * 1e9);
    const std::uint64_t from = trigger_ns > window ? trigger_ns - window : 0;
    open_next_file();
    const std::string path = file_.writer->path();
    file_.writer->write_metadata({kSnapshotMetadata,
                                  {{"reason", reason},
                                   {"trigger_wall_ns", std::to_string(trigger_ns)},
                                   {"window_s", fmt::format("{:g}", o_.snapshot_s)}}});
    std::size_t n = 0;
    std::uint64_t oldest = trigger_ns;
    for (const Batch& b : kept_) {
      for (const auto& e : b.entries) {
        if (e.log_time < from) continue;
        write_message(e, b.data(e), b.provenance(e));
        oldest = std::min(oldest, e.log_time);
        ++n;
      }
    }
    add_new_channels();
    close_file();
    kept_.clear();
    kept_bytes_ = 0;
    if (o_.on_snapshot) {
      o_.on_snapshot({path, n, static_cast<double>(trigger_ns - oldest) / 1e9, reason});
    }
  }

  RecordSummary finish() {
    if (file_.writer) close_file();
    RecordSummary s;
    for (const auto& rc : channels_) {
      s.channels.push_back({rc->name, rc->written.load(), rc->lost_on_ring(), rc->queue_dropped.load()});
    }
    s.files = files_;
    s.bytes = bytes_in_closed_files_;
    return s;
  }

 public:
  /// The counts so far, from any thread (files not listed).
  RecordSummary status() {
    RecordSummary s;
    const std::lock_guard lock(channels_mutex_);
    for (const auto& rc : channels_) {
      s.channels.push_back({rc->name, rc->written.load(std::memory_order_relaxed), rc->lost_on_ring(),
                            rc->queue_dropped.load(std::memory_order_relaxed)});
    }
    s.bytes = bytes_now_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  RecorderOptions o_;
  Config config_;
  std::string host_ = host_name();
  std::unique_ptr<Context> context_;
  Queue queue_;
  mcap::WriterOptions options_;
  std::mutex channels_mutex_;  ///< discovery appends while the writer thread reads
  std::set<std::string> recorded_;
  std::vector<std::unique_ptr<RecordedChannel>> channels_;
  Batch batch_;                            ///< the reader thread's, being filled
  std::vector<std::size_t> slot_channel_;  ///< wait-set index -> channel index (SIZE_MAX: a trigger source)
  /// trigger_snapshot() (snapshot mode): wakes the reader thread, which
  /// turns it into a trigger. GuardCondition::trigger is async-signal-safe.
  GuardCondition snapshot_guard_;
  WaitSet wait_set_;  ///< after the guard it waits on, so it goes first
  std::unique_ptr<TypedSubscriber<shmbus_msgs::RecordTrigger>> trigger_sub_;
  std::unique_ptr<TypedSubscriber<shmbus_msgs::Alert>> alerts_sub_;
  /// Set by the reader thread after its last push_batch; the writer loads it
  /// before a pop_all, so the pop after seeing it takes everything (the
  /// queue's mutex orders the pushes before it).
  std::atomic<bool> reading_done_{false};
  std::atomic<bool> write_failed_{false};
  std::atomic<bool> stop_{false};
  std::function<bool()> stop_requested_;
  std::exception_ptr write_error_;  ///< set by the writer thread before write_failed_
  bool discovered_once_ = false;
  std::set<std::string> present_at_start_;  ///< channels that existed when recording began
  std::optional<introspect::DomainView> domain_view_;
  std::uint64_t seen_generation_ = UINT64_MAX;
  Topology topology_;
  // The writer thread's:
  OpenFile file_;
  std::vector<std::string> files_;
  std::uint64_t bytes_in_closed_files_ = 0;
  /// Bytes written so far (the open chunk not counted), for status().
  std::atomic<std::uint64_t> bytes_now_{0};
  std::vector<RecordedChannel*> known_;  ///< channels_ as the writer thread last saw it
  std::deque<Batch> kept_;
  std::uint64_t kept_bytes_ = 0;
};

Recorder::Recorder(const Config& config, RecorderOptions options)
    : impl_(std::make_unique<Impl>(config, std::move(options))) {}
Recorder::~Recorder() = default;
std::string Recorder::first_file() const { return impl_->first_file(); }
RecordSummary Recorder::run(const std::function<bool()>& stop_requested) { return impl_->run(stop_requested); }
RecordSummary Recorder::status() const { return impl_->status(); }
void Recorder::stop() noexcept { impl_->stop(); }
void Recorder::trigger_snapshot() noexcept { impl_->trigger_snapshot(); }

std::uint64_t RecordSummary::messages() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels) n += c.written;
  return n;
}

std::uint64_t RecordSummary::lost() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels) n += c.lost();
  return n;
}

std::size_t trigger_snapshots(const Config& config, std::string_view reason) {
  Config c = config;
  if (c.node.empty()) c.node = "shmbus-record-trigger";
  Context ctx(std::move(c));
  TypedPublisher<shmbus_msgs::RecordTrigger> pub(kTriggerChannel, ctx);
  const auto view = introspect::ChannelReader(config.domain, kTriggerChannel, false, config.access()).view();
  if (view.subscribers.empty()) {
    throw Error(Errc::kNotFound, std::string("record --trigger: no recorder listens on ") + kTriggerChannel +
                                     "; start one with shmtool record --snapshot DUR");
  }
  shmbus_msgs::RecordTrigger t{};
  t.header.stamp_ns = static_cast<std::uint64_t>(wall_now_ns());
  t.reason.assign(reason);
  // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
  static_cast<void>(pub.publish(t));
  return view.subscribers.size();
}

}  // namespace shmbus::record
