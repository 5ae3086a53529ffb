// The commands that touch traffic: echo (a subscriber that decodes), hz (the
// rate from the time list, without subscribing), bw (bytes per second, read
// in place) and pub (a paced publisher that encodes JSON through the schema).
#include <time.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/monitor/frequency.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/schema/type_catalog.hpp"
#include "shmbus/subscriber.hpp"

namespace shmbus::tool {

using schema::Json;

namespace {

constexpr char kDigits[] = "0123456789abcdef";

void append_hex(std::string& out, std::byte b) {
  out += kDigits[static_cast<unsigned>(b) >> 4];
  out += kDigits[static_cast<unsigned>(b) & 0xf];
}

std::string hex(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) append_hex(out, b);
  return out;
}

/// A hexdump: offset, 16 bytes, printable ASCII (a camera frame is
/// megabytes: no formatting call per byte).
std::string hexdump(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve((bytes.size() / 16 + 1) * 78);
  for (std::size_t off = 0; off < bytes.size(); off += 16) {
    const std::size_t n = std::min<std::size_t>(16, bytes.size() - off);
    for (int shift = 28; shift >= 0; shift -= 4) out += kDigits[(off >> shift) & 0xf];
    out += ' ';
    for (std::size_t i = 0; i < 16; ++i) {
      out += ' ';
      if (i < n) {
        append_hex(out, bytes[off + i]);
      } else {
        out += "  ";
      }
    }
    out += "  ";
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<char>(bytes[off + i]);
      out += c >= 0x20 && c < 0x7f ? c : '.';
    }
    out += '\n';
  }
  return out;
}

std::string wall_time(std::int64_t wall_ns) {
  const time_t secs = static_cast<time_t>(wall_ns / 1'000'000'000);
  tm utc{};
  ::gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:06d}Z", buf, static_cast<int>(wall_ns % 1'000'000'000 / 1000));
}

/// The hex of DATA for raw messages: "0a1b..." (spaces and a 0x prefix allowed).
std::vector<std::byte> parse_hex(const std::string& text) {
  std::string digits;
  std::string_view t(text);
  if (t.starts_with("0x") || t.starts_with("0X")) t.remove_prefix(2);
  for (char c : t) {
    if (c == ' ' || c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("DATA '{}' is not hex; a raw channel takes bytes as hex digits, e.g. 0a1b2c", text));
    }
    digits += c;
  }
  if (digits.size() % 2 != 0) {
    throw Error(Errc::kInvalidArgument, fmt::format("DATA '{}' has an odd number of hex digits", text));
  }
  std::vector<std::byte> out(digits.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(std::stoul(digits.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

}  // namespace

int run_echo(const Globals& g, const EchoOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  Context ctx = make_context(config);
  Subscriber sub = subscribe_reader(config, ctx, o.channel, o.no_wait, SubscriberOptions{.history = o.history});
  if (!await_attached(config, {&sub})) return 0;  // Ctrl-C while waiting
  const TypeInfo type = sub.type();
  const std::optional<schema::Schema> schema = o.hex ? std::nullopt : schema::Schema::of(type);
  std::vector<std::byte> buffer(sub.max_message_size());
  ProvenanceNames names(config, o.channel);
  std::uint64_t shown = 0;
  std::uint64_t undecodable = 0;
  while (!stop_requested() && (o.count == 0 || shown < o.count)) {
    const TakeResult r = sub.take(buffer);
    if (r.status == TakeStatus::kNoData) {
      (void)sub.wait(std::chrono::milliseconds(100));
      continue;
    }
    if (!r.ok()) {  // the channel grew: a larger buffer for its larger messages
      buffer.resize(r.info.size);
      continue;
    }
    const std::span<const std::byte> payload(buffer.data(), r.info.size);
    Json data;
    try {
      data = schema ? schema->decode(payload) : Json(hex(payload));
    } catch (const schema::CodecError& e) {
      ++undecodable;
      std::fprintf(stderr, "shmtool echo: %s: message %llu does not decode as %s: %s\n", o.channel.c_str(),
                   static_cast<unsigned long long>(r.info.sequence), type.name.c_str(), e.what());
      continue;
    }
    ++shown;
    std::string out;
    if (g.json) {
      if (o.no_header) {
        out = data.dump();
      } else {
        Json j;
        j["channel"] = o.channel;
        j["sequence"] = r.info.sequence;
        j["publish_time_ns"] = r.info.publish_time_ns;
        j["publish_wall_ns"] = r.info.publish_wall_ns;
        j["lost_before"] = r.info.lost_before;
        j["publisher_id"] = r.info.publisher_id;
        j["node"] = names.node(r.info.publisher_id);
        j["inputs"] = names.inputs_json(r.info);
        j["inputs_cut"] = r.info.provenance_cut;
        j["second_level_cut"] = r.info.second_level_cut;
        j["processing_ns"] = r.info.processing_ns;
        j["size"] = r.info.size;
        j["data"] = std::move(data);
        out = j.dump();
      }
      out += '\n';
    } else {
      if (!o.no_header) {
        const std::string& node = names.node(r.info.publisher_id);
        out = fmt::format("--- {}  seq {}  {}  lost {}  {} B  publisher {}{}\n", o.channel, r.info.sequence,
                          wall_time(r.info.publish_wall_ns), r.info.lost_before, r.info.size, r.info.publisher_id,
                          node.empty() ? std::string{} : fmt::format(" ({})", node));
        if (r.info.input_count != 0) {
          out += fmt::format("    inputs: {}{}  processing {:.1f} us\n", names.inputs_text(r.info),
                             r.info.provenance_cut != 0 ? fmt::format(" (+{} cut)", r.info.provenance_cut) : "",
                             static_cast<double>(r.info.processing_ns) / 1e3);
        }
      }
      out += schema ? to_yaml(data) : hexdump(payload);
    }
    print(out);
  }
  if (undecodable != 0) {
    std::fprintf(stderr, "shmtool echo: %llu messages on %s did not decode\n",
                 static_cast<unsigned long long>(undecodable), o.channel.c_str());
    return 1;
  }
  return 0;
}

int run_hz(const Globals& g, const HzOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  const std::optional<introspect::ChannelReader> awaited = await_channel(config, o.channel, o.no_wait);
  if (!awaited) return 0;  // Ctrl-C while waiting
  const introspect::ChannelReader& reader = *awaited;
  const std::int64_t window_ns =
      o.window_s ? static_cast<std::int64_t>(*o.window_s * 1e9) : config.channel(o.channel).window.count();
  const auto interval = static_cast<std::int64_t>(o.interval_s * 1e9);
  introspect::TimeListSnapshot snap;
  std::int64_t next = mono_now_ns();
  for (std::uint64_t reports = 0; o.reports == 0 || reports < o.reports; ++reports) {
    if (reports != 0 && !sleep_until(next)) break;
    const std::int64_t now = mono_now_ns();
    next += interval;
    reader.snapshot(snap);
    const monitor::WindowMeasure m = monitor::measure_window(snap.stamps, now, window_ns, snap.total > snap.capacity);
    if (g.json) {
      print(Json{{"channel", o.channel},
                 {"rate_hz", m.frequency_hz},
                 {"min_s", json_number(m.period.min)},
                 {"max_s", json_number(m.period.max)},
                 {"std_dev_s", json_number(m.period.stddev)},
                 {"window", m.n}}
                .dump() +
            "\n");
      continue;
    }
    if (m.n < 2) {
      print(fmt::format("{}: no messages in the last {}\n", o.channel,
                        format_duration(std::chrono::nanoseconds(window_ns))));
      continue;
    }
    std::string line =
        fmt::format("{}: {}  min {}  max {}  std dev {}  window {} ({})", o.channel, human_rate(m.frequency_hz),
                    human_seconds(m.period.min), human_seconds(m.period.max), human_seconds(m.period.stddev), m.n,
                    human_seconds(static_cast<double>(m.last_ns - m.first_ns) / 1e9));
    if (m.truncated) {
      line += fmt::format("  [the time list ({} stamps) is shorter than the {} window at this rate]", snap.capacity,
                          format_duration(std::chrono::nanoseconds(window_ns)));
    }
    print(line + "\n");
  }
  return 0;
}

namespace {

/// The last `window` messages' publish stamps and sizes, and what they make.
class SizeWindow {
 public:
  explicit SizeWindow(std::size_t window) : window_(std::max<std::size_t>(window, 2)) {}
  void add(std::int64_t stamp_ns, std::uint32_t size) {
    if (seen_.size() == window_) seen_.pop_front();
    seen_.emplace_back(stamp_ns, size);
  }
  /// Bytes per second as f = (n-1)/(Tn-T1) counts messages: the bytes
  /// after the first over the time from the first stamp to the last.
  [[nodiscard]] Json figures() const {
    std::uint64_t total = 0;
    std::uint64_t after_first = 0;
    std::uint32_t min = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t max = 0;
    for (std::size_t i = 0; i < seen_.size(); ++i) {
      const std::uint32_t size = seen_[i].second;
      total += size;
      after_first += i == 0 ? 0 : size;
      min = std::min(min, size);
      max = std::max(max, size);
    }
    const std::int64_t span = seen_.size() < 2 ? 0 : seen_.back().first - seen_.front().first;
    return Json{{"messages", seen_.size()},
                {"bytes_per_s", span > 0 ? static_cast<double>(after_first) * 1e9 / static_cast<double>(span) : 0.0},
                {"mean_bytes", seen_.empty() ? 0.0 : static_cast<double>(total) / static_cast<double>(seen_.size())},
                {"min_bytes", seen_.empty() ? 0 : min},
                {"max_bytes", max}};
  }

 private:
  std::size_t window_;
  std::deque<std::pair<std::int64_t, std::uint32_t>> seen_;
};

}  // namespace

int run_bw(const Globals& g, const BwOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  Context ctx = make_context(config);
  Subscriber sub = subscribe_reader(config, ctx, o.channel, o.no_wait, SubscriberOptions{});
  if (!await_attached(config, {&sub})) return 0;  // Ctrl-C while waiting
  SizeWindow window(o.window);
  std::uint64_t lost = 0;
  const auto interval = static_cast<std::int64_t>(o.interval_s * 1e9);
  std::int64_t next = mono_now_ns() + interval;
  for (std::uint64_t reports = 0; !stop_requested() && (o.reports == 0 || reports < o.reports);) {
    // In place: the size is in the slot's header; the payload is not read.
    std::uint32_t size = 0;
    const TakeResult r = sub.read([&size](std::span<const std::byte> payload, const MessageInfo&) {
      size = static_cast<std::uint32_t>(payload.size());
    });
    if (r.ok()) {
      window.add(r.info.publish_time_ns, size);
      lost += r.info.lost_before;
    } else {
      (void)sub.wait(std::chrono::nanoseconds(std::max<std::int64_t>(next - mono_now_ns(), 0)));
    }
    if (mono_now_ns() < next) continue;
    next += interval;
    ++reports;
    Json f = window.figures();
    f["channel"] = o.channel;
    f["lost"] = lost;
    if (g.json) {
      print(f.dump() + "\n");
    } else if (f["messages"].get<std::size_t>() < 2) {
      print(fmt::format("{}: fewer than 2 messages so far\n", o.channel));
    } else {
      print(fmt::format(
          "{}: {}/s from {} messages  mean {}  min {}  max {}  lost {}\n", o.channel,
          human_bytes(static_cast<std::uint64_t>(f["bytes_per_s"].get<double>())), f["messages"].get<std::size_t>(),
          human_bytes(static_cast<std::uint64_t>(f["mean_bytes"].get<double>())),
          human_bytes(f["min_bytes"].get<std::uint64_t>()), human_bytes(f["max_bytes"].get<std::uint64_t>()), lost));
    }
  }
  return 0;
}

namespace {

/// What `pub` sends: the type, and the message as JSON (typed) or bytes.
struct PubMessage {
  TypeInfo type = TypeInfo::bytes();
  std::optional<schema::Schema> schema;  ///< typed channels
  Json message;                          ///< typed channels: what is encoded
  std::vector<std::byte> payload;
  bool ros2_header = false;  ///< --stamp: header.stamp (ROS 2) rather than stamp_ns and seq
};

/// The type: --raw-size, --type, or the existing channel's.
void resolve_pub_type(const Globals& g, const Config& config, const PubOptions& o, PubMessage& out) {
  std::optional<introspect::ChannelView> existing;
  try {
    existing = introspect::ChannelReader(config.domain, o.channel, false, config.access()).view();
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
  }
  const bool raw = o.raw_size.has_value() || (o.type.empty() && existing && !schema_of(*existing));
  if (!raw) {
    if (!o.type.empty()) {
      out.schema = schema::TypeCatalog(g.msg_paths).find(o.type);
    } else if (existing) {
      out.schema = schema_of(*existing);
    } else {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("channel {} does not exist in domain \"{}\"; give its type with --type package/Name "
                              "(or --raw-size BYTES for raw bytes)",
                              o.channel, config.domain));
    }
    out.type = out.schema->type_info();
  } else if (!o.raw_size && existing && existing->type_hash != out.type.hash) {
    out.type = existing->type();  // schema-less typed channel
  }
}

/// A typed payload: DATA merged onto an all-zero message, so fields left
/// out are zero; encoding names any field that does not fit.
void encode_typed(const PubOptions& o, PubMessage& out) {
  const schema::Schema& schema = *out.schema;
  out.message = message_from_json_text(schema, o.data, "DATA");
  if (o.stamp) {
    const auto header = std::find_if(schema.root().fields.begin(), schema.root().fields.end(),
                                     [](const schema::Field& f) { return f.name == "header"; });
    const bool stampable =
        header != schema.root().fields.end() && header->message != nullptr && header->array_length == 0 &&
        !header->unbounded && header->sequence_bound == 0 &&
        (header->message->name == "std_msgs/Header" || header->message->name == "shmbus_msgs/Header");
    if (!stampable) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("--stamp needs a field 'header' of std_msgs/Header or shmbus_msgs/Header; {} has none",
                              out.type.name));
    }
    out.ros2_header = header->message->name == "std_msgs/Header";
  }
  out.payload = schema.encode(out.message);
}

/// A raw payload: DATA in hex, padded to --raw-size.
void encode_raw(const PubOptions& o, PubMessage& out) {
  if (o.stamp) throw Error(Errc::kInvalidArgument, "--stamp needs a typed channel; raw bytes have no header");
  out.payload = o.data.empty() ? std::vector<std::byte>{} : parse_hex(o.data);
  if (o.raw_size) {
    if (out.payload.size() > *o.raw_size) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("DATA has {} bytes, more than --raw-size {}", out.payload.size(), *o.raw_size));
    }
    out.payload.resize(*o.raw_size);
  }
}

/// Publishes on absolute deadlines start + k * period: no drift however
/// long it runs. A tick missed by more than a period (the process was
/// stopped) is skipped rather than caught up in a burst, and counted.
void publish_paced(Publisher& pub, const PubOptions& o, PubMessage& m) {
  const double period_ns = 1e9 / o.rate_hz;
  const std::int64_t start = mono_now_ns();
  std::uint64_t tick = 0;
  std::uint64_t sent = 0;
  std::uint64_t dropped = 0;
  std::uint64_t skipped = 0;
  const auto deadline = [&](std::uint64_t k) { return start + std::llround(static_cast<double>(k) * period_ns); };
  while (!stop_requested() && (o.count == 0 || sent < o.count)) {
    if (!sleep_until(deadline(tick))) break;
    const std::int64_t now = mono_now_ns();
    if (static_cast<double>(now - deadline(tick)) > period_ns) {
      const auto due = static_cast<std::uint64_t>(static_cast<double>(now - start) / period_ns);
      skipped += due - tick;
      tick = due;
    }
    if (o.stamp) {
      const auto now_ns = static_cast<std::uint64_t>(wall_now_ns());
      if (m.ros2_header) {
        m.message["header"]["stamp"] = {{"sec", static_cast<std::int32_t>(now_ns / 1'000'000'000)},
                                        {"nanosec", static_cast<std::uint32_t>(now_ns % 1'000'000'000)}};
      } else {
        m.message["header"]["stamp_ns"] = now_ns;
        m.message["header"]["seq"] = static_cast<std::uint32_t>(sent);
      }
      m.payload = m.schema->encode(m.message);
    }
    const PublishResult r = pub.publish(m.payload);
    if (r == PublishResult::kOk) {
      ++sent;
    } else if (r == PublishResult::kTooLarge) {
      // The channel could not grow for it (the domain's grow_budget): every
      // message would be refused alike.
      throw Error(Errc::kResource, fmt::format("{}: {}", m.type.name, pub.too_large(m.payload.size())));
    } else {
      ++dropped;
    }
    ++tick;
  }
  print(fmt::format("published {} message{} to {}{}{}\n", sent, sent == 1 ? "" : "s", o.channel,
                    dropped ? fmt::format(", {} dropped (see shmtool info)", dropped) : "",
                    skipped ? fmt::format(", {} ticks skipped (the process fell behind)", skipped) : ""));
}

}  // namespace

int run_pub(const Globals& g, const PubOptions& o) {
  if (!(o.rate_hz > 0) || !std::isfinite(o.rate_hz)) {
    throw Error(Errc::kInvalidArgument, fmt::format("--rate {} is not a rate; give a number of Hz > 0", o.rate_hz));
  }
  const Config config = load_config(g);
  validate_channel_name(o.channel);
  PubMessage m;
  resolve_pub_type(g, config, o, m);
  if (m.schema) {
    encode_typed(o, m);
  } else {
    encode_raw(o, m);
  }

  install_stop_handlers();
  Context ctx = make_context(config);
  Publisher pub(o.channel, m.type, ctx);
  if (m.payload.size() > pub.size_ceiling()) {
    throw Error(Errc::kInvalidArgument, fmt::format("{}: {}", m.type.name, pub.too_large(m.payload.size())));
  }
  print(fmt::format("publishing {} to {} at {}{}; Ctrl-C stops\n", m.type.name, o.channel, human_rate(o.rate_hz),
                    o.count ? fmt::format(", {} message{}", o.count, o.count == 1 ? "" : "s") : ""));
  publish_paced(pub, o, m);
  return 0;
}

}  // namespace shmbus::tool
