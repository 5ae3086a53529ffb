// The iceoryx transport: RouDi's configuration and presence, this process's
// iceoryx runtime, and the publisher and subscriber ports (iceoryx_port.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "fnv.hpp"
#include "iceoryx_hoofs/log/logmanager.hpp"
#include "iceoryx_port.hpp"
#include "iceoryx_posh/mepoo/chunk_header.hpp"
#include "iceoryx_posh/mepoo/chunk_settings.hpp"
#include "iceoryx_posh/popo/untyped_publisher.hpp"
#include "iceoryx_posh/popo/untyped_subscriber.hpp"
#include "iceoryx_posh/runtime/posh_runtime.hpp"
#include "shmbus/error.hpp"
#include "shmbus/iceoryx.hpp"

#if defined(__SANITIZE_THREAD__)
#define SHMBUS_TSAN_IOX 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMBUS_TSAN_IOX 1
#endif
#endif
#ifdef SHMBUS_TSAN_IOX
extern "C" void __tsan_acquire(void* addr);  // NOLINT(bugprone-reserved-identifier): ThreadSanitizer's interface
extern "C" void __tsan_release(void* addr);  // NOLINT(bugprone-reserved-identifier)
#endif

namespace shmbus {

namespace {

/// iceoryx (Debian's build) is not built with ThreadSanitizer: the atomics
/// by which it hands a chunk from publisher to subscriber, and back to the
/// pool, are invisible to it. These tell it what they order: what was
/// written into a chunk before it was handed on happens before what the
/// next holder does with it. Nothing outside ThreadSanitizer builds.
void handed_on([[maybe_unused]] const void* chunk) noexcept {
#ifdef SHMBUS_TSAN_IOX
  __tsan_release(const_cast<void*>(chunk));
#endif
}
void taken_over([[maybe_unused]] const void* chunk) noexcept {
#ifdef SHMBUS_TSAN_IOX
  __tsan_acquire(const_cast<void*>(chunk));
#endif
}

}  // namespace

namespace iceoryx {

std::uint32_t chunk_payload_size(std::uint32_t max_message_size) {
  auto settings = iox::mepoo::ChunkSettings::create(max_message_size, detail::kChunkPayloadAlignment,
                                                    detail::kChunkUserHeaderSize, alignof(layout::SlotHeader));
  if (settings.has_error()) {
    throw Error(Errc::kConfig,
                fmt::format("max_message_size {} is too large for an iceoryx chunk; use at most about 4 GB less "
                            "{} bytes of headers",
                            max_message_size, detail::kChunkUserHeaderSize));
  }
  // RouDi adds the chunk header to a pool's size itself; pools are sized
  // in multiples of 8 bytes.
  const std::uint64_t payload = settings.value().requiredChunkSize() - sizeof(iox::mepoo::ChunkHeader);
  return static_cast<std::uint32_t>((payload + 7) / 8 * 8);
}

std::string roudi_config(const Config& config) {
  // chunk size -> chunks
  std::map<std::uint32_t, std::uint64_t> pools;
  const auto add = [&](const ChannelSettings& s, std::uint32_t channels) {
    const std::uint64_t per_channel =
        std::uint64_t{s.capacity} * kSubscribersPerChannel + iox::MAX_PUBLISHER_HISTORY + 8;
    pools[chunk_payload_size(s.max_message_size)] += per_channel * channels;
  };
  add(config.defaults, kDefaultChannels);
  for (const ChannelRule& r : config.channels) {
    const ChannelSettings s = config.channel(r.pattern);
    if (s.transport == Transport::kIceoryx) add(s, 1);
  }
  std::string out = fmt::format(
      "# RouDi's memory pools for the iceoryx channels of {}, derived by shmbus:\n"
      "# per channel, capacity x {} subscribers + {} chunks of history and loans.\n"
      "[general]\nversion = 1\n\n[[segment]]\n",
      config.source, kSubscribersPerChannel, iox::MAX_PUBLISHER_HISTORY + 8);
  for (const auto& [size, count] : pools) {
    out += fmt::format("\n[[segment.mempool]]\nsize = {}\ncount = {}\n", size, count);
  }
  return out;
}

bool roudi_running() noexcept {
  // RouDi's IPC channel (iceoryx 2.0 on Linux): a datagram socket at
  // /tmp/roudi. A stale socket file of a dead RouDi refuses connections.
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, "/tmp/roudi", sizeof(addr.sun_path) - 1);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

std::string runtime_name(std::string_view comm, long pid) {
  std::string safe{comm};
  for (char& c : safe) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return fmt::format("shmbus.{}.{}", safe, pid);
}

std::size_t remove_stale_runtime_files() noexcept {
  // iceoryx 2.0 on Linux: the runtime's socket is /tmp/<name>, its lock
  // /tmp/<name>.lock (flock'ed by the runtime while it lives).
  const std::filesystem::path dir{"/tmp"};
  std::error_code ec;
  std::size_t removed = 0;
  std::filesystem::directory_iterator it(dir, ec);
  // Housekeeping: an entry that cannot be read ends the scan, quietly.
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::filesystem::directory_entry& entry = *it;
    const std::string file = entry.path().filename().string();
    constexpr std::string_view kPrefix = "shmbus.";
    constexpr std::string_view kLock = ".lock";
    if (file.size() <= kPrefix.size() + kLock.size() || file.rfind(kPrefix, 0) != 0 ||
        file.compare(file.size() - kLock.size(), kLock.size(), kLock) != 0) {
      continue;
    }
    const std::string name = file.substr(0, file.size() - kLock.size());
    const std::size_t dot = name.rfind('.');
    long pid = 0;
    const char* end = name.data() + name.size();
    if (dot == std::string::npos || std::from_chars(name.data() + dot + 1, end, pid).ptr != end || pid <= 0) continue;
    // Alive here (EPERM: alive, someone else's): not stale.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    // Held: a live runtime of that name (a process in another pid
    // namespace sharing /tmp).
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code ignored;  // another process's file we may not remove: left
      std::filesystem::remove(dir / name, ignored);
      if (std::filesystem::remove(entry.path(), ignored)) ++removed;
    }
    ::close(fd);
  }
  return removed;
}

}  // namespace iceoryx

namespace detail {

// iceoryx's rules for a user header: its alignment at most the chunk
// header's, its size a multiple of its alignment.
static_assert(alignof(layout::SlotHeader) <= alignof(iox::mepoo::ChunkHeader));
static_assert(kChunkSlotHeaderSize % alignof(layout::SlotHeader) == 0 &&
              kChunkUserHeaderSize % alignof(layout::SlotHeader) == 0);
static_assert(kChunkUserHeaderSize == chunk_user_header_size(layout::kProvenanceEntries),
              "the provenance entries follow the slot header, as in a ring slot");
static_assert(sizeof(layout::ProvenanceEntry) % alignof(layout::SlotHeader) == 0,
              "every provenance room keeps the user header's size a multiple of its alignment");

namespace {

using namespace std::chrono_literals;

/// iceoryx's ids hold 100 characters: a longer name is replaced by its hash.
iox::capro::IdString_t id_of(const std::string& name) {
  if (name.size() <= iox::capro::IdString_t::capacity()) {
    return {iox::cxx::TruncateToCapacity, name.c_str(), name.size()};
  }
  const std::string hashed = fmt::format("#{:016x}", fnv1a64(name));
  return {iox::cxx::TruncateToCapacity, hashed.c_str(), hashed.size()};
}

iox::capro::ServiceDescription service_of(const std::string& domain, const std::string& channel) {
  return {"shmbus", id_of(domain), id_of(channel)};
}

/// Polls `done` every millisecond for up to 2 s (RouDi connects ports in
/// its discovery loop, every 100 ms).
template <typename Done>
void await(Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
}

}  // namespace

void ensure_iceoryx_runtime(std::string_view channel) {
  static std::once_flag once;
  std::call_once(once, [channel] {
    if (!iceoryx::roudi_running()) {
      throw Error(Errc::kNotFound,
                  fmt::format("channel {} uses transport \"iceoryx\" and no iceoryx RouDi runs on this machine; "
                              "start it with `shmbusd --roudi` (or `systemctl start shmbus-roudi`)",
                              channel));
    }
    // iceoryx logs at debug level by default, to stdout: warnings and
    // errors only, and without announcing the level (a tool's stdout is
    // its output).
    iox::log::LogManager::GetLogManager().SetDefaultLogLevel(iox::log::LogLevel::kWarn,
                                                             iox::log::LogLevelOutput::kHideLogLevel);
    // One name per process: RouDi refuses a second runtime of the same name.
    std::string comm = "shmbus";
    if (FILE* f = std::fopen("/proc/self/comm", "r")) {
      char buf[32] = {};
      if (std::fgets(buf, sizeof(buf), f) != nullptr) comm.assign(buf, strcspn(buf, "\n"));
      std::fclose(f);
    }
    iceoryx::remove_stale_runtime_files();
    const std::string name = iceoryx::runtime_name(comm, ::getpid());
    iox::runtime::PoshRuntime::initRuntime(iox::RuntimeName_t(iox::cxx::TruncateToCapacity, name.c_str()));
  });
}

struct IceoryxPublisherPort::Impl {
  iox::popo::UntypedPublisher publisher;
  Impl(const iox::capro::ServiceDescription& s, const iox::popo::PublisherOptions& o) : publisher(s, o) {}
};

IceoryxPublisherPort::IceoryxPublisherPort(const std::string& domain, const std::string& channel, std::uint32_t history,
                                           bool subscribers_exist) {
  iox::popo::PublisherOptions o;
  // Late subscribers asking for history get up to this many messages.
  o.historyCapacity = std::min<std::uint64_t>(history, iox::MAX_PUBLISHER_HISTORY);
  // A slow subscriber loses its oldest messages; the publisher never waits.
  o.subscriberTooSlowPolicy = iox::popo::ConsumerTooSlowPolicy::DISCARD_OLDEST_DATA;
  impl_ = std::make_unique<Impl>(service_of(domain, channel), o);
  if (subscribers_exist) await([this] { return impl_->publisher.hasSubscribers(); });
}

IceoryxPublisherPort::~IceoryxPublisherPort() = default;

std::byte* IceoryxPublisherPort::loan(std::uint32_t size, std::uint32_t provenance_room,
                                      layout::SlotHeader*& header) noexcept {
  auto chunk = impl_->publisher.loan(size, kChunkPayloadAlignment, chunk_user_header_size(provenance_room),
                                     alignof(layout::SlotHeader));
  if (chunk.has_error()) return nullptr;
  void* payload = chunk.value();
  auto* chunk_header = iox::mepoo::ChunkHeader::fromUserPayload(payload);
  taken_over(chunk_header);
  header = static_cast<layout::SlotHeader*>(chunk_header->userHeader());
  return static_cast<std::byte*>(payload);
}

void IceoryxPublisherPort::publish(std::byte* payload) noexcept {
  handed_on(iox::mepoo::ChunkHeader::fromUserPayload(payload));
  impl_->publisher.publish(payload);
}

void IceoryxPublisherPort::release(std::byte* payload) noexcept {
  handed_on(iox::mepoo::ChunkHeader::fromUserPayload(payload));
  impl_->publisher.release(payload);
}

/// iceoryx's untyped subscriber, taking a chunk by its chunk header
/// (BaseSubscriber::takeChunk, protected for such extensions). take()
/// returns the payload, and the user header is then found through the
/// payload offset stored just before the payload: a load from the
/// payload's cache line that must finish before any header field can be
/// read. From the chunk header, the user header's address is known at once
/// and its lines load in parallel with the payload's.
class ChunkSubscriber final : public iox::popo::UntypedSubscriber {
 public:
  using UntypedSubscriber::UntypedSubscriber;
  const iox::mepoo::ChunkHeader* take_chunk() noexcept {
    auto chunk = takeChunk();
    return chunk.has_error() ? nullptr : chunk.value();
  }
};

struct IceoryxSubscriberPort::Impl {
  ChunkSubscriber subscriber;
  Impl(const iox::capro::ServiceDescription& s, const iox::popo::SubscriberOptions& o) : subscriber(s, o) {}
};

IceoryxSubscriberPort::IceoryxSubscriberPort(const std::string& domain, const std::string& channel,
                                             std::uint32_t capacity, std::uint32_t history, bool publishers_exist) {
  iox::popo::SubscriberOptions o;
  o.queueCapacity = std::clamp<std::uint64_t>(capacity, 1, iox::MAX_SUBSCRIBER_QUEUE_CAPACITY);
  o.historyRequest = std::min<std::uint64_t>(history, iox::MAX_PUBLISHER_HISTORY);
  o.queueFullPolicy = iox::popo::QueueFullPolicy::DISCARD_OLDEST_DATA;
  impl_ = std::make_unique<Impl>(service_of(domain, channel), o);
  auto& sub = impl_->subscriber;
  await([&] {
    const auto st = sub.getSubscriptionState();
    return st == iox::SubscribeState::SUBSCRIBED || (!publishers_exist && st == iox::SubscribeState::WAIT_FOR_OFFER);
  });
}

IceoryxSubscriberPort::~IceoryxSubscriberPort() = default;

const std::byte* IceoryxSubscriberPort::take(const layout::SlotHeader*& header, ChunkBounds& bounds) noexcept {
  const iox::mepoo::ChunkHeader* chunk_header = impl_->subscriber.take_chunk();
  if (chunk_header == nullptr) return nullptr;
  taken_over(chunk_header);
  const void* payload = chunk_header->userPayload();
  header = static_cast<const layout::SlotHeader*>(chunk_header->userHeader());
  bounds.payload_size = chunk_header->userPayloadSize();
  const std::uint32_t header_size = chunk_header->userHeaderSize();
  bounds.provenance_room =
      header_size < kChunkSlotHeaderSize
          ? 0
          : std::min<std::uint32_t>((header_size - kChunkSlotHeaderSize) / sizeof(layout::ProvenanceEntry),
                                    layout::kProvenanceEntries);
  return static_cast<const std::byte*>(payload);
}

void IceoryxSubscriberPort::release(const std::byte* payload) noexcept {
  handed_on(iox::mepoo::ChunkHeader::fromUserPayload(payload));
  impl_->subscriber.release(payload);
}

bool IceoryxSubscriberPort::has_data() const noexcept { return impl_->subscriber.hasData(); }

bool IceoryxSubscriberPort::discarded() noexcept { return impl_->subscriber.hasMissedData(); }

}  // namespace detail
}  // namespace shmbus
