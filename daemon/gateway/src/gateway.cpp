// The gateway: an export thread (shmbus subscribers -> DDS writers) and an
// import thread (DDS readers -> shmbus publishers), sharing only the ids of
// the gateway's own publishers (so nothing imported is exported back) and
// the counters.
#include "shmbus/gateway/gateway.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "dds.hpp"
#include "envelope.h"
#include "shmbus/clock.hpp"
#include "shmbus/context.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus::gateway {

namespace {

constexpr std::string_view kTopicPrefix = "shmbus";  ///< DDS topic = prefix + channel name
constexpr const char* kSchemaTopic = "shmbus_schemas";
constexpr std::string_view kMessageTypeName = "shmbus_gateway::Batch";
// A batch holds what the ring had at once, at most this many messages and,
// once over this many payload bytes, no more: one DDS sample of at most
// ~25 fragments (Cyclone's 1344-byte default), so a best-effort loss costs a
// bounded run of messages. 8 KiB gave 4 KiB messages 0.8x ddsperf's
// throughput, 32 KiB 0.9-0.95x (shmbus-bench-gateway).
constexpr std::size_t kBatchMessages = 128;
constexpr std::size_t kBatchBytes = 32768;
/// Channels with larger messages are delivered off the receiving gateway's
/// receive thread (see start_export).
constexpr std::uint32_t kSynchronousDeliveryMaxBytes = 65536;
constexpr std::size_t kPendingLimit = 4096;  ///< messages held for a schema not yet received
constexpr std::int64_t kDiscoveryPeriodNs = 200'000'000;

/// Whether `glob` names `channel`. The domain's own channels (/shmbus/...:
/// statistics, alerts) are each host's: only a glob that itself starts with
/// /shmbus/ carries them.
bool matches(const std::string& glob, const std::string& channel) {
  if (channel.starts_with("/shmbus/") && !glob.starts_with("/shmbus/")) return false;
  return glob == channel || ::fnmatch(glob.c_str(), channel.c_str(), 0) == 0;
}

/// The first entry of `rules` whose export (or import) globs name `channel`.
const GatewayRule* rule_for(const std::vector<GatewayRule>& rules, const std::string& channel, bool exporting) {
  for (const GatewayRule& r : rules) {
    const auto& globs = exporting ? r.exports : r.imports;
    if (std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return matches(g, channel); })) {
      return &r;
    }
  }
  return nullptr;
}

std::uint64_t random_id() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

/// Readers and writers of one [[gateway]] entry: its partition on a DDS
/// publisher and subscriber, its reliability and depth on each endpoint.
struct RuleEndpoints {
  const GatewayRule* rule = nullptr;
  dds::Entity publisher;
  dds::Entity subscriber;
  dds::Entity schema_writer;
  dds::Entity schema_reader;
  dds::Qos endpoint_qos;
};

void fill_endpoint_qos(dds_qos_t* q, const GatewayRule& r) {
  if (r.reliability == GatewayRule::Reliability::kReliable) {
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
  } else {
    dds_qset_reliability(q, DDS_RELIABILITY_BEST_EFFORT, 0);
  }
  dds_qset_history(q, DDS_HISTORY_KEEP_LAST, static_cast<std::int32_t>(r.history_depth));
  // A gateway never receives what its own participant wrote.
  dds_qset_ignorelocal(q, DDS_IGNORELOCAL_PARTICIPANT);
}

}  // namespace

struct Gateway::Impl {
  Impl(const Config& c, const GatewayOptions& o)
      : config(c), options(o), context(config), host(host_name()), self(random_id()) {
    if (options.rules.empty()) {
      throw Error(Errc::kConfig,
                  "no [[gateway]] entries in the configuration: add one with export = [\"/glob\"] and/or "
                  "import = [\"/glob\"]");
    }
    participant = dds::Entity(dds_create_participant(options.dds_domain, nullptr, nullptr), "DDS participant");
    message_topic_desc = &shmbus_gateway_Batch_desc;
    {
      auto q = dds::make_qos();
      dds_qset_reliability(q.get(), DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
      dds_qset_durability(q.get(), DDS_DURABILITY_TRANSIENT_LOCAL);
      dds_qset_history(q.get(), DDS_HISTORY_KEEP_LAST, 1);
      schema_topic =
          dds::Entity(dds_create_topic(participant.get(), &shmbus_gateway_Schema_desc, kSchemaTopic, q.get(), nullptr),
                      "schema topic");
    }
    for (const GatewayRule& r : options.rules) {
      RuleEndpoints e;
      e.rule = &r;
      auto pq = dds::make_qos();
      if (!r.partition.empty()) dds_qset_partition1(pq.get(), r.partition.c_str());
      e.publisher = dds::Entity(dds_create_publisher(participant.get(), pq.get(), nullptr), "DDS publisher");
      e.subscriber = dds::Entity(dds_create_subscriber(participant.get(), pq.get(), nullptr), "DDS subscriber");
      e.endpoint_qos = dds::make_qos();
      fill_endpoint_qos(e.endpoint_qos.get(), r);
      auto sq = dds::make_qos();
      dds_qset_reliability(sq.get(), DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
      dds_qset_durability(sq.get(), DDS_DURABILITY_TRANSIENT_LOCAL);
      dds_qset_history(sq.get(), DDS_HISTORY_KEEP_LAST, 1);
      if (!r.exports.empty()) {
        e.schema_writer =
            dds::Entity(dds_create_writer(e.publisher.get(), schema_topic.get(), sq.get(), nullptr), "schema writer");
      }
      if (!r.imports.empty()) {
        e.schema_reader =
            dds::Entity(dds_create_reader(e.subscriber.get(), schema_topic.get(), sq.get(), nullptr), "schema reader");
      }
      rules.push_back(std::move(e));
    }
    waitset = dds::Entity(dds_create_waitset(participant.get()), "DDS waitset");
    publications =
        dds::Entity(dds_create_reader(participant.get(), DDS_BUILTIN_TOPIC_DCPSPUBLICATION, nullptr, nullptr),
                    "reader of DDS publications");
    attach(publications.get());
    for (const RuleEndpoints& e : rules) {
      if (e.schema_reader) attach(e.schema_reader.get());
    }
    exporter = std::thread([this] { export_loop(); });
    importer = std::thread([this] { import_loop(); });
  }

  ~Impl() {
    stopping.store(true, std::memory_order_relaxed);
    export_wake.trigger();
    dds_waitset_set_trigger(waitset.get(), true);
    exporter.join();
    importer.join();
    // The import readers first: taken out of reach of the listener under
    // its mutex, then deleted without it (dds_delete waits for a listener
    // call in progress, which takes the mutex, finds nothing and returns);
    // then the shmbus side, then the participant with the rest.
    std::vector<dds::Entity> readers;
    {
      const std::lock_guard lock(import_mutex);
      import_by_reader.clear();
      for (auto& imp : imports) readers.push_back(std::move(imp->reader));
    }
    readers.clear();
    exports.clear();
    imports.clear();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void attach(dds_entity_t reader) {
    dds_set_status_mask(reader, DDS_DATA_AVAILABLE_STATUS);
    if (const dds_return_t rc = dds_waitset_attach(waitset.get(), reader, reader); rc < 0) {
      throw Error(Errc::kResource, fmt::format("DDS: cannot wait on a reader: {}", dds_strretcode(rc)));
    }
  }

  // ------------------------------------------------------------- export

  struct Export {
    Export(std::string name, std::string type, std::uint64_t hash, Subscriber sub, std::size_t max_size)
        : channel(std::move(name)),
          type_name(std::move(type)),
          type_hash(hash),
          subscriber(std::move(sub)),
          buffer(std::max(max_size, kBatchBytes)) {}
    std::string channel;
    std::string type_name;
    std::uint64_t type_hash = 0;
    Subscriber subscriber;
    bool ever_matched = false;
    std::uint64_t unread = 0;  ///< taken while no remote reader was matched, since the last one left
    dds::Entity topic;
    dds::Entity writer;
    std::vector<std::byte> buffer;           ///< the batch's payloads, one after the other
    std::vector<shmbus_gateway_Item> items;  ///< the batch, pointing into `buffer`
    std::set<std::uint32_t> own;             ///< ids of the gateway's publishers on it (imports)
    std::uint64_t own_version = 0;
    std::uint64_t lost = 0;
  };

  void export_loop() {
    WaitSet waits;
    waits.attach(export_wake);
    std::optional<introspect::DomainView> domain;
    std::uint64_t generation = ~std::uint64_t{0};
    std::int64_t next_discovery = 0;
    std::vector<std::size_t> ready;
    while (!stopping.load(std::memory_order_relaxed)) {
      if (mono_now_ns() >= next_discovery) {
        next_discovery = mono_now_ns() + kDiscoveryPeriodNs;
        try {
          discover_exports(domain, generation, waits);
        } catch (const std::exception& e) {
          spdlog::warn("reading domain \"{}\": {}", config.domain, e.what());
        }
      }
      waits.wait(std::chrono::milliseconds(100), ready);
      for (auto& e : exports) drain(*e);
    }
  }

  void discover_exports(std::optional<introspect::DomainView>& domain, std::uint64_t& generation, WaitSet& waits) {
    if (!domain) {
      try {
        domain.emplace(config.domain, config.access());
      } catch (const Error& e) {
        if (e.code() != Errc::kNotFound) throw;
        return;  // no process has made the domain yet
      }
    }
    if (domain->generation() == generation) return;
    generation = domain->generation();
    for (const std::string& name : domain->channel_names()) {
      if (exported.contains(name)) continue;
      const GatewayRule* rule = rule_for(options.rules, name, true);
      if (rule == nullptr) continue;
      exported.insert(name);
      try {
        start_export(name, *rule, waits);
      } catch (const Error& e) {
        spdlog::error("export {}: {}", name, e.what());
      }
    }
  }

  void start_export(const std::string& name, const GatewayRule& rule, WaitSet& waits) {
    const introspect::ChannelView v = introspect::ChannelReader(config.domain, name, false, config.access()).view();
    RuleEndpoints& endpoints = endpoints_of(rule);
    SubscriberOptions so;
    so.node = "shmbus-gateway";
    auto e = std::make_unique<Export>(name, v.type_name, v.type_hash,
                                      Subscriber(name, TypeInfo{v.type_name, v.type_hash, v.schema}, context, so),
                                      v.max_message_size);
    const std::string topic = std::string{kTopicPrefix} + name;
    e->topic = dds::Entity(dds_create_topic(participant.get(), message_topic_desc, topic.c_str(), nullptr, nullptr),
                           "topic " + topic);
    // Cyclone delivers a sample on the receiving side in its receive
    // thread (the lowest latency) unless the writer's transport priority is
    // below SynchronousDeliveryPriorityThreshold (0 by default): then a
    // delivery-queue thread does it. Large messages go that way, so the
    // receive thread keeps draining the socket while the importing gateway
    // copies one into its ring (else the socket buffer overflows and the
    // lost fragments wait for repair).
    dds::Qos qos = dds::make_qos();
    dds_copy_qos(qos.get(), endpoints.endpoint_qos.get());
    if (v.max_message_size > kSynchronousDeliveryMaxBytes) dds_qset_transport_priority(qos.get(), -1);
    e->writer = dds::Entity(dds_create_writer(endpoints.publisher.get(), e->topic.get(), qos.get(), nullptr),
                            "writer of " + topic);
    if (TypeInfo{v.type_name, v.type_hash, v.schema}.carries_schema() &&
        schemas_sent.insert({&rule, v.type_hash}).second) {
      shmbus_gateway_Schema s{};
      s.type_hash = v.type_hash;
      s.type_name =
          const_cast<char*>(v.type_name.c_str());    // NOLINT(cppcoreguidelines-pro-type-const-cast): DDS reads only
      s.text = const_cast<char*>(v.schema.c_str());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
      if (const dds_return_t rc = dds_write(endpoints.schema_writer.get(), &s); rc < 0) {
        spdlog::warn("export {}: the schema of {} was not sent: {}", name, v.type_name, dds_strretcode(rc));
      }
    }
    waits.attach(e->subscriber);
    spdlog::info("export {} ({}) -> DDS topic {}{}", name, v.type_name, topic,
                 rule.partition.empty() ? "" : " in partition " + rule.partition);
    exports.push_back(std::move(e));
    exported_channels.fetch_add(1, std::memory_order_relaxed);
  }

  RuleEndpoints& endpoints_of(const GatewayRule& rule) {
    return *std::find_if(rules.begin(), rules.end(), [&](const RuleEndpoints& e) { return e.rule == &rule; });
  }

  /// Remote readers matched now by an export's writer.
  static std::uint32_t remote_readers(const Export& e) {
    dds_publication_matched_status_t st{};
    return dds_get_publication_matched_status(e.writer.get(), &st) == DDS_RETCODE_OK ? st.current_count : 0;
  }

  void drain(Export& e) {
    // SYNC POINT READ: pairs with the release fetch_add in deliver() (import
    // side) after it inserted a publisher id under own_mutex; a changed
    // version sends us to copy the ids under that mutex.
    if (const std::uint64_t version = own_version.load(std::memory_order_acquire); version != e.own_version) {
      const std::lock_guard lock(own_mutex);
      e.own = own_ids[e.channel];
      e.own_version = version;
    }
    // Once a remote reader has been matched, a message taken while none is
    // (the other gateway stopped) reaches nobody: discarded and counted on
    // the subscriber (shmtool info), said when a reader is back.
    const std::uint32_t readers = remote_readers(e);
    if (readers > 0) {
      e.ever_matched = true;
      if (e.unread != 0) {
        spdlog::warn("export {}: {} messages found no remote reader while none was matched", e.channel, e.unread);
        e.unread = 0;
      }
    }
    std::size_t used = 0;  // bytes of `buffer` the batch holds
    for (;;) {
      const std::span<std::byte> room{e.buffer.data() + used, e.buffer.size() - used};
      TakeResult r = e.subscriber.take(room);
      if (r.status == TakeStatus::kBufferTooSmall) {
        if (e.items.empty()) {
          e.buffer.resize(r.info.size);
        } else {
          send(e);  // the message stays in the ring: taken again into the emptied buffer
          used = 0;
        }
        continue;
      }
      if (!r.ok()) break;
      if (r.info.lost_before != 0) {
        e.lost += r.info.lost_before;
        ring_lost.fetch_add(r.info.lost_before, std::memory_order_relaxed);
      }
      if (e.own.contains(r.info.publisher_id)) {
        not_reexported.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (readers == 0 && e.ever_matched) {
        ++e.unread;
        e.subscriber.count_discarded();
        unmatched.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      shmbus_gateway_Item& item = e.items.emplace_back();
      item.seq = r.info.sequence;
      item.publish_wall_ns = r.info.publish_wall_ns;
      item.origin_lost = e.lost;
      item.payload._buffer = reinterpret_cast<std::uint8_t*>(room.data());
      item.payload._length = r.info.size;
      item.payload._maximum = r.info.size;
      item.payload._release = false;
      used += r.info.size;
      if (e.items.size() >= kBatchMessages || used >= kBatchBytes) {
        send(e);
        used = 0;
      }
    }
    if (!e.items.empty()) send(e);
  }

  /// Writes an export's batch to DDS (one sample) and empties it.
  void send(Export& e) {
    shmbus_gateway_Batch b{};
    b.type_name =
        const_cast<char*>(e.type_name.c_str());  // NOLINT(cppcoreguidelines-pro-type-const-cast): DDS reads only
    b.type_hash = e.type_hash;
    b.origin_host = const_cast<char*>(host.c_str());             // NOLINT(cppcoreguidelines-pro-type-const-cast)
    b.origin_domain = const_cast<char*>(config.domain.c_str());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    b.origin_gateway = self;
    const auto n = static_cast<std::uint32_t>(e.items.size());
    b.items._buffer = e.items.data();
    b.items._length = n;
    b.items._maximum = n;
    b.items._release = false;
    if (const dds_return_t rc = dds_write(e.writer.get(), &b); rc < 0) {
      refused.fetch_add(n, std::memory_order_relaxed);
      spdlog::warn("export {}: DDS refused {} messages: {}", e.channel, n, dds_strretcode(rc));
    } else {
      messages_sent.fetch_add(n, std::memory_order_relaxed);
      batches_sent.fetch_add(1, std::memory_order_relaxed);
    }
    e.items.clear();
  }

  // ------------------------------------------------------------- import

  /// One origin (a remote host's domain) of one imported channel. Its
  /// gateway may restart: the sequence then continues, the gap is what its
  /// channel published while no gateway carried it.
  struct Origin {
    std::unique_ptr<Publisher> publisher;
    std::uint64_t gateway = 0;  ///< the origin gateway's instance id
    std::uint64_t next_seq = 0;
    std::uint64_t origin_lost = 0;
    bool seen = false;
    bool refused = false;
  };
  struct Import {
    std::string channel;
    dds::Entity topic;
    dds::Entity reader;
    std::map<std::pair<std::string, std::string>, Origin> origins;  ///< by origin host and domain
  };
  /// A received envelope, pointing into the DDS sample (or a Pending).
  struct Received {
    std::string_view type_name;
    std::uint64_t type_hash = 0;
    std::uint64_t seq = 0;
    std::int64_t publish_wall_ns = 0;
    std::uint64_t origin_lost = 0;
    std::string_view origin_host;
    std::string_view origin_domain;
    std::uint64_t origin_gateway = 0;
    std::span<const std::uint8_t> payload;
  };
  /// A received envelope held (owned) until its schema arrives.
  struct Pending {
    std::string channel;
    std::string type_name, origin_host, origin_domain;
    std::vector<std::uint8_t> payload;
    Received r;  ///< its views point into the strings and payload above
  };

  void import_loop() {
    std::vector<dds_attach_t> triggered(64);
    while (!stopping.load(std::memory_order_relaxed)) {
      const dds_return_t n = dds_waitset_wait(waitset.get(), triggered.data(), triggered.size(), DDS_MSECS(500));
      if (n < 0) {
        spdlog::error("DDS waitset: {}", dds_strretcode(n));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      for (dds_return_t i = 0; i < n && static_cast<std::size_t>(i) < triggered.size(); ++i) {
        const auto reader = static_cast<dds_entity_t>(triggered[static_cast<std::size_t>(i)]);
        try {
          if (reader == publications.get()) {
            take_publications();
          } else {
            take_schemas(reader);
          }
        } catch (const std::exception& e) {
          spdlog::error("import: {}", e.what());
        }
      }
    }
  }

  /// DDS's built-in publications: a remote gateway's writer of a topic an
  /// import glob names starts that import.
  void take_publications() {
    std::array<void*, 32> samples{};
    std::array<dds_sample_info_t, 32> infos{};
    const dds_instance_handle_t own = participant_handle();
    for (;;) {
      const dds_return_t n = dds_take(publications.get(), samples.data(), infos.data(), samples.size(), samples.size());
      if (n <= 0) return;
      for (dds_return_t i = 0; i < n; ++i) {
        if (!infos[static_cast<std::size_t>(i)].valid_data) continue;
        const auto* p = static_cast<const dds_builtintopic_endpoint_t*>(samples[static_cast<std::size_t>(i)]);
        if (p->participant_instance_handle == own || p->type_name == nullptr || p->topic_name == nullptr) continue;
        const std::string_view topic = p->topic_name;
        if (p->type_name != kMessageTypeName || !topic.starts_with(kTopicPrefix)) continue;
        const std::string channel{topic.substr(kTopicPrefix.size())};
        if (!channel.starts_with('/') || imported.contains(channel)) continue;
        const GatewayRule* rule = rule_for(options.rules, channel, false);
        if (rule == nullptr) continue;
        imported.insert(channel);
        start_import(channel, *rule);
      }
      dds_return_loan(publications.get(), samples.data(), n);
    }
  }

  dds_instance_handle_t participant_handle() const {
    dds_instance_handle_t h = 0;
    dds_get_instance_handle(participant.get(), &h);
    return h;
  }

  void start_import(const std::string& channel, const GatewayRule& rule) {
    RuleEndpoints& endpoints = endpoints_of(rule);
    auto imp = std::make_unique<Import>();
    imp->channel = channel;
    const std::string topic = std::string{kTopicPrefix} + channel;
    imp->topic = dds::Entity(dds_create_topic(participant.get(), message_topic_desc, topic.c_str(), nullptr, nullptr),
                             "topic " + topic);
    // Messages are published here from Cyclone's receive thread, in a
    // listener: no hand-over to another thread on the way (ddsperf's pong
    // answers the same way). The reader is made without import_mutex (the
    // listener takes it); the listener finds the import by its reader, under
    // the mutex, once it is registered; what arrived before is taken then.
    dds_listener_t* listener = dds_create_listener(this);
    dds_lset_data_available(listener, &Impl::on_data);
    const dds_entity_t reader =
        dds_create_reader(endpoints.subscriber.get(), imp->topic.get(), endpoints.endpoint_qos.get(), listener);
    dds_delete_listener(listener);
    imp->reader = dds::Entity(reader, "reader of " + topic);
    spdlog::info("import {} <- DDS topic {}{}", channel, topic,
                 rule.partition.empty() ? "" : " in partition " + rule.partition);
    {
      const std::lock_guard lock(import_mutex);
      Import& registered = *imports.emplace_back(std::move(imp));
      import_by_reader[reader] = &registered;
      take_messages(registered);
    }
    imported_channels.fetch_add(1, std::memory_order_relaxed);
  }

  /// Cyclone's data-available listener of the import readers.
  static void on_data(dds_entity_t reader, void* arg) {
    Impl& self = *static_cast<Impl*>(arg);
    const std::lock_guard lock(self.import_mutex);
    const auto it = self.import_by_reader.find(reader);
    if (it == self.import_by_reader.end()) return;  // not registered yet: start_import takes it
    try {
      self.take_messages(*it->second);
    } catch (const std::exception& e) {
      spdlog::error("import {}: {}", it->second->channel, e.what());
    }
  }

  void take_schemas(dds_entity_t reader) {
    std::array<void*, 16> samples{};
    std::array<dds_sample_info_t, 16> infos{};
    std::vector<TypeInfo> got;
    for (;;) {
      const dds_return_t n = dds_take(reader, samples.data(), infos.data(), samples.size(), samples.size());
      if (n <= 0) break;
      for (dds_return_t i = 0; i < n; ++i) {
        if (!infos[static_cast<std::size_t>(i)].valid_data) continue;
        const auto* s = static_cast<const shmbus_gateway_Schema*>(samples[static_cast<std::size_t>(i)]);
        got.push_back(TypeInfo{s->type_name, s->type_hash, s->text});
      }
      dds_return_loan(reader, samples.data(), n);
    }
    const std::lock_guard lock(import_mutex);
    for (TypeInfo& t : got) {
      const std::uint64_t hash = t.hash;
      if (schemas.emplace(hash, std::move(t)).second) flush_pending(hash);
    }
  }

  void take_messages(Import& imp) {
    std::array<void*, 64> samples{};
    std::array<dds_sample_info_t, 64> infos{};
    for (;;) {
      const dds_return_t n = dds_take(imp.reader.get(), samples.data(), infos.data(), samples.size(), samples.size());
      if (n <= 0) return;
      const std::int64_t now_wall = wall_now_ns();
      for (dds_return_t i = 0; i < n; ++i) {
        if (!infos[static_cast<std::size_t>(i)].valid_data) continue;
        const auto* b = static_cast<const shmbus_gateway_Batch*>(samples[static_cast<std::size_t>(i)]);
        if (b->origin_gateway == self || b->items._length == 0) continue;
        // One origin lookup per batch; none while its schema is awaited.
        Origin* origin = b->type_hash == 0 || schemas.contains(b->type_hash)
                             ? &origin_of(imp, b->origin_host, b->origin_domain)
                             : nullptr;
        for (std::uint32_t k = 0; k < b->items._length; ++k) {
          const shmbus_gateway_Item& m = b->items._buffer[k];
          const Received r{b->type_name,      b->type_hash,      m.seq,
                           m.publish_wall_ns, m.origin_lost,     b->origin_host,
                           b->origin_domain,  b->origin_gateway, {m.payload._buffer, m.payload._length}};
          if (origin != nullptr) {
            deliver(imp, *origin, r, now_wall);
          } else {
            hold(imp.channel, r);
          }
        }
      }
      dds_return_loan(imp.reader.get(), samples.data(), n);
    }
  }

  /// A message whose schema has not arrived yet: held (bounded), delivered
  /// when it does.
  void hold(const std::string& channel, const Received& r) {
    if (pending.size() >= kPendingLimit) {
      refused.fetch_add(1, std::memory_order_relaxed);
      const std::int64_t now = mono_now_ns();
      if (now - last_pending_warning >= 1'000'000'000) {
        last_pending_warning = now;
        spdlog::warn("import {}: no schema for {} has arrived; messages refused until it does", channel, r.type_name);
      }
      return;
    }
    auto p = std::make_unique<Pending>(Pending{channel, std::string{r.type_name}, std::string{r.origin_host},
                                               std::string{r.origin_domain},
                                               std::vector<std::uint8_t>(r.payload.begin(), r.payload.end()), r});
    p->r.type_name = p->type_name;
    p->r.origin_host = p->origin_host;
    p->r.origin_domain = p->origin_domain;
    p->r.payload = p->payload;
    pending.push_back(std::move(p));
  }

  void flush_pending(std::uint64_t hash) {
    std::deque<std::unique_ptr<Pending>> keep;
    const std::int64_t now_wall = wall_now_ns();
    for (auto& p : pending) {
      if (p->r.type_hash != hash) {
        keep.push_back(std::move(p));
        continue;
      }
      for (auto& imp : imports) {
        if (imp->channel == p->channel) {
          deliver(*imp, origin_of(*imp, p->origin_host, p->origin_domain), p->r, now_wall);
        }
      }
    }
    pending.swap(keep);
  }

  static Origin& origin_of(Import& imp, std::string_view host, std::string_view domain) {
    return imp.origins[{std::string{host}, std::string{domain}}];
  }

  /// Publishes a received message of `imp` from origin `o` into the local channel.
  void deliver(Import& imp, Origin& o, const Received& p, std::int64_t now_wall) {
    if (o.refused) {
      refused.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (!o.publisher) {
      TypeInfo type = p.type_hash == 0 ? TypeInfo::bytes() : schemas.at(p.type_hash);
      type.name = std::string{p.type_name};
      PublisherOptions po;
      po.node = fmt::format("shmbus-gateway@{}", p.origin_host).substr(0, 63);
      try {
        o.publisher = std::make_unique<Publisher>(imp.channel, type, context, po);
      } catch (const Error& e) {
        o.refused = true;
        refused.fetch_add(1, std::memory_order_relaxed);
        spdlog::error("import {} from {} (domain \"{}\"): refused: {}", imp.channel, p.origin_host, p.origin_domain,
                      e.what());
        return;
      }
      {
        const std::lock_guard lock(own_mutex);
        own_ids[imp.channel].insert(o.publisher->id());
      }
      // SYNC POINT WRITE: pairs with the acquire load in drain() (export).
      own_version.fetch_add(1, std::memory_order_release);
      spdlog::info("import {} ({}) from {}: publishing here", imp.channel, p.type_name, p.origin_host);
    }
    // Sequence gaps the origin's gateway did not lose in its ring were lost
    // in transit, or published while no gateway carried the channel.
    const bool restarted = o.seen && o.gateway != p.origin_gateway;
    if (restarted) o.origin_lost = 0;  // the new gateway counts from zero
    if (o.seen && p.seq > o.next_seq) {
      const std::uint64_t gap = p.seq - o.next_seq;
      const std::uint64_t origin_lost = p.origin_lost >= o.origin_lost ? p.origin_lost - o.origin_lost : 0;
      const std::uint64_t lost = gap - std::min(gap, origin_lost);
      transit_lost.fetch_add(lost, std::memory_order_relaxed);
      if (lost != 0) o.publisher->count_upstream_lost(lost);
      if (restarted) {
        spdlog::warn("import {} from {}: its gateway restarted; {} messages were lost meanwhile", imp.channel,
                     p.origin_host, lost);
      }
    }
    o.gateway = p.origin_gateway;
    o.seen = true;
    o.next_seq = p.seq + 1;
    o.origin_lost = p.origin_lost;
    if (o.publisher->publish(p.payload.data(), p.payload.size()) != PublishResult::kOk) {
      refused.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    messages_received.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t latency = now_wall - p.publish_wall_ns;
    o.publisher->record_transit(latency);
    latency_samples.fetch_add(1, std::memory_order_relaxed);
    latency_sum_ns.fetch_add(latency, std::memory_order_relaxed);
    std::int64_t max = latency_max_ns.load(std::memory_order_relaxed);
    while (latency > max && !latency_max_ns.compare_exchange_weak(max, latency, std::memory_order_relaxed)) {
    }
  }

  [[nodiscard]] GatewayStats stats() const noexcept {
    GatewayStats s;
    s.exported_channels = exported_channels.load(std::memory_order_relaxed);
    s.imported_channels = imported_channels.load(std::memory_order_relaxed);
    s.messages_sent = messages_sent.load(std::memory_order_relaxed);
    s.batches_sent = batches_sent.load(std::memory_order_relaxed);
    s.messages_received = messages_received.load(std::memory_order_relaxed);
    s.ring_lost = ring_lost.load(std::memory_order_relaxed);
    s.transit_lost = transit_lost.load(std::memory_order_relaxed);
    s.not_reexported = not_reexported.load(std::memory_order_relaxed);
    s.unmatched = unmatched.load(std::memory_order_relaxed);
    s.refused = refused.load(std::memory_order_relaxed);
    s.latency_samples = latency_samples.load(std::memory_order_relaxed);
    s.latency_sum_ns = latency_sum_ns.load(std::memory_order_relaxed);
    s.latency_max_ns = latency_max_ns.load(std::memory_order_relaxed);
    return s;
  }

  Config config;
  GatewayOptions options;
  Context context;
  std::string host;
  std::uint64_t self;  ///< this gateway's instance id (in every envelope it sends)

  dds::Entity participant;
  const dds_topic_descriptor_t* message_topic_desc = nullptr;
  dds::Entity schema_topic;
  std::vector<RuleEndpoints> rules;
  dds::Entity waitset;
  dds::Entity publications;

  // The gateway's own publishers, by channel: what the exporter skips.
  std::mutex own_mutex;
  std::map<std::string, std::set<std::uint32_t>> own_ids;
  std::atomic<std::uint64_t> own_version{0};

  // Export thread only.
  std::set<std::string> exported;
  std::set<std::pair<const GatewayRule*, std::uint64_t>> schemas_sent;
  std::vector<std::unique_ptr<Export>> exports;
  GuardCondition export_wake;

  // Import thread only.
  std::set<std::string> imported;
  // The import thread and Cyclone's listeners (its receive threads).
  std::mutex import_mutex;
  std::vector<std::unique_ptr<Import>> imports;
  std::map<dds_entity_t, Import*> import_by_reader;
  std::map<std::uint64_t, TypeInfo> schemas;
  std::deque<std::unique_ptr<Pending>> pending;
  std::int64_t last_pending_warning = 0;

  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> exported_channels{0}, imported_channels{0}, messages_sent{0}, batches_sent{0},
      messages_received{0}, ring_lost{0}, transit_lost{0}, not_reexported{0}, refused{0}, latency_samples{0},
      unmatched{0};
  std::atomic<std::int64_t> latency_sum_ns{0}, latency_max_ns{0};
  std::thread exporter;
  std::thread importer;
};

Gateway::Gateway(const Config& config, const GatewayOptions& options)
    : impl_(std::make_unique<Impl>(config, options)) {}
Gateway::~Gateway() = default;
GatewayStats Gateway::stats() const noexcept { return impl_->stats(); }

}  // namespace shmbus::gateway
