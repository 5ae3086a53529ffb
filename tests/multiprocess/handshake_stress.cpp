// The solo publisher's handshakes under stress, for real ARM hardware (and,
// for behaviour only, x86-64 and qemu-aarch64 in CI): docs/testing.md.
//
//   shmbus_handshake_stress [--rounds N] [--messages K] [--wakes W]
//                           [--revokes V] [--wake-bound-ms B]
//
// Phase 1, N rounds: two publisher processes construct publishers on a
// fresh channel at the same moment (both spin on one shared word), so one
// may take the grant while the other registers; each then checks that no
// grant is held while both are live, and publishes K messages carrying
// (publisher, sequence, round) and a checksum over them. This process
// subscribes: every message arrives once, intact, from that round.
//
// Phase 2, W rounds: wake latency across a grant and a revocation. This
// process sleeps in a wait with no help from a timeout (5 s: a miss fails);
// one publisher takes the grant and publishes once (the solo wake path),
// then the second registers (revoking it) and publishes once (the shared
// path after a revocation).
//
// Phase 3, V rounds: a revocation during an in-flight solo publish. The
// first publisher holds the grant; at one moment it publishes once, the
// second registers (revoking the grant while that publish may be in
// flight) and publishes nothing, and this process goes to sleep. Only the
// holder's wake check or the revoker's wake (end_solo) can wake it.
//
// Every wake of phases 2 and 3 must come within B ms of its publish
// (default 10, 100 under emulation: SHMBUS_TEST_EMULATED); a missed one
// shows as the 5 s wait timeout. Prints p50, p99 and the maximum of each.
//
// Exit 0 when everything held, 1 when anything did not (each failure is
// named on stderr), 2 for bad usage.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"

using namespace shmbus;
using namespace std::chrono_literals;

namespace {

/// What the three processes share (an anonymous shared mapping made before
/// the forks). Words only move forward, so a spinner compares with >=.
struct Shared {
  std::atomic<std::uint32_t> go;              ///< round the publishers may start
  std::atomic<std::uint32_t> built[2];        ///< round publisher i has constructed in
  std::atomic<std::uint32_t> done[2];         ///< round publisher i has published and closed in
  std::atomic<std::uint32_t> solo_with_two;   ///< grants seen while both were live
  std::atomic<std::uint32_t> failed;          ///< a publisher could not construct or publish
  std::atomic<std::uint32_t> wake_go;         ///< phase 2: round and step (round * 4 + step)
  std::atomic<std::uint32_t> wake_done;       ///< phase 2: the step last done
  std::atomic<std::uint32_t> revoke_go;       ///< phase 3: round and step (round * 4 + step)
  std::atomic<std::uint32_t> holding;         ///< phase 3: round the holder has constructed in
  std::atomic<std::uint32_t> revoke_done[2];  ///< phase 3: round publisher i has done its part in
  std::atomic<std::uint32_t> held_grant;      ///< phase 3: rounds whose holder held the grant
};

struct Payload {
  std::uint32_t publisher;
  std::uint32_t sequence;
  std::uint32_t round;
  std::uint32_t pad;
  std::uint64_t filler[4];
  std::uint64_t checksum;
};
static_assert(sizeof(Payload) == 56);

std::uint64_t checksum_of(const Payload& p) {
  // FNV-1a over every byte before the checksum.
  std::uint64_t h = 14695981039346656037ULL;
  const auto* b = reinterpret_cast<const unsigned char*>(&p);
  for (std::size_t i = 0; i < offsetof(Payload, checksum); ++i) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

Payload make_payload(std::uint32_t publisher, std::uint32_t sequence, std::uint32_t round) {
  Payload p{publisher, sequence, round, 0, {}, 0};
  for (std::uint64_t i = 0; i < 4; ++i) p.filler[i] = (std::uint64_t{round} << 32 | sequence) * (i + 3) + publisher;
  p.checksum = checksum_of(p);
  return p;
}

std::string channel_of(const char* phase, std::uint32_t round) {
  return std::string("/stress/") + phase + "_" + std::to_string(round);
}

/// Phase 3's one channel: its publishers close after each round, so the
/// holder of the next is alone again (a channel per round would fill the
/// domain's registry, which keeps a record per channel made).
const std::string kRevokeChannel = "/stress/revoke";

void spin_until(const std::atomic<std::uint32_t>& word, std::uint32_t at_least) {
  for (std::uint32_t i = 0; word.load(std::memory_order_acquire) < at_least; ++i) {
    if (i > 1000) std::this_thread::yield();
  }
}

Config config_of(const std::string& domain, const char* node) {
  Config c;
  c.domain = domain;
  c.node = node;
  // A channel per round of phases 1 and 2, each removed after its round:
  // the registry keeps a record per channel made (4096 by default).
  c.registry_capacity = 1U << 15;
  c.defaults.capacity = 256;
  c.defaults.max_message_size = sizeof(Payload);
  // A publisher preempted inside a publish (a loaded machine, an emulator)
  // is waited for, not fenced off: the handshakes under test are the
  // running ones.
  c.defaults.stall_timeout = std::chrono::seconds(10);
  return c;
}

/// Publisher `me` of phase 1, then phase 2; returns its exit code.
/// Publisher `me` of phase 3: the holder (0) publishes once as the
/// revoker (1) registers.
void run_revocations(Shared& s, std::uint32_t me, Context& ctx, const std::string& domain, std::uint32_t revokes) {
  for (std::uint32_t r = 1; r <= revokes; ++r) {
    std::optional<Publisher> pub;
    spin_until(s.revoke_go, r * 4 + 1);
    if (me == 0) {
      pub.emplace(kRevokeChannel, TypeInfo::bytes(), ctx);
      if (introspect::ChannelReader(domain, kRevokeChannel).view().solo) s.held_grant.fetch_add(1);
      s.holding.store(r, std::memory_order_release);
    }
    spin_until(s.revoke_go, r * 4 + 2);
    if (me == 0) {
      const Payload p = make_payload(me, 0, r);
      if (pub->publish(std::as_bytes(std::span(&p, 1))) != PublishResult::kOk) s.failed.fetch_add(1);
    } else {
      pub.emplace(kRevokeChannel, TypeInfo::bytes(), ctx);
      if (introspect::ChannelReader(domain, kRevokeChannel).view().solo) s.solo_with_two.fetch_add(1);
    }
    s.revoke_done[me].store(r, std::memory_order_release);
    spin_until(s.revoke_go, r * 4 + 3);  // the round is over: close
  }
}

int run_publisher(Shared& s, std::uint32_t me, const std::string& domain, std::uint32_t rounds, std::uint32_t messages,
                  std::uint32_t wakes, std::uint32_t revokes) {
  try {
    Context ctx(config_of(domain, me == 0 ? "stress_a" : "stress_b"));
    for (std::uint32_t r = 1; r <= rounds; ++r) {
      spin_until(s.go, r);
      {
        Publisher pub(channel_of("race", r), TypeInfo::bytes(), ctx);
        s.built[me].store(r, std::memory_order_release);
        spin_until(s.built[1 - me], r);
        if (introspect::ChannelReader(domain, channel_of("race", r)).view().solo) s.solo_with_two.fetch_add(1);
        for (std::uint32_t k = 0; k < messages; ++k) {
          const Payload p = make_payload(me, k, r);
          if (pub.publish(std::as_bytes(std::span(&p, 1))) != PublishResult::kOk) s.failed.fetch_add(1);
        }
        // Both still live until both have published: no grant may appear.
        s.done[me].store(r * 2 - 1, std::memory_order_release);
        spin_until(s.done[1 - me], r * 2 - 1);
        if (introspect::ChannelReader(domain, channel_of("race", r)).view().solo) s.solo_with_two.fetch_add(1);
      }
      s.done[me].store(r * 2, std::memory_order_release);
    }
    // Phase 2: step 1 is publisher 0's (grant, one publish), step 2
    // publisher 1's (registration, which revokes, and one publish).
    for (std::uint32_t r = 1; r <= wakes; ++r) {
      const std::uint32_t step = r * 4 + 1 + me;
      spin_until(s.wake_go, step);
      std::optional<Publisher> pub;
      pub.emplace(channel_of("wake", r), TypeInfo::bytes(), ctx);
      const Payload p = make_payload(me, 0, r);
      if (pub->publish(std::as_bytes(std::span(&p, 1))) != PublishResult::kOk) s.failed.fetch_add(1);
      s.wake_done.store(step, std::memory_order_release);
      spin_until(s.wake_go, r * 4 + 3);  // the round is over: close
    }
    run_revocations(s, me, ctx, domain, revokes);
  } catch (const Error& e) {
    std::fprintf(stderr, "handshake_stress: publisher %u: %s\n", me, e.what());
    s.failed.fetch_add(1);
    return 1;
  }
  return 0;
}

std::int64_t percentile(std::vector<std::int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t rounds = 10000, messages = 32, wakes = 1000, revokes = 1000;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the forks
  std::int64_t bound_ms = std::getenv("SHMBUS_TEST_EMULATED") != nullptr ? 100 : 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    const auto value = static_cast<std::uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (opt == "--rounds") {
      rounds = value;
    } else if (opt == "--messages") {
      messages = std::min<std::uint32_t>(value, 100);
    } else if (opt == "--wakes") {
      wakes = value;
    } else if (opt == "--revokes") {
      revokes = value;
    } else if (opt == "--wake-bound-ms") {
      bound_ms = value;
    } else {
      std::fprintf(stderr,
                   "handshake_stress: unknown option %s; use --rounds N --messages K --wakes W --revokes V "
                   "--wake-bound-ms B\n",
                   opt.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "handshake_stress: %s needs a value\n", argv[argc - 1]);
    return 2;
  }
  const std::string domain = "stress_" + std::to_string(::getpid());
  void* mem = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("handshake_stress: mmap");
    return 1;
  }
  auto& s = *new (mem) Shared{};
  pid_t kids[2] = {0, 0};
  for (std::uint32_t me = 0; me < 2; ++me) {
    kids[me] = ::fork();
    if (kids[me] == 0) ::_exit(run_publisher(s, me, domain, rounds, messages, wakes, revokes));
  }
  int failures = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 20) std::fprintf(stderr, "handshake_stress: %s\n", what.c_str());
  };
  std::uint64_t received = 0;
  std::vector<std::int64_t> grant_wake, revoke_wake, in_flight_wake;
  const std::int64_t bound_ns = bound_ms * 1'000'000;
  // A wake later than the bound after its publish: a missed wake (the 5 s
  // timeout ended the wait), or a machine too slow for the bound.
  auto check_wake = [&](const char* phase, std::uint32_t r, std::int64_t latency) {
    if (latency > bound_ns) {
      fail(std::string(phase) + " round " + std::to_string(r) + ": woken " + std::to_string(latency / 1000) +
           " us after the publish, past the bound of " + std::to_string(bound_ms) + " ms");
    }
  };
  try {
    Context ctx(config_of(domain, "stress_sub"));
    std::vector<std::byte> buf(sizeof(Payload));
    auto check = [&](const TakeResult& t, std::uint32_t round,
                     std::set<std::pair<std::uint32_t, std::uint32_t>>& seen) {
      Payload p{};
      if (t.info.size != sizeof(Payload)) return fail("round " + std::to_string(round) + ": a message of wrong size");
      std::memcpy(&p, buf.data(), sizeof p);
      if (p.checksum != checksum_of(p)) return fail("round " + std::to_string(round) + ": a mixed message");
      if (p.round != round)
        return fail("round " + std::to_string(round) + ": a message of round " + std::to_string(p.round));
      if (!seen.emplace(p.publisher, p.sequence).second) {
        return fail("round " + std::to_string(round) + ": publisher " + std::to_string(p.publisher) + "'s message " +
                    std::to_string(p.sequence) + " twice");
      }
      if (t.info.lost_before != 0) fail("round " + std::to_string(round) + ": lost messages");
    };
    // Phase 1.
    for (std::uint32_t r = 1; r <= rounds && failures == 0; ++r) {
      const std::string channel = channel_of("race", r);
      std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
      {
        Subscriber sub(channel, TypeInfo::bytes(), ctx);
        s.go.store(r, std::memory_order_release);
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (seen.size() < 2 * messages && std::chrono::steady_clock::now() < deadline) {
          const TakeResult t = sub.take(buf);
          if (t.ok()) {
            check(t, r, seen);
            ++received;
          } else {
            sub.wait(10ms);
          }
        }
        if (seen.size() != 2 * messages)
          fail("round " + std::to_string(r) + ": " + std::to_string(seen.size()) + " of " +
               std::to_string(2 * messages) + " messages arrived");
        spin_until(s.done[0], r * 2);
        spin_until(s.done[1], r * 2);
        const TakeResult extra = sub.take(buf);
        if (extra.ok()) fail("round " + std::to_string(r) + ": a message more than was published");
      }
      if (!introspect::remove_unused_channel(domain, channel)) fail("round " + std::to_string(r) + ": channel in use");
    }
    // Phase 2.
    for (std::uint32_t r = 1; r <= wakes && failures == 0; ++r) {
      const std::string channel = channel_of("wake", r);
      {
        Subscriber sub(channel, TypeInfo::bytes(), ctx);
        for (std::uint32_t step = 1; step <= 2; ++step) {
          std::int64_t woke = 0;
          bool pending = false;
          std::thread sleeper([&] {
            pending = sub.wait(5s);
            woke = stamp_now_ns();
          });
          // The publisher goes once this process sleeps (or after 1 s: then
          // the wake is measured from a publish that found it awake).
          const auto until = std::chrono::steady_clock::now() + 1s;
          while (introspect::ChannelReader(domain, channel).view().sleepers == 0 &&
                 std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
          }
          s.wake_go.store(r * 4 + step, std::memory_order_release);
          sleeper.join();
          const TakeResult t = sub.take(buf);
          if (!pending || !t.ok()) {
            fail("wake round " + std::to_string(r) + " step " + std::to_string(step) + ": the sleeper was not woken");
            break;
          }
          (step == 1 ? grant_wake : revoke_wake).push_back(woke - t.info.publish_time_ns);
          check_wake("wake", r, woke - t.info.publish_time_ns);
          spin_until(s.wake_done, r * 4 + step);
        }
        s.wake_go.store(r * 4 + 3, std::memory_order_release);
      }
      // Both publishers close as the round ends; the channel goes when they have.
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!introspect::remove_unused_channel(domain, channel) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(1ms);
      }
    }
    // Phase 3.
    Subscriber revoked_sub(kRevokeChannel, TypeInfo::bytes(), ctx);
    for (std::uint32_t r = 1; r <= revokes && failures == 0; ++r) {
      Subscriber& sub = revoked_sub;
      {
        s.revoke_go.store(r * 4 + 1, std::memory_order_release);
        spin_until(s.holding, r);
        std::int64_t woke = 0;
        bool pending = false;
        std::thread sleeper([&] {
          spin_until(s.revoke_go, r * 4 + 2);
          pending = sub.wait(5s);
          woke = stamp_now_ns();
        });
        s.revoke_go.store(r * 4 + 2, std::memory_order_release);
        sleeper.join();
        const TakeResult t = sub.take(buf);
        if (!pending || !t.ok()) {
          fail("revoke round " + std::to_string(r) + ": the sleeper was not woken");
        } else {
          std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
          check(t, r, seen);
          in_flight_wake.push_back(woke - t.info.publish_time_ns);
          check_wake("revoke", r, woke - t.info.publish_time_ns);
        }
        spin_until(s.revoke_done[0], r);
        spin_until(s.revoke_done[1], r);
        if (sub.take(buf).ok()) fail("revoke round " + std::to_string(r) + ": a message more than was published");
        s.revoke_go.store(r * 4 + 3, std::memory_order_release);
      }
      // Both publishers close before the next round's holder constructs.
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (introspect::ChannelReader(domain, kRevokeChannel).view().publishers.size() != 0 &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
  } catch (const Error& e) {
    fail(e.what());
  }
  if (failures != 0) {
    // Let the publishers run out of rounds.
    s.go.store(UINT32_MAX);
    s.done[0].store(UINT32_MAX);
    s.done[1].store(UINT32_MAX);
    s.wake_go.store(UINT32_MAX);
    s.revoke_go.store(UINT32_MAX);
    s.holding.store(UINT32_MAX);
  }
  for (const pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("a publisher process failed");
  }
  if (s.solo_with_two.load() != 0)
    fail(std::to_string(s.solo_with_two.load()) + " grants seen while two publishers were live");
  if (s.failed.load() != 0) fail(std::to_string(s.failed.load()) + " publishes failed");
  introspect::clean_domain(domain, false);
  const auto us = [](const std::vector<std::int64_t>& v, double q) {
    return static_cast<double>(percentile(v, q)) / 1e3;
  };
  std::printf(
      "rounds=%u messages=%llu wakes=%zu grant_wake_p50_us=%.1f grant_wake_p99_us=%.1f grant_wake_max_us=%.1f "
      "revoke_wake_p50_us=%.1f revoke_wake_p99_us=%.1f revoke_wake_max_us=%.1f revokes=%zu held_grant=%u "
      "in_flight_wake_p50_us=%.1f in_flight_wake_p99_us=%.1f in_flight_wake_max_us=%.1f wake_bound_ms=%lld "
      "failures=%d\n",
      rounds, static_cast<unsigned long long>(received), grant_wake.size(), us(grant_wake, 0.5), us(grant_wake, 0.99),
      us(grant_wake, 1.0), us(revoke_wake, 0.5), us(revoke_wake, 0.99), us(revoke_wake, 1.0), in_flight_wake.size(),
      s.held_grant.load(), us(in_flight_wake, 0.5), us(in_flight_wake, 0.99), us(in_flight_wake, 1.0),
      static_cast<long long>(bound_ms), failures);
  return failures == 0 ? 0 : 1;
}
