// libFuzzer target: decoding arbitrary bytes through the shipped schemas, a
// schema with every fixed field kind, and definitions in ROS 2's language
// whose strings and sequences are VarRefs to blocks (tests/msg_ros2: nested
// three deep, sequences of messages, bounded sequences) - the in-slot
// checks of every offset and length, and the CDR decoder. A short or lying buffer must be a
// CodecError, never a read past its end (AddressSanitizer watches); what
// decodes must print and encode back to the same bytes for its fixed part,
// and must also encode as CDR (what a Foxglove client gets), which decodes
// back to bytes giving the same CDR, and as JSON with 64-bit integers as
// strings; what does not decode is refused alike. The input is also read
// as CDR from a foreign file (bag import).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"
#include "shmbus_msgs/Image.hpp"
#include "shmbus_msgs/Imu.hpp"
#include "shmbus_msgs/Statistics.hpp"
#include "test_msgs/AllKinds.hpp"
#include "test_msgs/WithTail.hpp"

using namespace shmbus::schema;

namespace {
Schema ros2(const char* type) {
  static const TypeCatalog catalog({SHMBUS_SOURCE_DIR "/tests/msg_ros2"}, false);
  return catalog.find(type);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<Schema> schemas = {Schema::from_canonical(shmbus_msgs::Imu::kSchema),
                                              Schema::from_canonical(shmbus_msgs::Image::kSchema),
                                              Schema::from_canonical(shmbus_msgs::Statistics::kSchema),
                                              Schema::from_canonical(test_msgs::AllKinds::kSchema),
                                              Schema::from_canonical(test_msgs::WithTail::kSchema),
                                              ros2("ros2_test_msgs/Outer"),
                                              ros2("ros2_test_msgs/Middle"),
                                              ros2("ros2_test_msgs/Inner"),
                                              ros2("ros2_test_msgs/Query_Response"),
                                              ros2("ros2_test_msgs/Travel_Feedback")};
  if (size == 0) return 0;
  const Schema& s = schemas[data[0] % schemas.size()];
  // Copy to an exactly sized heap buffer so any over-read is caught.
  std::vector<std::byte> bytes(size - 1);
  if (!bytes.empty()) std::memcpy(bytes.data(), data + 1, bytes.size());
  bool decodes = true;
  try {
    const Json j = s.decode(bytes);
    (void)j.dump();
    (void)s.decode(bytes, true).dump();
    // Floats may not round-trip bit for bit (NaN payloads), strings lose
    // what follows a NUL, bools normalise: only re-encoding must succeed.
    (void)s.encode(j);
  } catch (const CodecError&) {
    decodes = false;
  }
  // The CDR encoder takes exactly the buffers decode() takes.
  bool cdr_encodes = true;
  try {
    std::string cdr;
    s.to_cdr(bytes, cdr);
    // What was written decodes back (bag import). A string of the slot may
    // hold a NUL, where ROS 2's reading (from_cdr) ends it: the first trip
    // may cut such strings, and from then on the CDR is a fixed point.
    const std::vector<std::byte> back = s.from_cdr(std::as_bytes(std::span{cdr}));
    std::string again;
    s.to_cdr(back, again);
    const std::vector<std::byte> back2 = s.from_cdr(std::as_bytes(std::span{again}));
    std::string third;
    s.to_cdr(back2, third);
    if (third != again) __builtin_trap();
  } catch (const CodecError&) {
    cdr_encodes = false;
  }
  // The same bytes read as foreign CDR (a ROS 2 recording): a CodecError
  // or a message, never a read past the buffer or an allocation it cannot
  // back.
  try {
    (void)s.from_cdr(bytes);
    (void)bytes_from_cdr(bytes);
  } catch (const CodecError&) {
  }
  if (cdr_encodes && !decodes) {
    // decode() failed later, in encode(): it must still decode.
    try {
      (void)s.decode(bytes);
    } catch (const CodecError&) {
      __builtin_trap();
    }
  }
  if (!cdr_encodes && decodes) __builtin_trap();
  return 0;
}
