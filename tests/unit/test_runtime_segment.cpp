#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/cpu_time.hpp"
#include "support/sanitizers.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using shmbus::test::TestDomain;

namespace {

/// Rewrites bytes of a segment as a corrupting process would.
void poke(const std::string& object, std::size_t offset, const void* bytes, std::size_t n) {
  const int fd = ::shm_open(object.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
  ::close(fd);
}

void resize(const std::string& object, off_t size) {
  const int fd = ::shm_open(object.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, size), 0);
  ::close(fd);
}

std::string open_error(TestDomain& d, const std::string& channel) {
  try {
    Context other{[&] {
      Config c;
      c.domain = d.domain();
      return c;
    }()};
    Subscriber sub(channel, std::nullopt, other);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kLayoutMismatch);
    EXPECT_EQ(e.exit_code(), 1);
    return e.what();
  }
  return "no error";
}

class SegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    { Publisher make("/seg", TypeInfo::bytes(), domain_.context()); }
    object_ = channel_object_name(domain_.domain(), "/seg");
  }
  TestDomain domain_{Config{}, "seg"};
  std::string object_;
};

}  // namespace

TEST_F(SegmentTest, WrongMagicIsRefusedWithTheFix) {
  const std::uint64_t junk = 0xdeadbeefULL;
  poke(object_, 0, &junk, sizeof(junk));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("/dev/shm/" + object_ + " has magic 0x00000000deadbeef, not a shmbus segment"), std::string::npos)
      << e;
  EXPECT_NE(e.find("shmtool clean"), std::string::npos) << e;
}

TEST_F(SegmentTest, WrongVersionIsRefused) {
  const std::uint32_t version = 99;
  poke(object_, 8, &version, sizeof(version));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has layout version 99, this build uses 8"), std::string::npos) << e;
}

TEST_F(SegmentTest, WrongLayoutHashIsRefused) {
  const std::uint64_t hash = 42;
  poke(object_, 16, &hash, sizeof(hash));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has layout hash 000000000000002a"), std::string::npos) << e;
}

TEST_F(SegmentTest, TruncatedSegmentIsRefused) {
  resize(object_, 4096);
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("is 4096 bytes but its header says"), std::string::npos) << e;
}

TEST_F(SegmentTest, SegmentShorterThanAHeaderIsRefused) {
  resize(object_, 10);
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("is 10 bytes, smaller than a segment header (truncated)"), std::string::npos) << e;
}

TEST_F(SegmentTest, InconsistentGeometryIsRefusedBeforeAnyUse) {
  const std::uint32_t capacity = 3;  // not a power of two
  poke(object_, 64 + 128 + 96 + 8, &capacity, sizeof(capacity));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has capacity 3 (a power of two up to 1048576 expected) (corrupt)"), std::string::npos) << e;
}

TEST_F(SegmentTest, HalfInitialisedByADeadCreatorIsRefused) {
  // init_state back to "initialising" and a creator pid that cannot exist.
  const std::uint32_t state = 0;
  const std::uint32_t pid = 0x3fffff;
  poke(object_, 32, &state, sizeof(state));
  poke(object_, 36, &pid, sizeof(pid));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("was left half-initialised by pid 4194303"), std::string::npos) << e;
}

TEST_F(SegmentTest, ForeignRegistryIsRefused) {
  const std::uint64_t junk = 1;
  poke(registry_object_name(domain_.domain()), 0, &junk, sizeof(junk));
  try {
    introspect::DomainView dv(domain_.domain());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kLayoutMismatch);
  }
}

namespace {
// Byte offsets of ChannelHeader fields (after the 64-byte SegmentHeader, the
// 128-byte name and the 96-byte type name and its hash).
constexpr std::size_t kNameAt = 64;
constexpr std::size_t kMaxMessageSizeAt = 300;
constexpr std::size_t kSubscribersOffsetAt = 336;
constexpr std::size_t kTimeListOffsetAt = 344;
constexpr std::size_t kSchemaSizeAt = 324;
constexpr std::size_t kSchemaOffsetAt = 360;
constexpr std::size_t kCapacityAt = 296;
constexpr std::size_t kSlotStrideAt = 304;
constexpr std::size_t kSlotsOffsetAt = 352;

std::uint64_t peek64(const std::string& object, std::size_t offset) {
  std::uint64_t v = 0;
  const int fd = ::shm_open(object.c_str(), O_RDONLY, 0);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, &v, sizeof(v), static_cast<off_t>(offset)), 8);
  ::close(fd);
  return v;
}
}  // namespace

// Before: each of these made the opener (and shmtool, shmbusd) address
// outside the mapping and die with SIGSEGV; now each is one refusal.
TEST_F(SegmentTest, MaxMessageSizeOfAllOnesIsRefusedNotTruncated) {
  const std::uint32_t huge = 0xFFFFFFFFU;  // the stride computation truncated it to 32 bits
  poke(object_, kMaxMessageSizeAt, &huge, sizeof(huge));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has max_message_size 4294967295"), std::string::npos) << e;
}

TEST_F(SegmentTest, OffsetOutsideTheSegmentIsRefused) {
  const std::uint64_t far = 1ULL << 40;
  poke(object_, kSubscribersOffsetAt, &far, sizeof(far));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has its subscriber table at offset 1099511627776"), std::string::npos) << e;
}

TEST_F(SegmentTest, OffsetPlusLengthThatWrapsIn64BitsIsRefused) {
  const std::uint64_t offset = ~0ULL - 15;  // + schema_size wraps to a small number
  const std::uint32_t size = 64;
  poke(object_, kSchemaOffsetAt, &offset, sizeof(offset));
  poke(object_, kSchemaSizeAt, &size, sizeof(size));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has its schema at offset 18446744073709551600"), std::string::npos) << e;
}

TEST_F(SegmentTest, UnalignedOffsetIsRefused) {
  const std::uint64_t offset = peek64(object_, kTimeListOffsetAt) + 8;
  poke(object_, kTimeListOffsetAt, &offset, sizeof(offset));
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has its time list unaligned"), std::string::npos) << e;
}

// Who created a channel and where its sizes came from are text another
// process wrote: read bounded (no NUL needed) and escaped before they
// reach a message or `shmtool info`.
TEST_F(SegmentTest, ACreatorsTextIsReadBoundedAndEscaped) {
  constexpr std::size_t kCreatorProgramAt = 448;  // after subscribers_used
  constexpr std::size_t kSizesFromAt = kCreatorProgramAt + 32;
  const std::string escapes(32, '\x1b');
  const std::string xs(224, 'x');
  poke(object_, kCreatorProgramAt, escapes.data(), escapes.size());
  poke(object_, kSizesFromAt, xs.data(), xs.size());
  const introspect::ChannelView v = introspect::ChannelReader(domain_.domain(), "/seg").view();
  EXPECT_EQ(v.sizes_from, xs);
  EXPECT_EQ(v.creator_program.find('\x1b'), std::string::npos) << v.creator_program;
  EXPECT_EQ(v.creator_program.substr(0, 4), "\\x1b") << v.creator_program;
  EXPECT_EQ(v.creator_program.size(), 32 * 4U);
}

TEST_F(SegmentTest, UnterminatedNameIsRefused) {
  const std::string xs(128, 'x');
  poke(object_, kNameAt, xs.data(), xs.size());
  const std::string e = open_error(domain_, "/seg");
  EXPECT_NE(e.find("has an unterminated name"), std::string::npos) << e;
}

TEST_F(SegmentTest, CorruptRegistryHeaderIsRefused) {
  const std::string registry = registry_object_name(domain_.domain());
  for (std::uint32_t capacity : {3U, 1U << 30, 0U}) {
    poke(registry, 64, &capacity, sizeof(capacity));
    try {
      introspect::DomainView dv(domain_.domain());
      ADD_FAILURE() << "capacity " << capacity << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kLayoutMismatch);
      EXPECT_NE(std::string{e.what()}.find("inconsistent registry header (capacity " + std::to_string(capacity)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(SegmentTest, UnterminatedRegistryNameIsReadWithinItsField) {
  // Fill every byte of every record's name and type: a reader must stay
  // inside the record (before: strlen ran past the mapping's end).
  const std::string registry = registry_object_name(domain_.domain());
  const std::string xs(128 + 96, 'x');
  const std::uint32_t capacity = 4096;
  for (std::uint32_t i = 0; i < capacity; ++i) {
    const std::size_t record = 128 + std::size_t{i} * 256;
    const std::uint64_t live = 2;
    poke(registry, record, &live, sizeof(live));
    poke(registry, record + 16, xs.data(), xs.size());
  }
  const auto names = introspect::DomainView(domain_.domain()).channel_names();
  ASSERT_EQ(names.size(), capacity);
  EXPECT_EQ(names.front(), std::string(128, 'x'));
}

// Found by the segment fuzzer: a record left "claimed" by a live process
// made every later channel creation wait forever. Now refused after 1 s.
TEST_F(SegmentTest, RecordClaimedForeverByALiveProcessIsRefusedNotWaitedOn) {
  const std::string registry = registry_object_name(domain_.domain());
  const std::uint64_t claimed_by_me = (static_cast<std::uint64_t>(::getpid()) << 2) | 1U;  // start time 0: any
  for (std::uint32_t i = 0; i < 4096; ++i) poke(registry, 128 + std::size_t{i} * 256, &claimed_by_me, 8);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Publisher p("/new", TypeInfo::bytes(), domain_.context());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kLayoutMismatch);
    EXPECT_NE(std::string{e.what()}.find("has been claimed by pid " + std::to_string(::getpid()) + " for over 1 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(SegmentTest, HalfInitialisedByADeadCreatorIsRecreatedByTheNextCreator) {
  const std::uint32_t state = 0;
  const std::uint32_t pid = 0x3fffff;
  poke(object_, 32, &state, sizeof(state));
  poke(object_, 36, &pid, sizeof(pid));
  // An opener that would create the channel (typed) recreates it at once;
  // before, every opener was refused until a manual `shmtool clean`.
  Publisher pub("/seg", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/seg", std::nullopt, domain_.context());
  std::vector<std::byte> msg(16, std::byte{7}), buf(16);
  ASSERT_EQ(pub.publish(msg), PublishResult::kOk);
  EXPECT_TRUE(sub.take(buf).ok());
}

namespace {
/// Opens `channel` of `d` untyped with `access`; the error text or "".
std::string open_with(TestDomain& d, const std::string& channel, const SegmentAccess& access, Errc* code) {
  try {
    introspect::ChannelReader reader(d.domain(), channel, false, access);
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  }
  return "";
}
}  // namespace

TEST_F(SegmentTest, SegmentOfAnotherUserIsRefusedNamingItsOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a segment to another user";
  const std::string path = "/dev/shm/" + object_;
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  Errc code{};
  const std::string e = open_with(domain_, "/seg", SegmentAccess{}, &code);
  EXPECT_EQ(code, Errc::kPermission);
  EXPECT_NE(e.find("refusing shared-memory segment " + path + ": owner"), std::string::npos) << e;
  EXPECT_NE(e.find("(uid 65534)"), std::string::npos) << e;
  EXPECT_NE(e.find("set `group` in the configuration"), std::string::npos) << e;
  // A configured group accepts it explicitly.
  const group* g = ::getgrgid(65534);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(open_with(domain_, "/seg", SegmentAccess{0660, g->gr_name}, &code), "");
  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
}

TEST_F(SegmentTest, SegmentWiderThanTheConfiguredModeIsRefused) {
  const std::string path = "/dev/shm/" + object_;
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  Errc code{};
  const std::string e = open_with(domain_, "/seg", SegmentAccess{0660, ""}, &code);
  EXPECT_EQ(code, Errc::kPermission);
  EXPECT_NE(e.find("mode 0666"), std::string::npos) << e;
  EXPECT_NE(e.find("at most mode 0660"), std::string::npos) << e;
  EXPECT_EQ(open_with(domain_, "/seg", SegmentAccess{0666, ""}, &code), "");
  ASSERT_EQ(::chmod(path.c_str(), 0660), 0);  // else the domain's cleanup keeps it, as it must
}

TEST(RegistryTest, ProcessReopensARegistryRemovedUnderIt) {
  TestDomain d{Config{}, "reopen"};
  { Publisher first("/first", TypeInfo::bytes(), d.context()); }
  // `shmtool clean` removes the whole domain while this process lives on.
  introspect::clean_domain(d.domain(), false);
  Publisher later("/later", TypeInfo::bytes(), d.context());
  // Before: the process kept its mapping of the removed registry, so the
  // channel was listed where no monitor looks.
  EXPECT_EQ(introspect::DomainView(d.domain()).channel_names(), std::vector<std::string>{"/later"});
}

// A Config made in code is not checked by ConfigReader: a registry capacity
// that is not a power of two is refused before the registry exists (it
// used to be created, then refused as corrupt by every opener).
TEST(RegistryTest, ACapacityThatIsNotAPowerOfTwoIsRefusedBeforeTheRegistryExists) {
  Config c;
  c.registry_capacity = 51024;
  TestDomain d{c, "capacity"};
  try {
    Publisher p("/x", TypeInfo::bytes(), d.context());
    FAIL() << "a registry of 51024 records was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_NE(std::string(e.what()).find("registry_capacity 51024 is not a power of two"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(::access(("/dev/shm/" + registry_object_name(d.domain())).c_str(), F_OK), 0);
}

TEST(CleanTest, RemovesUnusedSegmentsAndKeepsLiveOnes) {
  TestDomain d{Config{}, "clean"};
  auto idle = std::make_unique<Publisher>("/idle", TypeInfo::bytes(), d.context());
  Publisher live("/live", TypeInfo::bytes(), d.context());
  idle.reset();
  const introspect::CleanReport dry = introspect::clean_domain(d.domain(), true);
  EXPECT_EQ(dry.removed, std::vector<std::string>{channel_object_name(d.domain(), "/idle")});
  EXPECT_EQ(::access(("/dev/shm/" + channel_object_name(d.domain(), "/idle")).c_str(), F_OK), 0)
      << "dry run removes nothing";
  const introspect::CleanReport real = introspect::clean_domain(d.domain(), false);
  EXPECT_EQ(real.removed, dry.removed);
  EXPECT_EQ(::access(("/dev/shm/" + channel_object_name(d.domain(), "/idle")).c_str(), F_OK), -1);
  EXPECT_EQ(::access(("/dev/shm/" + channel_object_name(d.domain(), "/live")).c_str(), F_OK), 0);
  EXPECT_EQ(introspect::DomainView(d.domain()).channel_names(), std::vector<std::string>{"/live"});
}

TEST(CleanTest, DomainWithNoLiveProcessIsRemovedEntirely) {
  TestDomain d{Config{}, "clean"};
  { Publisher p("/a", TypeInfo::bytes(), d.context()); }
  const introspect::CleanReport r = introspect::clean_domain(d.domain(), false);
  EXPECT_EQ(r.removed.size(), 2U);
  EXPECT_EQ(::access(("/dev/shm/" + registry_object_name(d.domain())).c_str(), F_OK), -1);
  EXPECT_THROW(introspect::DomainView{d.domain()}, Error);
}

TEST_F(SegmentTest, EveryPageIsAllocatedAtCreation) {
  // posix_fallocate at creation: a full /dev/shm fails then, not with a
  // SIGBUS at a later publish into a page tmpfs cannot back.
  struct stat st {};
  ASSERT_EQ(::stat(("/dev/shm/" + object_).c_str(), &st), 0);
  EXPECT_GE(static_cast<std::int64_t>(st.st_blocks) * 512, static_cast<std::int64_t>(st.st_size))
      << "a ring left sparse is allocated page by page while publishing";
}

TEST(SegmentMapping, AFirstPassThroughTheRingTakesNoPageFault) {
#if defined(SHMBUS_TEST_SANITIZED)
  GTEST_SKIP() << "a sanitizer's shadow memory faults in on first use of the ring's addresses";
#endif
  if (const char* e = test::emulated()) GTEST_SKIP() << "page faults under " << e << " are the emulator's";
  Config c;
  c.defaults.capacity = 64;
  c.defaults.max_message_size = 64 * 1024;  // 4 MiB of slots: 1024 pages
  TestDomain d{c, "fault"};
  Publisher pub("/fault", TypeInfo::bytes(), d.context());
  Subscriber sub("/fault", std::nullopt, d.context());
  std::vector<std::byte> payload(c.defaults.max_message_size, std::byte{1});
  std::vector<std::byte> out(c.defaults.max_message_size);
  EXPECT_EQ(pub.publish(payload),
            PublishResult::kOk);  // first calls of everything on the path (lazy binding, the stack)
  ASSERT_TRUE(sub.take(out).ok());
  rusage before{};
  ::getrusage(RUSAGE_THREAD, &before);
  for (std::uint32_t i = 1; i < c.defaults.capacity; ++i) {
    EXPECT_EQ(pub.publish(payload), PublishResult::kOk);
    ASSERT_TRUE(sub.take(out).ok());
  }
  rusage after{};
  ::getrusage(RUSAGE_THREAD, &after);
  // Without MAP_POPULATE each of the ~1000 pages of slots faults once.
  EXPECT_LE(after.ru_minflt - before.ru_minflt, 8) << "page faults on a first pass through the ring";
}

namespace {

/// Of each of this process's mappings of `path`: its size and its resident
/// size, KiB.
struct MappingKib {
  long size = 0;
  long rss = 0;
};
std::vector<MappingKib> mappings_kib(const std::string& path) {
  std::ifstream in("/proc/self/smaps");
  std::vector<MappingKib> out;
  std::string line;
  bool ours = false;
  while (std::getline(in, line)) {
    // A mapping's first line: "start-end perms offset dev inode  path".
    if (line.find('-') < line.find(' ') && line.find(' ') != std::string::npos &&
        std::isxdigit(static_cast<unsigned char>(line[0])) != 0) {
      ours = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
      if (ours) out.emplace_back();
    } else if (ours && line.rfind("Size:", 0) == 0) {
      out.back().size = std::stol(line.substr(5));
    } else if (ours && line.rfind("Rss:", 0) == 0) {
      out.back().rss = std::stol(line.substr(4));
    }
  }
  return out;
}

}  // namespace

// Tools and the daemon map a channel without MAP_POPULATE, and only its
// front: header, endpoint tables and time list. Their memory holds the
// header, the endpoint entries ever used and the time list, never the ring
// (of 4 MiB here), not even through the kernel's fault-around, which maps
// a faulting page's resident neighbours (up to 64 KiB) within the mapping.
TEST(SegmentMapping, AnObserverMapsOnlyTheFrontAndKeepsOnlyWhatItReadsResident) {
  if (const char* e = test::emulated()) GTEST_SKIP() << "residency under " << e << " is the emulator's";
  Config c;
  c.defaults.capacity = 64;
  c.defaults.max_message_size = 64 * 1024;
  TestDomain d{c, "resident"};
  const TypeInfo type{"test/Resident", 0x5e51de47, "uint8[] data\n"};
  Publisher pub("/resident", type, d.context());
  std::optional<Subscriber> first(std::in_place, "/resident", std::nullopt, d.context());
  Subscriber second("/resident", std::nullopt, d.context());
  first.reset();  // the live subscriber is entry 1: entries past the first are read
  std::vector<std::byte> payload(1000, std::byte{1});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(pub.publish(payload), PublishResult::kOk);

  const introspect::ChannelReader reader(d.domain(), "/resident");
  const introspect::ChannelView v = reader.view();
  EXPECT_EQ(v.publishers.size(), 1U);
  ASSERT_EQ(v.subscribers.size(), 1U);
  EXPECT_EQ(v.subscribers[0].messages, 0U);
  EXPECT_EQ(v.schema, type.schema) << "the schema, after the ring, is read before the ring is unmapped";
  introspect::TimeListCursor cursor;
  std::vector<std::int64_t> stamps;
  reader.read_stamps_since(cursor, stamps);
  EXPECT_EQ(stamps.size(), 100U);

  const std::string path = "/dev/shm/" + channel_object_name(d.domain(), "/resident");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const long size_kib = static_cast<long>(st.st_size / 1024);
  ASSERT_GT(size_kib, 4096);
  // The endpoints' mapping (one per context) is whole (MAP_POPULATE); the
  // reader's, the smallest, is the front: the header (4.9 KiB), 32 + 64
  // endpoint entries of 192 bytes (18 KiB) and 1,024 stamps (8 KiB).
  std::vector<MappingKib> maps = mappings_kib(path);
  ASSERT_EQ(maps.size(), 2U);
  std::sort(maps.begin(), maps.end(), [](const MappingKib& a, const MappingKib& b) { return a.size < b.size; });
  EXPECT_GE(maps[1].size, size_kib) << "the endpoints map the whole segment";
  EXPECT_GE(maps[1].rss, size_kib - 4) << "the endpoints' mapping is populated";
  EXPECT_EQ(maps[0].size, 32) << "the observer's mapping of a " << size_kib << " KiB segment";
  EXPECT_LE(maps[0].rss, maps[0].size);
}

// A test's domain holds its pid; a dead process that had the same pid may
// have left segments under the same name (an older layout, say). They are
// removed before the test uses the name, so they cannot fail it.
TEST(TestDomainTest, LeftOversOfAnEarlierProcessWithOurPidAreRemovedFirst) {
  const std::string probe = shmbus::test::unique_domain("stale");
  const std::string next =
      probe.substr(0, probe.rfind('_') + 1) + std::to_string(std::stoi(probe.substr(probe.rfind('_') + 1)) + 1);
  const std::string object = "/shmbus." + next + ".registry";
  const int fd = ::shm_open(object.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  const std::vector<char> junk(4096, 'x');
  ASSERT_EQ(::write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  ::close(fd);
  TestDomain d({}, "stale");
  ASSERT_EQ(d.domain(), next);
  EXPECT_NO_THROW(Publisher("/fresh", TypeInfo::bytes(), d.context()));
}

// A process with write access to a segment may write any slot state. A
// state naming a sequence far beyond the write cursor, in every slot, made
// each take skip one sequence per pass: about 2^51 passes inside a noexcept
// take. Each take is now bounded by the ring's geometry.
TEST_F(SegmentTest, SlotStatesNamingHugeSequencesCostATakeAtMostOnePassOverTheRing) {
  PublisherOptions po;
  po.capacity = 8;
  Publisher pub("/huge", TypeInfo::bytes(), domain_.context(), po);
  Subscriber sub("/huge", std::nullopt, domain_.context());
  const std::array<std::byte, 8> payload{};
  ASSERT_EQ(pub.publish(payload), PublishResult::kOk);
  const std::string object = channel_object_name(domain_.domain(), "/huge");
  const std::uint64_t slots = peek64(object, kSlotsOffsetAt);
  std::uint32_t stride = 0;
  std::uint32_t capacity = 0;
  {
    const int fd = ::shm_open(object.c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pread(fd, &stride, sizeof(stride), kSlotStrideAt), 4);
    ASSERT_EQ(::pread(fd, &capacity, sizeof(capacity), kCapacityAt), 4);
    ::close(fd);
  }
  ASSERT_EQ(capacity, 8U);
  // committed_state(2^50): the sequence in the state's upper 51 bits.
  const std::uint64_t huge = ((1ULL << 50) + 1) << 13;
  for (std::uint32_t i = 0; i < capacity; ++i) poke(object, slots + std::uint64_t{i} * stride, &huge, sizeof(huge));
  std::array<std::byte, 64> buffer{};
  ::alarm(30);  // the unbounded loop this guards against: a failure, not a hang
  for (int round = 0; round < 3; ++round) {
    // CPU time, not wall time: a busy machine's preemption is not work.
    const double start = test::thread_cpu_seconds();
    const TakeResult r = sub.take(buffer);
    const double took = test::thread_cpu_seconds() - start;
    EXPECT_EQ(r.status, TakeStatus::kNoData);
    EXPECT_LT(took, test::emulated() != nullptr ? 0.02 : 0.001) << "round " << round;
  }
  ::alarm(0);
}
