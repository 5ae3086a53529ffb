#include "sqlite_bag.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <memory>
#include <set>
#include <span>
#include <stdexcept>

#include "files.hpp"
#include "limits.hpp"
#include "shmbus/error.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::rosbag2 {

namespace {

struct DbClose {
  void operator()(sqlite3* d) const noexcept { sqlite3_close_v2(d); }
};
struct StmtFinalize {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbClose>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalize>;

Error not_a_bag(const std::string& shown, const std::string& why) {
  return Error(Errc::kConfig, fmt::format("{}: not a rosbag2 sqlite3 file: {}", shown, why));
}

Db open_db(const std::string& path, const std::string& shown) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) throw not_a_bag(shown, raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
  return db;
}

Stmt prepare(sqlite3* db, const std::string& sql, const std::string& shown) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    throw not_a_bag(shown, sqlite3_errmsg(db));
  }
  return Stmt(raw);
}

/// Steps `s`: true for a row, false at the end; throws for an error (a
/// corrupt file).
bool step(sqlite3* db, sqlite3_stmt* s, const std::string& shown) {
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw Error(Errc::kConfig, fmt::format("{}: cannot be read: {}", shown, sqlite3_errmsg(db)));
}

/// The columns of `table` (none when there is no such table).
std::set<std::string> columns(sqlite3* db, const std::string& table, const std::string& shown) {
  std::set<std::string> out;
  const Stmt s = prepare(db, fmt::format("PRAGMA table_info({})", table), shown);
  while (step(db, s.get(), shown)) {
    const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
    if (name != nullptr) out.emplace(name);
  }
  return out;
}

/// Column `col` as text of at most `max` bytes.
std::string text(sqlite3_stmt* s, int col, std::size_t max, const std::string& what, const std::string& shown) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s, col));
  if (n > max) throw Error(Errc::kConfig, fmt::format("{}: a {} of {} bytes, more than {}", shown, what, n, max));
  return p != nullptr ? std::string(p, n) : std::string{};
}

void require(const std::set<std::string>& have, std::initializer_list<const char*> names, const char* table,
             const std::string& shown) {
  for (const char* n : names) {
    if (!have.contains(n)) {
      throw not_a_bag(shown, have.empty() ? fmt::format("no table '{}'", table)
                                          : fmt::format("table '{}' has no column '{}'", table, n));
    }
  }
}

/// The ros2msg definitions of the file's message_definitions table (rosbag2
/// since Iron), by type; empty without the table.
std::map<std::string, std::string> read_definitions(sqlite3* db, const std::string& shown) {
  std::map<std::string, std::string> out;
  const std::set<std::string> have = columns(db, "message_definitions", shown);
  if (have.empty()) return out;
  require(have, {"topic_type", "encoding", "encoded_message_definition"}, "message_definitions", shown);
  const Stmt s = prepare(db, "SELECT topic_type, encoding, encoded_message_definition FROM message_definitions", shown);
  while (step(db, s.get(), shown)) {
    std::string type = text(s.get(), 0, kMaxNameBytes, "type name", shown);
    const std::string encoding = text(s.get(), 1, kMaxNameBytes, "definition encoding", shown);
    std::string definition = text(s.get(), 2, kMaxDefinitionBytes, "definition", shown);
    // rosbag2 writes an empty definition (encoding "unknown") for a type it
    // had none of; ros2idl is not read here: the msg path is asked instead.
    if (encoding == "ros2msg" && !definition.empty()) out[std::move(type)] = std::move(definition);
  }
  return out;
}

}  // namespace

SqliteToMcap::SqliteToMcap(const std::string& output, std::vector<std::string> msg_paths)
    : writer_(output,
              [] {
                mcap::WriterOptions w;
                w.profile = "ros2";
                w.library = "shmbus rosbag2 sqlite3";
                w.compression = mcap::Compression::kZstd;
                return w;
              }()),
      catalog_(std::move(msg_paths)) {}

std::uint16_t SqliteToMcap::schema(const std::string& type, const std::map<std::string, std::string>& definitions,
                                   const std::string& topic, const std::string& shown) {
  if (const auto it = schemas_.find(type); it != schemas_.end()) return it->second;
  std::string data;
  if (const auto d = definitions.find(type); d != definitions.end()) {
    data = d->second;
  } else if (catalog_.contains(type)) {
    try {
      data = schema::ros2msg_text(catalog_.find(type).root());
    } catch (const std::exception& e) {
      notes_.push_back(fmt::format("{}: type {} of {}: its definition on the msg path cannot be read: {}", shown, type,
                                   topic, e.what()));
    }
  }
  // Without text (neither the file nor the msg path defines the type)
  // the bag commands carry the channel undecoded and say why.
  const std::uint16_t id = writer_.add_schema(type, "ros2msg", std::move(data));
  schemas_.emplace(type, id);
  return id;
}

std::uint16_t SqliteToMcap::channel(const Topic& t, const std::map<std::string, std::string>& definitions,
                                    const std::string& shown) {
  const auto key = std::make_tuple(t.name, t.type, t.format);
  if (const auto it = channels_.find(key); it != channels_.end()) return it->second;
  if (channels_.size() >= kMaxTopics) {
    throw Error(Errc::kConfig, fmt::format("{}: more than {} topics", shown, kMaxTopics));
  }
  const std::uint16_t schema_id = schema(t.type, definitions, t.name, shown);
  if (!definitions.contains(t.type) && !catalog_.contains(t.type)) {
    undefined_.push_back(fmt::format("{} ({})", t.name, t.type));
  }
  mcap::KeyValues metadata;
  if (!t.qos.empty()) metadata.emplace_back("offered_qos_profiles", t.qos);
  const std::uint16_t id = writer_.add_channel(schema_id, t.name, t.format, std::move(metadata));
  channels_.emplace(key, id);
  return id;
}

void SqliteToMcap::add_file(const std::string& path, const std::string& shown, bool per_message_zstd) {
  const Db db = open_db(path, shown);
  const std::set<std::string> topic_columns = columns(db.get(), "topics", shown);
  require(topic_columns, {"id", "name", "type", "serialization_format"}, "topics", shown);
  require(columns(db.get(), "messages", shown), {"topic_id", "timestamp", "data"}, "messages", shown);
  const std::map<std::string, std::string> definitions = read_definitions(db.get(), shown);
  // Topics by their id in this file (each split file numbers its own).
  std::map<std::int64_t, std::pair<std::uint16_t, std::string>> ids;
  const Stmt topics = prepare(db.get(),
                              topic_columns.contains("offered_qos_profiles")
                                  ? "SELECT id, name, type, serialization_format, offered_qos_profiles FROM topics"
                                  : "SELECT id, name, type, serialization_format, '' FROM topics",
                              shown);
  while (step(db.get(), topics.get(), shown)) {
    Topic t{text(topics.get(), 1, kMaxNameBytes, "topic name", shown),
            text(topics.get(), 2, kMaxNameBytes, "type name", shown),
            text(topics.get(), 3, kMaxNameBytes, "serialization format", shown),
            text(topics.get(), 4, kMaxDefinitionBytes, "QoS profile", shown)};
    const std::uint16_t id = channel(t, definitions, shown);
    ids[sqlite3_column_int64(topics.get(), 0)] = {id, std::move(t.name)};
  }
  const Stmt messages =
      prepare(db.get(), "SELECT topic_id, timestamp, data FROM messages ORDER BY timestamp, rowid", shown);
  std::vector<std::byte> held;
  while (step(db.get(), messages.get(), shown)) {
    const auto topic = ids.find(sqlite3_column_int64(messages.get(), 0));
    const std::int64_t stamp = sqlite3_column_int64(messages.get(), 1);
    const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(messages.get(), 2));
    std::span<const std::byte> bytes(data, static_cast<std::size_t>(sqlite3_column_bytes(messages.get(), 2)));
    auto leave_out = [&](const std::string& where, const std::string& why) {
      auto& [first, n] = left_out_[where];
      if (n++ == 0) first = why;
    };
    if (topic == ids.end()) {
      leave_out(fmt::format("{}: topic id {}", shown, sqlite3_column_int64(messages.get(), 0)), "not in its topics");
      continue;
    }
    const auto& [channel_id, name] = topic->second;
    if (stamp < 0) {
      leave_out(fmt::format("{}: {}", shown, name), fmt::format("timestamp {} is before 1970", stamp));
      continue;
    }
    if (per_message_zstd) {
      try {
        held = unzstd(bytes, kMaxMessageBytes);
      } catch (const std::exception& e) {
        leave_out(fmt::format("{}: {}", shown, name), fmt::format("its zstd data: {}", e.what()));
        continue;
      }
      bytes = held;
    }
    const auto t = static_cast<std::uint64_t>(stamp);
    writer_.write({channel_id, sequence_[channel_id]++, t, t, bytes});
  }
}

std::vector<std::string> SqliteToMcap::finish() {
  writer_.close();
  std::vector<std::string> out = notes_;
  for (const auto& [where, what] : left_out_) {
    out.push_back(fmt::format("{}: {} message(s) left out: {}", where, what.second, what.first));
  }
  return out;
}

}  // namespace shmbus::rosbag2
