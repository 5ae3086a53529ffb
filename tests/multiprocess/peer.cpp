// A publisher or subscriber process for the multi-process and fault tests.
//
//   peer pub DOMAIN CHANNEL TAG COUNT SIZE PACE_US   publish COUNT (0: until SIGTERM)
//   peer die-mid-write DOMAIN CHANNEL TAG SIZE        loan, write half, SIGKILL itself
//   peer pub-hold DOMAIN CHANNEL TAG COUNT SIZE       publish COUNT, print "sent", sleep until killed
//   peer echo DOMAIN IN OUT COUNT                     publish each of COUNT messages taken from IN
//                                                     to OUT, after a pause of 0-49 us; waits of
//                                                     1 s; prints "ready", then echoed= timeouts=
//   peer grow-pub DOMAIN CHANNEL TAG EACH PACE_US SIZES  publish EACH messages of each size of the
//                                                     comma-separated SIZES in turn (the channel
//                                                     grows); prints published= dropped= refused=
//   peer sub DOMAIN CHANNEL TOTAL TIMEOUT_MS [PACE_US]  take until sequence TOTAL-1 is
//                                                     covered (TOTAL 0: until SIGTERM),
//                                                     sleeping PACE_US after each message
//
// SHMBUS_TEST_OVERFLOW=block (and SHMBUS_TEST_BLOCK_TIMEOUT_MS) make the
// channels overflow = block (peer_protocol.hpp).
//
// Channels use capacity 16 and max_message_size 4096, so laps happen.
// `sub` prints one line: delivered= lost= torn= order= accounting= last_seq= max_stall_us=
// `pub` prints: published= dropped= max_publish_us= block_timeouts= blocked_us=
#ifdef SHMBUS_TEST_SECCOMP
#include <seccomp.h>
#endif
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "multiprocess/peer_protocol.hpp"
#include "shmbus/error.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"

using namespace shmbus;
using shmbus::test::fill_payload;
using shmbus::test::kPayloadHeader;
using shmbus::test::payload_intact;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_term(int) { g_stop = 1; }

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int run_pub(Context& ctx, const std::string& channel, std::uint32_t tag, std::uint64_t count, std::size_t size,
            long pace_us) {
  Publisher pub(channel, TypeInfo::bytes(), ctx);
  std::vector<std::byte> msg(size);
  std::int64_t max_publish = 0;
  std::uint64_t dropped = 0;
  for (std::uint64_t i = 0; (count == 0 || i < count) && !g_stop; ++i) {
    fill_payload(msg.data(), size, tag, static_cast<std::uint32_t>(i));
    const std::int64_t t0 = now_ns();
    if (pub.publish(msg) != PublishResult::kOk) ++dropped;
    max_publish = std::max(max_publish, now_ns() - t0);
    if (pace_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pace_us));
  }
  std::printf("published=%llu dropped=%llu max_publish_us=%lld block_timeouts=%llu blocked_us=%lld\n",
              static_cast<unsigned long long>(pub.published()), static_cast<unsigned long long>(dropped),
              static_cast<long long>(max_publish / 1000), static_cast<unsigned long long>(pub.block_timeouts()),
              static_cast<long long>(pub.blocked().count() / 1000));
  return 0;
}

/// Messages of growing sizes: the channel grows at each size over its slots.
int run_grow_pub(Context& ctx, const std::string& channel, std::uint32_t tag, std::uint64_t each, long pace_us,
                 const std::string& sizes) {
  Publisher pub(channel, TypeInfo::bytes(), ctx);
  // SHMBUS_TEST_START_NS: start at that steady_clock time, so that peers
  // started one after the other publish at once.
  if (const char* start = std::getenv("SHMBUS_TEST_START_NS")) {  // NOLINT(concurrency-mt-unsafe): at set-up
    const long long at = std::atoll(start);
    while (now_ns() < at) {
    }
  }
  std::uint64_t dropped = 0, refused = 0, i = 0;
  for (std::size_t at = 0; at < sizes.size() && !g_stop;) {
    const std::size_t comma = std::min(sizes.find(',', at), sizes.size());
    const std::size_t size = std::strtoull(sizes.substr(at, comma - at).c_str(), nullptr, 10);
    at = comma + 1;
    std::vector<std::byte> msg(std::max<std::size_t>(size, kPayloadHeader));
    for (std::uint64_t k = 0; k < each && !g_stop; ++k, ++i) {
      fill_payload(msg.data(), msg.size(), tag, static_cast<std::uint32_t>(i));
      const PublishResult r = pub.publish(msg);
      if (r == PublishResult::kTooLarge) {
        ++refused;
        std::fprintf(stderr, "peer: %s\n", pub.too_large(msg.size()).c_str());
      } else if (r != PublishResult::kOk) {
        ++dropped;
      }
      if (pace_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pace_us));
    }
  }
  std::printf("published=%llu dropped=%llu refused=%llu max_message_size=%zu\n",
              static_cast<unsigned long long>(pub.published()), static_cast<unsigned long long>(dropped),
              static_cast<unsigned long long>(refused), pub.max_message_size());
  return 0;
}

/// A publisher to be killed outside any publish: it sends, says so, waits.
int run_pub_hold(Context& ctx, const std::string& channel, std::uint32_t tag, std::uint64_t count, std::size_t size) {
  Publisher pub(channel, TypeInfo::bytes(), ctx);
  std::vector<std::byte> msg(size);
  for (std::uint64_t i = 0; i < count; ++i) {
    fill_payload(msg.data(), size, tag, static_cast<std::uint32_t>(i));
    if (pub.publish(msg) != PublishResult::kOk) return 1;
  }
  std::printf("sent\n");
  std::fflush(stdout);
  while (!g_stop) ::pause();
  return 0;
}

int run_echo(Context& ctx, const std::string& in, const std::string& out, std::uint64_t count) {
  Subscriber sub(in, TypeInfo::bytes(), ctx);
  Publisher pub(out, TypeInfo::bytes(), ctx);
  std::vector<std::byte> buf(4096);
  std::uint64_t echoed = 0, timeouts = 0;
  std::printf("ready\n");
  while (echoed < count && !g_stop && timeouts < 5) {
    if (!sub.wait(std::chrono::seconds(1))) {
      ++timeouts;  // a wake that never came: the test asserts there is none
      continue;
    }
    const TakeResult r = sub.take(buf);
    if (!r.ok()) continue;
    std::this_thread::sleep_for(std::chrono::microseconds(echoed % 50));
    if (pub.publish(std::span<const std::byte>(buf.data(), r.info.size)) != PublishResult::kOk) return 1;
    ++echoed;
  }
  std::printf("echoed=%llu timeouts=%llu\n", static_cast<unsigned long long>(echoed),
              static_cast<unsigned long long>(timeouts));
  return 0;
}

int run_die_mid_write(Context& ctx, const std::string& channel, std::uint32_t tag, std::size_t size) {
  Publisher pub(channel, TypeInfo::bytes(), ctx);
  Loan loan = pub.loan(size);
  if (!loan.valid()) return 1;
  fill_payload(loan.data().data(), size / 2, tag, 0);
  ::raise(SIGKILL);
  return 1;
}

int run_sub(Context& ctx, const std::string& channel, std::uint64_t total, long timeout_ms, long pace_us) {
  Subscriber sub(channel, TypeInfo::bytes(), ctx);
  std::vector<std::byte> buf(4096);
  std::map<std::uint32_t, std::int64_t> last_counter;
  std::uint64_t delivered = 0, lost = 0, torn = 0, order = 0, accounting = 0;
  std::int64_t last_seq = -1;
  std::int64_t stall_start = 0, max_stall = 0;
  const std::int64_t deadline = now_ns() + timeout_ms * 1'000'000;
  bool stopping = false;
  // On the ring, sequences arrive in order. On iceoryx, each publisher's
  // messages arrive in order, but several publishers' interleave as they
  // were delivered, not by sequence: there, delivered + lost covers TOTAL,
  // with lost as the subscriber counts it: a publisher's last messages,
  // discarded after it stopped, are lost before no delivered message.
  const bool by_sequence = ctx.config().defaults.transport == Transport::kShm;
  const auto covered = [&] { return by_sequence ? static_cast<std::uint64_t>(last_seq + 1) : delivered + sub.lost(); };
  while (true) {
    if (total != 0 && covered() >= total) break;
    if (now_ns() > deadline) break;
    if (g_stop && !stopping) stopping = true;
    if (!stopping) sub.wait(std::chrono::milliseconds(20));
    TakeResult r = sub.take(buf);
    if (r.status == TakeStatus::kBufferTooSmall) {  // the channel grew
      buf.resize(r.info.size);
      r = sub.take(buf);
    }
    if (!r.ok()) {
      if (sub.pending()) {
        if (stall_start == 0) stall_start = now_ns();
        max_stall = std::max(max_stall, now_ns() - stall_start);
        continue;
      }
      stall_start = 0;
      if (stopping) break;  // drained
      continue;
    }
    stall_start = 0;
    std::uint32_t tag = 0, counter = 0;
    if (!payload_intact(buf.data(), r.info.size, tag, counter)) {
      ++torn;
    } else {
      auto [it, fresh] = last_counter.emplace(tag, -1);
      if (static_cast<std::int64_t>(counter) <= it->second) ++order;
      it->second = counter;
    }
    // A subscriber that joined a channel already in use starts at its
    // cursor: from the first message on, every sequence is delivered or
    // counted lost.
    if (by_sequence && delivered != 0 &&
        static_cast<std::int64_t>(r.info.sequence) != last_seq + 1 + static_cast<std::int64_t>(r.info.lost_before)) {
      ++accounting;
    }
    last_seq = static_cast<std::int64_t>(r.info.sequence);
    lost += r.info.lost_before;
    ++delivered;
    if (pace_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pace_us));
  }
  std::printf(
      "delivered=%llu lost=%llu torn=%llu order=%llu accounting=%llu last_seq=%lld max_stall_us=%lld "
      "counter_lost=%llu\n",
      static_cast<unsigned long long>(delivered), static_cast<unsigned long long>(lost),
      static_cast<unsigned long long>(torn), static_cast<unsigned long long>(order),
      static_cast<unsigned long long>(accounting), static_cast<long long>(last_seq),
      static_cast<long long>(max_stall / 1000), static_cast<unsigned long long>(sub.lost()));
  return total != 0 && covered() < total ? 1 : 0;
}

}  // namespace

/// SHMBUS_TEST_DENY_MEMBARRIER=1: this process runs under a seccomp filter
/// that fails membarrier with EPERM, as a container's profile may
/// (libseccomp). Exits 1 when the filter cannot be loaded.
void deny_membarrier_if_asked() {
  const char* deny = std::getenv("SHMBUS_TEST_DENY_MEMBARRIER");  // NOLINT(concurrency-mt-unsafe): at start
  if (deny == nullptr || std::string_view{deny} != "1") return;
#ifdef SHMBUS_TEST_SECCOMP
  scmp_filter_ctx filter = ::seccomp_init(SCMP_ACT_ALLOW);
  const bool loaded = filter != nullptr &&
                      ::seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(membarrier), 0) == 0 &&
                      ::seccomp_load(filter) == 0;
  if (filter != nullptr) ::seccomp_release(filter);
  if (loaded) return;
#endif
  std::fprintf(stderr, "peer: cannot deny membarrier with a seccomp filter here\n");
  std::exit(1);
}

int main(int argc, char** argv) {
  deny_membarrier_if_asked();
  struct sigaction sa {};
  sa.sa_handler = on_term;
  ::sigaction(SIGTERM, &sa, nullptr);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 4) {
    std::fprintf(stderr, "usage: peer pub|sub|die-mid-write DOMAIN CHANNEL ...\n");
    return 2;
  }
  const std::string mode = argv[1];
  try {
    Context ctx{shmbus::test::peer_config(argv[2], "peer")};
    const std::string channel = argv[3];
    if (mode == "pub" && argc == 8) {
      return run_pub(ctx, channel, static_cast<std::uint32_t>(std::atoi(argv[4])), std::strtoull(argv[5], nullptr, 10),
                     std::strtoull(argv[6], nullptr, 10), std::atol(argv[7]));
    }
    if (mode == "grow-pub" && argc == 8) {
      return run_grow_pub(ctx, channel, static_cast<std::uint32_t>(std::atoi(argv[4])),
                          std::strtoull(argv[5], nullptr, 10), std::atol(argv[6]), argv[7]);
    }
    if (mode == "echo" && argc == 6) {
      return run_echo(ctx, channel, argv[4], std::strtoull(argv[5], nullptr, 10));
    }
    if (mode == "die-mid-write" && argc == 6) {
      return run_die_mid_write(ctx, channel, static_cast<std::uint32_t>(std::atoi(argv[4])),
                               std::strtoull(argv[5], nullptr, 10));
    }
    if (mode == "pub-hold" && argc == 7) {
      return run_pub_hold(ctx, channel, static_cast<std::uint32_t>(std::atoi(argv[4])),
                          std::strtoull(argv[5], nullptr, 10), std::strtoull(argv[6], nullptr, 10));
    }
    if (mode == "sub" && (argc == 6 || argc == 7)) {
      return run_sub(ctx, channel, std::strtoull(argv[4], nullptr, 10), std::atol(argv[5]),
                     argc == 7 ? std::atol(argv[6]) : 0);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "peer: %s\n", e.what());
    return e.exit_code();
  }
  std::fprintf(stderr, "peer: bad arguments\n");
  return 2;
}
