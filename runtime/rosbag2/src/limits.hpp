#pragma once
// The bounds of what a bag may hold before it is read: each is checked
// before the bytes are parsed or allocated.

#include <cstddef>
#include <cstdint>

namespace shmbus::rosbag2 {

inline constexpr std::size_t kMaxMetadataBytes = std::size_t{1} << 20;    ///< a metadata.yaml
inline constexpr std::size_t kMaxSplitFiles = 100'000;                    ///< files of one bag
inline constexpr std::size_t kMaxNameBytes = 4096;                        ///< a topic, type or file name
inline constexpr std::size_t kMaxDefinitionBytes = std::size_t{4} << 20;  ///< a type's definition text
inline constexpr std::size_t kMaxTopics = 65'000;                         ///< channels (MCAP's ids are 16-bit)
/// A message, once decompressed (rosbag2 per-message compression).
inline constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{1} << 30;

}  // namespace shmbus::rosbag2
