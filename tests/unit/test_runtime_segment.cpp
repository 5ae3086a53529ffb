#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
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
  EXPECT_NE(e.find("has layout version 99, this build uses 1"), std::string::npos) << e;
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
  EXPECT_NE(e.find("has an inconsistent channel geometry"), std::string::npos) << e;
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
