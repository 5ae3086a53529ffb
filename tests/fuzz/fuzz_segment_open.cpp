// libFuzzer target: opening mutated channel and registry segments. A real
// domain is made once (a channel with a few messages, its registry); each
// input patches bytes of one of the two images, which is written back into
// /dev/shm, then opened and read the way shmtool and shmbusd do (registry
// listing, channel view, time-list snapshot and incremental read) and the
// way a subscriber does (take). A corrupt segment must be refused with an
// Error, never followed outside the mapping (AddressSanitizer watches).
//
// Input: [selector] then patches of 3 bytes each: offset (2 bytes, little
// endian, within the image) and a byte XORed into it; a selector with bit 1
// set also truncates the image to a length taken from the first patch.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"

using namespace shmbus;

namespace {

struct Images {
  std::string domain = "fuzzseg_" + std::to_string(::getpid());
  std::string channel_object, registry_object;
  std::vector<std::uint8_t> channel, registry;
  Config config;

  static std::vector<std::uint8_t> read(const std::string& object) {
    const int fd = ::shm_open(object.c_str(), O_RDONLY, 0);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)));
    ::pread(fd, bytes.data(), bytes.size(), 0);
    ::close(fd);
    return bytes;
  }

  Images() {
    config.domain = domain;
    config.registry_capacity = 16;
    config.defaults.capacity = 8;
    config.defaults.max_message_size = 64;
    config.defaults.time_list_capacity = 16;
    {
      Context ctx{config};
      Publisher pub("/f", TypeInfo::bytes(), ctx);
      for (int i = 0; i < 20; ++i) pub.publish(std::vector<std::byte>(16, std::byte{1}));
    }
    channel_object = channel_object_name(domain, "/f");
    registry_object = registry_object_name(domain);
    channel = read(channel_object);
    registry = read(registry_object);
    // Creator: a pid that cannot exist, so a mutated init state is judged
    // at once (abandoned) instead of waited on for its live creator (us).
    const std::uint32_t dead_pid = 0x3fffff;
    std::memcpy(channel.data() + 36, &dead_pid, sizeof(dead_pid));
    std::memcpy(registry.data() + 36, &dead_pid, sizeof(dead_pid));
  }
  ~Images() { introspect::clean_domain(domain, false); }
};

void write_image(const std::string& object, const std::vector<std::uint8_t>& bytes) {
  const int fd = ::shm_open(object.c_str(), O_RDWR, 0);
  if (fd < 0) return;
  ::ftruncate(fd, static_cast<off_t>(bytes.size()));
  ::pwrite(fd, bytes.data(), bytes.size(), 0);
  ::close(fd);
}

void exercise(const Images& im) {
  try {
    introspect::DomainView view(im.domain);
    (void)view.channel_names();
    (void)view.channel_name(3);
  } catch (const Error&) {
  }
  try {
    introspect::ChannelReader reader(im.domain, "/f");
    (void)reader.view();
    introspect::TimeListSnapshot snap;
    reader.snapshot(snap);
    introspect::TimeListCursor cursor;
    std::vector<std::int64_t> stamps;
    (void)reader.read_stamps_since(cursor, stamps);
  } catch (const Error&) {
  }
  try {
    Context ctx{im.config};
    Subscriber sub("/f", std::nullopt, ctx, SubscriberOptions{.history = 8});
    std::vector<std::byte> buf(64);
    for (int i = 0; i < 10; ++i) (void)sub.take(buf);
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Images images;
  if (size == 0) return 0;
  const bool registry = (data[0] & 1U) != 0;
  std::vector<std::uint8_t> image = registry ? images.registry : images.channel;
  for (std::size_t i = 1; i + 3 <= size; i += 3) {
    const std::size_t offset = (data[i] | (std::size_t{data[i + 1]} << 8)) % image.size();
    image[offset] ^= data[i + 2];
  }
  // Shorter than a segment header is the unit tests' case (the opener gives
  // a creator time to size a young object: seconds per input here).
  if ((data[0] & 2U) != 0 && size >= 3) {
    image.resize(std::max<std::size_t>(64, (data[1] | (std::size_t{data[2]} << 8)) % image.size()));
  }
  write_image(registry ? images.registry_object : images.channel_object, image);
  exercise(images);
  // Restore both, so the next input starts from the valid images.
  write_image(images.channel_object, images.channel);
  write_image(images.registry_object, images.registry);
  return 0;
}
