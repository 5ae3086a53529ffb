// libFuzzer target: the in-slot validator of generated C++ alone. Arbitrary
// bytes, as a hostile or corrupt writer could leave them in a slot, read
// through the views shmbus-msggen generates for ROS 2 definitions with
// strings and sequences (tests/msg_ros2: nested three deep, sequences of
// messages that hold strings and sequences, bounded sequences) and copied
// into owning values: every VarRef is checked before it is followed
// (AddressSanitizer watches every read), and overlapping blocks cannot
// make a copy larger than the message. The views accept exactly what the
// schema's decoder accepts, and what they accept writes back through the
// builders into bytes they read to the same bytes again.
// With SHMBUS_FUZZ_WRITE_SEEDS=DIR set, the target writes a message of
// each type, every field set, to DIR and exits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "ros2_test_msgs/Outer.hpp"
#include "ros2_test_msgs/Query_Response.hpp"
#include "ros2_test_msgs/Travel_Feedback.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"

using namespace shmbus::schema;

namespace {

const Schema& schema_of(const char* type) {
  static const TypeCatalog catalog({SHMBUS_SOURCE_DIR "/tests/msg_ros2"}, false);
  static std::vector<std::pair<const char*, Schema>> loaded;
  for (const auto& [name, s] : loaded) {
    if (name == type) return s;
  }
  return loaded.emplace_back(type, catalog.find(type)).second;
}

template <typename T>
void check(const std::vector<std::byte>& bytes) {
  bool viewed = true;
  std::vector<std::byte> again;
  try {
    const T owned = T::from(typename T::View(bytes));
    again = shmbus::msg::to_bytes(owned);
  } catch (const shmbus::Error&) {
    viewed = false;
  }
  bool decoded = true;
  try {
    (void)schema_of(T::kTypeName).decode(bytes);
  } catch (const CodecError&) {
    decoded = false;
  }
  if (viewed != decoded) __builtin_trap();
  if (!viewed) return;
  // What was accepted is a message: written again, it reads back the same.
  if (shmbus::msg::to_bytes(T::from(typename T::View(again))) != again) __builtin_trap();
}

template <typename T>
void write_seed(const std::string& dir, std::uint8_t selector, const T& m) {
  const std::vector<std::byte> bytes = shmbus::msg::to_bytes(m);
  std::ofstream f(dir + "/" + std::to_string(selector) + ".bin", std::ios::binary);
  f.put(static_cast<char>(selector));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_seeds(const std::string& dir) {
  ros2_test_msgs::Inner inner;
  inner.label = "label";
  inner.values = {1.5F, -2.0F};
  inner.small = {1, 2, 3};
  ros2_test_msgs::Middle middle;
  middle.inner = inner;
  middle.pair = {inner, inner};
  middle.inners = {inner, ros2_test_msgs::Inner{}, inner};
  middle.names = {"a", "", "ccc"};
  middle.two_names = {"x", "yz"};
  ros2_test_msgs::Outer outer;
  outer.middles = {middle, middle};
  outer.one = middle;
  outer.bits = {true, false, true};
  ros2_test_msgs::Query_Response response;
  response.answers = {"because", "so"};
  response.detail = inner;
  ros2_test_msgs::Travel_Feedback feedback;
  feedback.ticks.resize(3);
  write_seed(dir, 0, outer);
  write_seed(dir, 1, middle);
  write_seed(dir, 2, inner);
  write_seed(dir, 3, response);
  write_seed(dir, 4, feedback);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const char* dir = std::getenv("SHMBUS_FUZZ_WRITE_SEEDS")) {  // NOLINT(concurrency-mt-unsafe)
    write_seeds(dir);
    std::exit(0);  // NOLINT(concurrency-mt-unsafe)
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // Exactly sized on the heap (new aligns it for any primitive).
  std::vector<std::byte> bytes(size - 1);
  if (!bytes.empty()) std::memcpy(bytes.data(), data + 1, bytes.size());
  switch (data[0] % 5) {
    case 0:
      check<ros2_test_msgs::Outer>(bytes);
      break;
    case 1:
      check<ros2_test_msgs::Middle>(bytes);
      break;
    case 2:
      check<ros2_test_msgs::Inner>(bytes);
      break;
    case 3:
      check<ros2_test_msgs::Query_Response>(bytes);
      break;
    default:
      check<ros2_test_msgs::Travel_Feedback>(bytes);
  }
  return 0;
}
