#include "bus.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "rosbridge.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/names.hpp"
#include "shmbus/subscriber.hpp"

namespace shmbus::bridge {

std::optional<std::string> type_mismatch(std::string_view topic, std::string_view side, std::string_view claimed,
                                         std::string_view carried, std::string_view consequence) {
  if (claimed.empty() || short_type_name(claimed) == carried) return std::nullopt;
  return fmt::format("type mismatch on {}: {} says {}, the channel carries {}; {}", topic, side, claimed, carried,
                     consequence);
}

// ---------------------------------------------------------------- Catalog

bool Catalog::refresh(std::vector<const ChannelEntry*>& added, std::vector<ChannelEntry>& removed) {
  added.clear();
  removed.clear();
  if (!view_) {
    try {
      view_.emplace(domain_, access_);
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
      return false;  // no process has made the domain yet
    }
  }
  const std::uint64_t generation = view_->generation();
  if (generation == generation_) return false;
  generation_ = generation;
  const std::vector<std::string> names = view_->channel_names();
  std::erase_if(refused_, [&](const auto& r) { return !std::binary_search(names.begin(), names.end(), r.first); });
  for (auto it = channels_.begin(); it != channels_.end();) {
    // Listed and still the segment we mapped (not removed and made again).
    if (std::binary_search(names.begin(), names.end(), it->first) && !it->second.reader->replaced()) {
      ++it;
    } else {
      removed.push_back(std::move(it->second));
      it = channels_.erase(it);
    }
  }
  for (const std::string& name : names) {
    if (channels_.contains(name) || refused_.contains(name)) continue;
    std::shared_ptr<const introspect::ChannelReader> reader;
    introspect::ChannelView v;
    try {
      reader = std::make_shared<const introspect::ChannelReader>(domain_, name, false, access_);
      v = reader->view();
    } catch (const Error&) {
      continue;  // removed meanwhile, or not ours: the next change re-reads
    }
    ChannelEntry e;
    e.name = name;
    e.reader = std::move(reader);
    e.id = next_id_++;
    e.type = TypeInfo{v.type_name, v.type_hash, v.schema};
    e.service_channel = !service_of_channel(name).empty();
    if (e.type.carries_schema()) {
      // A schema another process wrote: parsed once per type, within the
      // schema limits; a refused one keeps its channel off the bridge.
      auto& cached = schemas_[v.type_hash];
      if (!cached && !refused_schemas_.contains(v.type_hash)) {
        try {
          cached = std::make_shared<const schema::Schema>(schema::Schema::from_canonical(v.schema));
        } catch (const schema::SchemaError& err) {
          refused_schemas_[v.type_hash] = err.what();
        }
      }
      if (const auto r = refused_schemas_.find(v.type_hash); r != refused_schemas_.end()) {
        spdlog::warn("channel {}: its stored schema of {} is refused ({}); the channel is not bridged", name,
                     v.type_name, r->second);
        refused_[name] = fmt::format("its stored schema of {} is refused: {}", v.type_name, r->second);
        continue;
      }
      e.schema = cached;
    }
    const auto [it, inserted] = channels_.emplace(name, std::move(e));
    added.push_back(&it->second);
  }
  return !added.empty() || !removed.empty();
}

const ChannelEntry* Catalog::find(std::string_view name) const {
  const auto it = channels_.find(name);
  return it == channels_.end() ? nullptr : &it->second;
}

std::string Catalog::refused(std::string_view name) const {
  const auto it = refused_.find(name);
  return it == refused_.end() ? std::string{} : it->second;
}

const ChannelEntry* Catalog::find_id(std::uint32_t id) const {
  for (const auto& [name, e] : channels_) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

std::pair<std::shared_ptr<const schema::Schema>, const schema::MessageDef*> Catalog::find_type(
    std::string_view type) const {
  const std::string wanted = short_type_name(type);
  for (const auto& [hash, s] : schemas_) {
    if (!s) continue;
    // Each type once: a schema's types form a graph whose paths can be
    // exponentially many.
    std::vector<const schema::MessageDef*> todo{&s->root()};
    std::set<const schema::MessageDef*> seen{&s->root()};
    while (!todo.empty()) {
      const schema::MessageDef* m = todo.back();
      todo.pop_back();
      if (m->name == wanted) return {s, m};
      for (const schema::Field& f : m->fields) {
        if (f.message != nullptr && seen.insert(f.message).second) todo.push_back(f.message);
      }
    }
  }
  return {nullptr, nullptr};
}

std::optional<introspect::ChannelView> Catalog::view(std::string_view name) const {
  try {
    // A name not listed is missing or refused (callers refresh first): no
    // segment is opened for it here, on the network thread.
    if (const ChannelEntry* e = find(name)) return e->reader->view();
    return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
}

namespace {
bool any_alive(const std::vector<introspect::EndpointView>& endpoints) {
  return std::any_of(endpoints.begin(), endpoints.end(), [](const auto& e) { return e.alive; });
}
}  // namespace

bool Catalog::served(std::string_view service) const {
  const auto v = view(service_request_channel(std::string(service)));
  return v && any_alive(v->subscribers);
}

bool Catalog::published(std::string_view name) const {
  const auto v = view(name);
  return v && any_alive(v->publishers);
}

BusGraph bus_graph(const Catalog& catalog, const std::function<bool(std::string_view)>& allowed) {
  BusGraph g;
  // Each live endpoint: its node gets `name` in `what` (and `index[name]`
  // the node).
  using Index = std::map<std::string, std::set<std::string>>;
  const auto add = [&g](const std::vector<introspect::EndpointView>& endpoints, const std::string& name,
                        std::set<std::string> BusGraph::Node::*what, Index* index) {
    for (const auto& e : endpoints) {
      if (!e.alive) continue;
      if (index != nullptr) (*index)[name].insert(e.node);
      BusGraph::Node& n = g.nodes[e.node];
      (n.*what).insert(name);
      n.pids.insert(e.pid);
    }
  };
  for (const auto& [name, entry] : catalog.channels()) {
    const auto v = catalog.view(name);
    if (!v) continue;
    if (entry.service_channel) {
      // A service is its request channel: the server subscribes to it, a
      // client publishes into it (the response channel says nothing more).
      const std::string served = service_of_request_channel(name);
      if (served.empty() || !allowed(served)) continue;
      add(v->subscribers, served, &BusGraph::Node::serving, &g.providers);
      add(v->publishers, served, &BusGraph::Node::calling, nullptr);
    } else if (allowed(name)) {
      add(v->publishers, name, &BusGraph::Node::publishing, &g.publishers);
      add(v->subscribers, name, &BusGraph::Node::subscribing, &g.subscribers);
    }
  }
  return g;
}

// -------------------------------------------------------------- BusReader

struct BusReader::Topic {
  Topic(std::string_view channel, Context& context, bool from_first)
      : subscriber(channel, std::nullopt, context,
                   SubscriberOptions{.from_first = from_first, .node = "shmbus-bridge"}) {}
  Subscriber subscriber;
  std::shared_ptr<const schema::Schema> schema;
  std::vector<Sink> sinks;
  std::vector<std::byte> buffer;
  std::string name;
};

BusReader::BusReader(Context& context, Dispatch dispatch) : context_(context), dispatch_(std::move(dispatch)) {
  thread_ = std::thread([this] { run(); });
}

BusReader::~BusReader() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.trigger();
  thread_.join();
}

void BusReader::add(const ChannelEntry& channel, Sink sink, bool from_first) {
  {
    const std::lock_guard lock(mutex_);
    commands_.push_back(Command{Command::kAdd, channel.name, channel.schema, std::move(sink), from_first});
  }
  wake_.trigger();
}

void BusReader::remove(const std::string& channel, const Session* owner, std::uint64_t key) {
  {
    const std::lock_guard lock(mutex_);
    commands_.push_back(Command{Command::kRemove, channel, nullptr, Sink{{}, owner, key, Encoding::kRosJson}});
  }
  wake_.trigger();
}

void BusReader::remove_all(const Session* owner) {
  {
    const std::lock_guard lock(mutex_);
    commands_.push_back(Command{Command::kRemoveAll, {}, nullptr, Sink{{}, owner, 0, Encoding::kRosJson}});
  }
  wake_.trigger();
}

void BusReader::apply(std::vector<Command>& commands) {
  for (Command& c : commands) {
    if (c.kind == Command::kAdd) {
      auto it = topics_.find(c.channel);
      if (it == topics_.end()) {
        try {
          auto topic = std::make_unique<Topic>(c.channel, context_, c.from_first);
          topic->name = c.channel;
          it = topics_.emplace(c.channel, std::move(topic)).first;
        } catch (const Error& e) {
          spdlog::warn("cannot subscribe to {}: {}", c.channel, e.what());
          continue;
        }
      }
      it->second->schema = c.schema;
      it->second->sinks.push_back(std::move(c.sink));
      continue;
    }
    for (auto it = topics_.begin(); it != topics_.end();) {
      auto& sinks = it->second->sinks;
      if (c.kind == Command::kRemoveAll || it->first == c.channel) {
        std::erase_if(sinks, [&](const Sink& s) {
          return s.owner == c.sink.owner && (c.kind == Command::kRemoveAll || s.key == c.sink.key);
        });
      }
      it = sinks.empty() ? topics_.erase(it) : std::next(it);
    }
  }
}

namespace {

/// A message as JSON (raw bytes: as rosbridge sends a uint8[], an array of
/// numbers).
schema::Json json_of(const schema::Schema* schema, std::span<const std::byte> payload, bool int64_as_string) {
  if (schema != nullptr) return schema->decode(payload, int64_as_string);
  schema::Json data = schema::Json::array();
  for (const std::byte b : payload) data.push_back(static_cast<unsigned>(b));
  return schema::Json{{"data", std::move(data)}};
}

std::shared_ptr<const std::string> shared_text(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

}  // namespace

void BusReader::encode(const Topic& t, std::span<const std::byte> payload, const std::array<bool, kEncodings>& wanted,
                       OutMessage& out) {
  const auto want = [&](Encoding e) { return wanted[static_cast<std::size_t>(e)]; };
  const auto put = [&](Encoding e, std::shared_ptr<const std::string> text) {
    out.encoded[static_cast<std::size_t>(e)] = std::move(text);
  };
  const schema::Schema* schema = t.schema.get();
  if (want(Encoding::kFoxgloveCdr)) {
    std::string cdr;
    if (schema != nullptr) {
      schema->to_cdr(payload, cdr);
    } else {
      schema::bytes_to_cdr(payload, cdr);
    }
    put(Encoding::kFoxgloveCdr, shared_text(std::move(cdr)));
  }
  if (want(Encoding::kRosJsonExact)) {
    put(Encoding::kRosJsonExact, shared_text(dump_json(rosbridge_publish(t.name, json_of(schema, payload, true)))));
  }
  if (!want(Encoding::kFoxglove) && !want(Encoding::kRosJson) && !want(Encoding::kRosCbor)) return;
  schema::Json msg = json_of(schema, payload, false);
  if (want(Encoding::kFoxglove)) put(Encoding::kFoxglove, shared_text(dump_json(msg)));
  if (!want(Encoding::kRosJson) && !want(Encoding::kRosCbor)) return;
  const schema::Json op = rosbridge_publish(t.name, std::move(msg));
  if (want(Encoding::kRosJson)) put(Encoding::kRosJson, shared_text(dump_json(op)));
  if (want(Encoding::kRosCbor)) {
    const std::vector<std::uint8_t> cbor = schema::Json::to_cbor(op);
    put(Encoding::kRosCbor, shared_text(std::string(cbor.begin(), cbor.end())));
  }
}

void BusReader::drain(Topic& t) {
  // At most one ring's worth and 20 ms per round, so one busy channel whose
  // messages are slow to encode (large arrays as JSON) cannot starve the
  // others, nor hold up subscribes, unsubscribes and the stop.
  const std::int64_t until = mono_now_ns() + 20'000'000;
  for (int n = 0; n < 1024 && (n == 0 || mono_now_ns() < until); ++n) {
    if (t.buffer.empty()) t.buffer.resize(4096);
    TakeResult r = t.subscriber.take(t.buffer);
    if (r.status == TakeStatus::kBufferTooSmall) {
      t.buffer.resize(r.info.size);
      r = t.subscriber.take(t.buffer);
    }
    if (!r.ok()) return;
    taken_.fetch_add(1, std::memory_order_relaxed);
    if (r.info.lost_before != 0) lost_.fetch_add(r.info.lost_before, std::memory_order_relaxed);
    const std::span<const std::byte> payload{t.buffer.data(), r.info.size};

    auto out = std::make_shared<OutMessage>();
    out->topic = t.name;
    out->sequence = r.info.sequence;
    out->receive_wall_ns = wall_now_ns();
    std::array<bool, kEncodings> wanted{};
    for (const Sink& s : t.sinks) wanted[static_cast<std::size_t>(s.encoding)] = true;
    try {
      encode(t, payload, wanted, *out);
    } catch (const schema::CodecError& e) {
      t.subscriber.count_error();
      spdlog::warn("{} #{}: does not decode with the channel's schema ({}); not bridged", t.name, r.info.sequence,
                   e.what());
      continue;
    }
    dispatch_(std::move(out), t.sinks);
  }
}

void BusReader::run() {
  WaitSet waits;
  std::vector<Topic*> attached;
  std::vector<std::size_t> ready;
  std::vector<Command> commands;
  bool rebuild = true;
  for (;;) {
    {
      const std::lock_guard lock(mutex_);
      if (stop_) return;
      commands.swap(commands_);
    }
    if (!commands.empty()) {
      apply(commands);
      commands.clear();
      rebuild = true;
    }
    if (rebuild) {
      waits.clear();
      attached.clear();
      waits.attach(wake_);
      for (auto& [name, t] : topics_) {
        waits.attach(t->subscriber);
        attached.push_back(t.get());
      }
      rebuild = false;
    }
    waits.wait(std::chrono::milliseconds(100), ready);
    wake_.reset();
    // Every subscribed channel is drained each round (a take that finds
    // nothing is a few loads): the ready list only shortens the wait.
    for (Topic* t : attached) drain(*t);
  }
}

}  // namespace shmbus::bridge
