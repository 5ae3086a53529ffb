// Micro-benchmarks of the hot path: publish (with and without the notify
// hook), take, a Node's dispatch, the time-list stamp and snapshot. One process, one thread:
// what the code costs, without cache-line transfers between cores.
#include <benchmark/benchmark.h>
#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "channel.hpp"  // runtime/src: the notify hook's stamp alone
#include "point_cloud.hpp"
#include "ros2_test_msgs/PointCloud.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/node.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/shmbus.hpp"
#include "shmbus_msgs/Imu.hpp"

using namespace shmbus;

namespace {

/// A domain of its own (`tag`: one per round) whose channels have
/// `capacity` slots of `max_size` bytes at first.
struct BenchDomain {
  explicit BenchDomain(std::uint32_t max_size, std::uint32_t capacity = 256, const std::string& tag = "") {
    Config c;
    c.domain = "bench_micro_" + std::to_string(::getpid()) + tag;
    c.defaults.capacity = capacity;
    c.defaults.max_message_size = max_size;
    c.defaults.time_list_capacity = 1024;
    context = std::make_unique<Context>(c);
  }
  ~BenchDomain() {
    const std::string d = context->domain();
    context.reset();
    introspect::clean_domain(d, false);
  }
  std::unique_ptr<Context> context;
};

void BM_Publish(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const bool hook = state.range(1) != 0;
  BenchDomain d(4096);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context, PublisherOptions{.notify_hook = hook});
    std::vector<std::byte> msg(size);
    for (auto _ : state) {
      benchmark::DoNotOptimize(pub.publish(msg));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
  }
  state.SetLabel(hook ? "notify hook on" : "notify hook off");
}
BENCHMARK(BM_Publish)
    ->ArgNames({"size", "hook"})
    ->Args({16, 1})
    ->Args({64, 0})
    ->Args({64, 1})
    ->Args({4096, 0})
    ->Args({4096, 1});

// The publish that grows a channel from 64-byte slots to `bytes`: the next
// generation's segment made (allocated, mapped with its pages populated),
// its start settled, the message copied in. Each round a fresh channel.
void BM_GrowingPublish(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::vector<std::byte> msg(bytes, std::byte{1});
  int round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto d = std::make_unique<BenchDomain>(64, 16, "_grow" + std::to_string(round++));
    auto pub = std::make_unique<Publisher>("/grow", TypeInfo::bytes(), *d->context);
    Subscriber sub("/grow", TypeInfo::bytes(), *d->context);
    state.ResumeTiming();
    if (pub->publish(msg) != PublishResult::kOk) state.SkipWithError("the growing publish failed");
    state.PauseTiming();
    pub.reset();
    d.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_GrowingPublish)
    ->ArgName("bytes")
    ->Arg(1 << 20)
    ->Arg(4 << 20)
    ->Arg(16 << 20)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(10);

// Steady state of 4 MiB messages (publish and take) on a channel grown to
// 4 MiB slots (grown 1) and on one created with them (grown 0): the same
// geometry, 16 slots; only where the ring lives differs.
void BM_Publish4MiBAfterGrowth(benchmark::State& state) {
  const bool grown = state.range(0) != 0;
  BenchDomain d(grown ? 64 : 4 << 20, 16, "_grown");
  {
    Publisher pub("/grown", TypeInfo::bytes(), *d.context);
    Subscriber sub("/grown", TypeInfo::bytes(), *d.context);
    std::vector<std::byte> msg(4 << 20, std::byte{2});
    std::vector<std::byte> buf(4 << 20);
    if (pub.publish(msg) != PublishResult::kOk || !sub.take(buf).ok()) state.SkipWithError("the first message failed");
    for (auto _ : state) {
      benchmark::DoNotOptimize(pub.publish(msg));
      benchmark::DoNotOptimize(sub.take(buf));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * (4 << 20));
  }
  state.SetLabel(grown ? "grown from 64 B" : "created at 4 MiB");
}
BENCHMARK(BM_Publish4MiBAfterGrowth)->ArgName("grown")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_PublishTake(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  BenchDomain d(4096);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context);
    Subscriber sub("/bench", TypeInfo::bytes(), *d.context);
    std::vector<std::byte> msg(size), buf(4096);
    for (auto _ : state) {
      static_cast<void>(pub.publish(msg));
      benchmark::DoNotOptimize(sub.take(buf));
    }
  }
}
BENCHMARK(BM_PublishTake)->ArgName("size")->Arg(64)->Arg(4096);

// The same publish and take, the take done by a Node's executor calling a
// callback (spin_once polls): the difference to BM_PublishTake is the
// dispatch cost per message, with no other core involved.
void BM_PublishNodeDispatch(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  BenchDomain d(4096);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context);
    Node node("bench", *d.context, NodeOptions{.handle_signals = false});
    std::size_t seen = 0;
    SubscriptionOptions o;
    o.batch = 1;
    node.subscribe_raw(
        "/bench", TypeInfo::bytes(), [&](std::span<const std::byte> p, const MessageInfo&) { seen += p.size(); }, o);
    std::vector<std::byte> msg(size);
    for (auto _ : state) {
      static_cast<void>(pub.publish(msg));
      benchmark::DoNotOptimize(node.spin_once(std::chrono::nanoseconds(0)));
    }
    benchmark::DoNotOptimize(seen);
  }
}
BENCHMARK(BM_PublishNodeDispatch)->ArgName("size")->Arg(64)->Arg(4096);

// A seqlock reader's copy of a message out of its slot, two ways: memcpy
// (what take does: plain loads racing a writer of the next lap, which the
// re-check discards) and relaxed atomic 8-byte loads (atomic_ref), which the
// C++ rules allow to race. docs/architecture.md weighs the two.
void BM_SeqlockCopy(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const bool atomic_words = state.range(1) != 0;
  std::vector<std::uint64_t> slot(size / 8, 0x5a5a5a5a5a5a5a5aULL);
  std::vector<std::uint64_t> out(size / 8);
  for (auto _ : state) {
    if (atomic_words) {
      for (std::size_t i = 0; i < slot.size(); ++i) {
        out[i] = std::atomic_ref<std::uint64_t>(slot[i]).load(std::memory_order_relaxed);
      }
    } else {
      std::memcpy(out.data(), slot.data(), size);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}
BENCHMARK(BM_SeqlockCopy)->ArgNames({"size", "atomic"})->ArgsProduct({{64, 4096, 1 << 20}, {0, 1}});

void BM_TakeEmpty(benchmark::State& state) {
  BenchDomain d(64);
  {
    Subscriber sub("/bench", TypeInfo::bytes(), *d.context);
    std::vector<std::byte> buf(64);
    for (auto _ : state) benchmark::DoNotOptimize(sub.take(buf));
  }
}
BENCHMARK(BM_TakeEmpty);

void BM_LoanCommit(benchmark::State& state) {
  BenchDomain d(4096);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context);
    for (auto _ : state) {
      Loan l = pub.loan(4096);
      l.data()[0] = std::byte{1};
      benchmark::DoNotOptimize(pub.commit(l));
    }
  }
}
BENCHMARK(BM_LoanCommit);

void BM_TimeListStamp(benchmark::State& state) {
  BenchDomain d(64);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context);  // keeps the channel mapped
    auto channel = d.context->state().channel(ChannelName("/bench", d.context->domain()),
                                              d.context->config().channel("/bench"), nullptr);
    std::int64_t t = 1'000'000'000;
    for (auto _ : state) {
      channel->stamp(t);
      t += 1000;
    }
    state.SetLabel("one fetch_add + one store");
  }
}
BENCHMARK(BM_TimeListStamp);

void BM_TimeListSnapshot(benchmark::State& state) {
  BenchDomain d(64);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context);
    std::vector<std::byte> msg(8);
    for (int i = 0; i < 2048; ++i) static_cast<void>(pub.publish(msg));
    introspect::ChannelReader reader(d.context->domain(), "/bench");
    introspect::TimeListSnapshot snap;
    for (auto _ : state) {
      reader.snapshot(snap);
      benchmark::DoNotOptimize(snap.stamps.data());
    }
    state.SetLabel("1024 stamps");
  }
}
BENCHMARK(BM_TimeListSnapshot);

// What a monitor's steady scan reads of one channel, the time-list head and
// 10 new stamps: from its mapping (read_stamps_since), or with two pread()
// calls on the segment's file, which would keep none of the channel's pages
// in the monitor's memory (docs/performance.md, monitor scale).
void BM_ObserverReadsTenStamps(benchmark::State& state) {
  const bool by_pread = state.range(0) != 0;
  BenchDomain d(64);
  {
    Publisher pub("/bench", TypeInfo::bytes(), *d.context);
    std::vector<std::byte> msg(8);
    for (int i = 0; i < 1000; ++i) static_cast<void>(pub.publish(msg));
    const introspect::ChannelReader reader(d.context->domain(), "/bench");
    introspect::TimeListCursor cursor;
    std::vector<std::int64_t> stamps;
    reader.read_stamps_since(cursor, stamps);
    const std::uint64_t head = cursor.next;
    const int fd = ::shm_open(channel_object_name(d.context->domain(), "/bench").c_str(), O_RDONLY, 0);
    std::uint64_t time_list_offset = 0;
    std::uint32_t time_list_capacity = 0;
    if (fd < 0 ||
        ::pread(fd, &time_list_offset, sizeof(time_list_offset), offsetof(layout::ChannelHeader, time_list_offset)) !=
            sizeof(time_list_offset) ||
        ::pread(fd, &time_list_capacity, sizeof(time_list_capacity),
                offsetof(layout::ChannelHeader, time_list_capacity)) != sizeof(time_list_capacity)) {
      if (fd >= 0) ::close(fd);
      state.SkipWithError("cannot read the channel's segment");
      return;
    }
    std::array<std::uint64_t, 2> heads{};
    std::array<std::uint64_t, 10> entries{};
    const auto stamps_offset =
        static_cast<off_t>(time_list_offset + ((head - 10) % time_list_capacity) * sizeof(std::uint64_t));
    for (auto _ : state) {
      if (by_pread) {
        benchmark::DoNotOptimize(
            ::pread(fd, heads.data(), sizeof(heads), offsetof(layout::ChannelHeader, time_list_head)));
        benchmark::DoNotOptimize(::pread(fd, entries.data(), sizeof(entries), stamps_offset));
      } else {
        cursor.next = head - 10;
        stamps.clear();
        benchmark::DoNotOptimize(reader.read_stamps_since(cursor, stamps));
      }
    }
    ::close(fd);
    state.SetLabel(by_pread ? "two pread() calls" : "mapped");
  }
}
BENCHMARK(BM_ObserverReadsTenStamps)->ArgName("pread")->Arg(0)->Arg(1);

shmbus_msgs::Imu imu_sample() {
  shmbus_msgs::Imu m{};
  m.header.stamp_ns = 1'700'000'000'000'000'000ULL;
  m.header.frame_id.assign("imu_link");
  m.orientation = {0, 0, 0.7071067811865476, 0.7071067811865476};
  m.angular_velocity = {0.01, -0.02, 0.5};
  m.linear_acceleration = {0.1, 0.2, 9.81};
  return m;
}

void BM_DecodeImu(benchmark::State& state) {
  const auto schema = schema::Schema::from_canonical(shmbus_msgs::Imu::kSchema);
  const shmbus_msgs::Imu m = imu_sample();
  for (auto _ : state) {
    schema::Json j = schema.decode(std::as_bytes(std::span{&m, 1}));
    benchmark::DoNotOptimize(j);
  }
  state.SetLabel("shmbus_msgs/Imu (360 B, 43 numbers) -> JSON object");
}
BENCHMARK(BM_DecodeImu);

void BM_DecodeImuToText(benchmark::State& state) {
  const auto schema = schema::Schema::from_canonical(shmbus_msgs::Imu::kSchema);
  const shmbus_msgs::Imu m = imu_sample();
  for (auto _ : state) {
    std::string text = schema.decode(std::as_bytes(std::span{&m, 1})).dump();
    benchmark::DoNotOptimize(text);
  }
  state.SetLabel("... and dump() to JSON text");
}
BENCHMARK(BM_DecodeImuToText);

void BM_EncodeImu(benchmark::State& state) {
  const auto schema = schema::Schema::from_canonical(shmbus_msgs::Imu::kSchema);
  const shmbus_msgs::Imu m = imu_sample();
  const schema::Json j = schema.decode(std::as_bytes(std::span{&m, 1}));
  for (auto _ : state) {
    auto bytes = schema.encode(j);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetLabel("JSON object -> shmbus_msgs/Imu bytes");
}
BENCHMARK(BM_EncodeImu);

/// A PointCloud2-shaped message (ROS 2's fields) with `bytes` of points:
/// x, y, z, intensity as float32, 16 bytes a point.
std::vector<std::byte> cloud_bytes(std::size_t bytes) {
  ros2_test_msgs::PointCloud m;
  m.header.frame_id = "lidar_top";
  m.height = 1;
  m.width = static_cast<std::uint32_t>(bytes / 16);
  for (const char* name : {"x", "y", "z", "intensity"}) {
    ros2_test_msgs::PointField f;
    f.name = name;
    f.offset = static_cast<std::uint32_t>(4 * m.fields.size());
    f.datatype = ros2_test_msgs::PointField::FLOAT32;
    f.count = 1;
    m.fields.push_back(f);
  }
  m.point_step = 16;
  m.row_step = static_cast<std::uint32_t>(bytes);
  m.data.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) m.data[i] = static_cast<std::uint8_t>(i * 7);
  m.is_dense = true;
  return msg::to_bytes(m);
}

/// The slot's bytes of a 4 MiB cloud to ROS 2 CDR (the bridge's and bag
/// export's conversion), against memcpy of as many bytes.
void BM_CloudToCdr(benchmark::State& state) {
  const auto schema = schema::Schema::from_canonical(ros2_test_msgs::PointCloud::kSchema);
  const std::vector<std::byte> slot = cloud_bytes(4 << 20);
  std::string cdr;
  for (auto _ : state) {
    cdr.clear();
    schema.to_cdr(slot, cdr);
    benchmark::DoNotOptimize(cdr.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * slot.size()));
  state.SetLabel("PointCloud2-shaped, 4 MiB of points: slot -> CDR");
}
BENCHMARK(BM_CloudToCdr);

/// ROS 2 CDR of the same cloud into slot bytes (bag import, a Foxglove
/// client's publish).
void BM_CloudFromCdr(benchmark::State& state) {
  const auto schema = schema::Schema::from_canonical(ros2_test_msgs::PointCloud::kSchema);
  std::string cdr;
  schema.to_cdr(cloud_bytes(4 << 20), cdr);
  for (auto _ : state) {
    std::vector<std::byte> slot = schema.from_cdr(std::as_bytes(std::span{cdr}));
    benchmark::DoNotOptimize(slot.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * cdr.size()));
  state.SetLabel("PointCloud2-shaped, 4 MiB of points: CDR -> slot");
}
BENCHMARK(BM_CloudFromCdr);

/// The reference: memcpy of 4 MiB into a buffer that exists, and into a
/// new one (what from_cdr's result is).
void BM_Memcpy4MiB(benchmark::State& state) {
  const std::vector<std::byte> src = cloud_bytes(4 << 20);
  std::vector<std::byte> dst(src.size());
  for (auto _ : state) {
    if (state.range(0) != 0) {
      std::vector<std::byte> fresh(src.size());
      std::memcpy(fresh.data(), src.data(), src.size());
      benchmark::DoNotOptimize(fresh.data());
    } else {
      std::memcpy(dst.data(), src.data(), src.size());
      benchmark::DoNotOptimize(dst.data());
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * src.size()));
  state.SetLabel(state.range(0) != 0 ? "memcpy 4 MiB into a new vector" : "memcpy 4 MiB");
}
BENCHMARK(BM_Memcpy4MiB)->ArgName("new")->Arg(0)->Arg(1);

/// sensor_msgs/JointState of 12 joints, empty velocity and effort (what a
/// position-controlled arm publishes): CDR encode and decode per message,
/// shmbus's schema-driven codec beside Fast-CDR called as rmw_fastrtps's
/// generated type support calls it on the C++ struct.
struct JointState {
  std::int32_t sec = 0;
  std::uint32_t nanosec = 0;
  std::string frame_id;
  std::vector<std::string> name;
  std::vector<double> position, velocity, effort;
};

JointState twelve_joints() {
  JointState j;
  j.sec = 1700000000;
  j.nanosec = 123456789;
  j.frame_id = "base_link";
  for (int i = 0; i < 12; ++i) {
    j.name.push_back("arm_joint_" + std::to_string(i));
    j.position.push_back(0.1 * i);
  }
  return j;
}

const schema::Schema& joint_state_schema() {
  static const schema::Schema s = [] {
    auto set = std::make_shared<schema::MessageSet>();
    set->add("builtin_interfaces", "Time", "int32 sec\nuint32 nanosec\n", "bench");
    set->add("std_msgs", "Header", "builtin_interfaces/Time stamp\nstring frame_id\n", "bench");
    set->add("sensor_msgs", "JointState",
             "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n",
             "bench");
    set->resolve();
    return schema::Schema::from_set(set, "sensor_msgs/JointState");
  }();
  return s;
}

std::vector<std::byte> joint_state_slot(const JointState& j) {
  schema::Json v = {{"header", {{"stamp", {{"sec", j.sec}, {"nanosec", j.nanosec}}}, {"frame_id", j.frame_id}}},
                    {"name", j.name},
                    {"position", j.position},
                    {"velocity", j.velocity},
                    {"effort", j.effort}};
  return joint_state_schema().encode(v);
}

void fastcdr_serialize(eprosima::fastcdr::Cdr& cdr, const JointState& j) {
  cdr << j.sec << j.nanosec << j.frame_id << j.name << j.position << j.velocity << j.effort;
}

void fastcdr_deserialize(eprosima::fastcdr::Cdr& cdr, JointState& j) {
  cdr >> j.sec >> j.nanosec >> j.frame_id >> j.name >> j.position >> j.velocity >> j.effort;
}

void BM_JointStateEncode(benchmark::State& state) {
  const JointState j = twelve_joints();
  const std::vector<std::byte> slot = joint_state_slot(j);
  std::string ours;
  std::vector<char> buffer(4096);
  for (auto _ : state) {
    if (state.range(0) == 0) {
      ours.clear();
      joint_state_schema().to_cdr(slot, ours);
      benchmark::DoNotOptimize(ours.data());
    } else {
      eprosima::fastcdr::FastBuffer fb(buffer.data(), buffer.size());
      eprosima::fastcdr::Cdr cdr(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN, eprosima::fastcdr::Cdr::DDS_CDR);
      cdr.serialize_encapsulation();
      fastcdr_serialize(cdr, j);
      benchmark::DoNotOptimize(buffer.data());
    }
  }
  state.SetLabel(state.range(0) == 0 ? "JointState(12) -> CDR: shmbus slot" : "JointState(12) -> CDR: Fast-CDR struct");
}
BENCHMARK(BM_JointStateEncode)->ArgName("fastcdr")->Arg(0)->Arg(1);

void BM_JointStateDecode(benchmark::State& state) {
  std::string cdr;
  joint_state_schema().to_cdr(joint_state_slot(twelve_joints()), cdr);
  for (auto _ : state) {
    if (state.range(0) == 0) {
      std::vector<std::byte> slot = joint_state_schema().from_cdr(std::as_bytes(std::span{cdr}));
      benchmark::DoNotOptimize(slot.data());
    } else {
      eprosima::fastcdr::FastBuffer fb(cdr.data(), cdr.size());
      eprosima::fastcdr::Cdr in(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN, eprosima::fastcdr::Cdr::DDS_CDR);
      in.read_encapsulation();
      JointState j;
      fastcdr_deserialize(in, j);
      benchmark::DoNotOptimize(j.position.data());
    }
  }
  state.SetLabel(state.range(0) == 0 ? "CDR -> JointState(12): shmbus slot" : "CDR -> JointState(12): Fast-CDR struct");
}
BENCHMARK(BM_JointStateDecode)->ArgName("fastcdr")->Arg(0)->Arg(1);

/// Reading a cloud in place through its generated view: the frame, the
/// fields' names and the last point's byte, each VarRef checked. Its cost
/// must not grow with the cloud.
void BM_CloudViewRead(benchmark::State& state) {
  const std::vector<std::byte> slot = cloud_bytes(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    const ros2_test_msgs::PointCloud::View v(slot);
    std::size_t n = v.header().frame_id().size() + v.data().back();
    for (const auto& f : v.fields()) n += f.name().size();
    benchmark::DoNotOptimize(n);
  }
  state.SetLabel("frame_id, 4 field names, last data byte");
}
BENCHMARK(BM_CloudViewRead)->ArgName("bytes")->Arg(64 << 10)->Arg(1 << 20)->Arg(4 << 20)->Arg(16 << 20);

/// Building a cloud's fixed part, strings and fields in a buffer, its
/// points' block claimed but not written (the driver writes the points):
/// what a builder costs besides the points.
void BM_CloudBuildInPlace(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> buffer(bytes + 4096);
  for (auto _ : state) {
    msg::Writer w(buffer);
    benchmark::DoNotOptimize(bench::build_cloud(w, bytes, static_cast<std::uint32_t>(bytes / 16)).data());
    benchmark::DoNotOptimize(w.size());
  }
  state.SetLabel("header, 4 fields, the points' block claimed");
}
BENCHMARK(BM_CloudBuildInPlace)->ArgName("bytes")->Arg(64 << 10)->Arg(16 << 20);

/// Making a publisher and a subscriber on a channel that exists (what a
/// module does at start, and the bridge per client subscription), with
/// `rules` [[channel]] globs in the configuration: the name checked and the
/// channel's settings resolved for each endpoint.
void BM_OpenEndpoints(benchmark::State& state) {
  Config c;
  c.domain = "bench_micro_" + std::to_string(::getpid());
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    ChannelRule r;
    r.pattern = "/robot/sensor" + std::to_string(i) + "/*";
    r.capacity = 64;
    c.channels.push_back(r);
  }
  {
    Context context(c);
    const Publisher keep("/robot/camera/front", TypeInfo::bytes(), context);  // the channel exists
    for (auto _ : state) {
      const Publisher pub("/robot/camera/front", TypeInfo::bytes(), context);
      const Subscriber sub("/robot/camera/front", TypeInfo::bytes(), context);
      benchmark::DoNotOptimize(&pub);
      benchmark::DoNotOptimize(&sub);
    }
  }
  introspect::clean_domain(c.domain, false);
  state.SetLabel(std::to_string(state.range(0)) + " [[channel]] globs");
}
BENCHMARK(BM_OpenEndpoints)->ArgName("rules")->Arg(0)->Arg(32);

}  // namespace

BENCHMARK_MAIN();
