#pragma once
/// @file schema.hpp
/// Message schemas: definitions in ROS 2's `.msg` language, limited to
/// what a fixed memory layout holds, their layout, their canonical text
/// and hash, and a JSON codec that works from the schema alone.
///
/// Definition lines (one per line, `#` outside quotes starts a comment):
///
///     float64 x                 a field: a type and a name
///     float64 w 1.0             a field with a default value
///     uint32[4] ids             a fixed-size array
///     int32[2] pair [1, -1]     ... with its default
///     string name               a string of any length
///     string<=32 frame_id       a bounded string: at most 32 bytes, held in 32
///     string<32> frame_id       the same (shmbus's spelling)
///     float32[] ranges          a sequence of any length
///     Point[<=8] corners        a sequence of at most 8
///     Header header             a nested message (same package, else std_msgs)
///     sensor_msgs/Imu imu       a nested message by full name
///     sensor_msgs/msg/Imu imu   the same (ROS 2's spelling)
///     uint8 MODE_FAST=1         a constant
///     string NAME="text"        a string constant ('text' and text too)
///
/// Primitive types: bool, byte, char, int8, uint8, int16, uint16, int32,
/// uint32, int64, uint64, float32, float64 (`byte` and `char` are ROS 2's
/// names of an 8-bit unsigned integer, and are held as uint8). Default
/// strings take either quote; `\\`, `\"` and `\'` are escapes in them.
///
/// Layout rule (what the C++ struct, the schema and any reader agree on):
/// - little-endian; a primitive is aligned to its size (bool: 1 byte, 0/1);
/// - `string<N>` is N bytes, alignment 1; an array is its elements back to
///   back, aligned as one element; a nested message is aligned to its
///   largest member alignment;
/// - each field starts at the next offset aligned for it, in declaration
///   order; the gaps are explicit zero padding; the message's fixed part is
///   rounded up to its alignment (a message without fields is one byte);
/// - a sequence (`T[]`, `T[<=N]`) and a `string` are a VarRef in the fixed
///   part (uint32 offset, uint32 count; alignment 4): `count` elements (a
///   string's bytes, no NUL) in a block at `offset` bytes from the start of
///   the message, aligned as one element, after the root's fixed part. A
///   block's elements hold VarRefs of their own (a `string[]`'s strings, a
///   sequence of messages' sequences). A count of 0 is empty, whatever its
///   offset (an all-zero fixed part is a valid message). A type with no
///   VarRef anywhere (MessageDef::variable false) is its fixed part alone.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/schema_text.hpp"
#include "shmbus/types.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus::schema {

/// JSON with object keys in schema (insertion) order.
using Json = nlohmann::ordered_json;

enum class Primitive : std::uint8_t {
  kBool,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat32,
  kFloat64
};

/// The schema spelling of a primitive ("float64").
std::string_view to_string(Primitive p) noexcept;
/// Size (and alignment) in bytes.
std::uint32_t size_of(Primitive p) noexcept;

/// kString: `string<N>`, N bytes in place. kUnboundedString: `string`, a
/// VarRef to its bytes.
enum class FieldKind : std::uint8_t { kPrimitive, kString, kMessage, kUnboundedString };

/// Where a sequence's or a string's elements are (see the layout rule).
using shmbus::kVarRefAlign;
using shmbus::kVarRefSize;
using shmbus::VarRef;

struct MessageDef;

/// One field of a message, with its place in the layout.
struct Field {
  std::string name;
  FieldKind kind = FieldKind::kPrimitive;
  Primitive primitive = Primitive::kUint8;  ///< kPrimitive
  std::uint32_t string_capacity = 0;        ///< kString: bytes
  const MessageDef* message = nullptr;      ///< kMessage
  std::uint32_t array_length = 0;           ///< 0: not a fixed array
  bool unbounded = false;                   ///< a sequence: `T[]` or `T[<=N]`
  std::uint32_t sequence_bound = 0;         ///< `T[<=N]`: N (0: `T[]`)
  std::uint32_t offset = 0;                 ///< in the fixed part (the VarRef, for a sequence)
  /// One element where elements are (in place, or a sequence's block): a
  /// `string` element is its VarRef.
  std::uint32_t element_size = 0;
  std::uint32_t element_align = 1;
  int line = 0;  ///< in its definition file
  /// The default value as JSON (what decode() gives for the field), or
  /// null when the definition gives none (zero, false, empty).
  Json default_value;

  /// The element type as written canonically ("float64", "string<8>",
  /// "string", "std_msgs/Header").
  [[nodiscard]] std::string element_type() const;
  /// The whole type ("float64[3]", "uint8[]", "Point[<=4]").
  [[nodiscard]] std::string type() const;
  /// Bytes in the fixed part (a sequence's VarRef: 8).
  [[nodiscard]] std::uint32_t fixed_size() const noexcept;
  /// True when the field's elements hold VarRefs (a `string`, or a message
  /// that is variable): what a reader follows beyond the element.
  [[nodiscard]] bool element_variable() const noexcept;
};

/// A constant: `uint8 MODE_FAST=1`, `string NAME="text"`.
struct Constant {
  std::string name;
  Primitive primitive = Primitive::kUint8;
  bool is_string = false;  ///< a string constant (`primitive` unused)
  /// Canonical text of a number or bool ("1", "-2", "0.5", "true"); a
  /// string constant's text itself.
  std::string value;
  /// "string" or the primitive's spelling.
  [[nodiscard]] std::string type() const;
  /// The value as a definition line writes it: a string quoted.
  [[nodiscard]] std::string literal() const;
};

/// A message type with its computed layout.
struct MessageDef {
  std::string name;    ///< package/Name
  std::string source;  ///< file it came from
  std::vector<Field> fields;
  std::vector<Constant> constants;
  std::uint32_t size = 0;  ///< fixed part, padded to `align`
  std::uint32_t align = 1;
  /// Holds a VarRef (a sequence or a `string`, here or in a nested
  /// message): its bytes are its fixed part and then blocks.
  bool variable = false;
};

/// A definition or schema text that cannot be used. what() is
/// "file:line: message". Errc::kInvalidArgument.
class SchemaError : public Error {
 public:
  explicit SchemaError(const std::string& message) : Error(Errc::kInvalidArgument, message) {}
};

/// Bytes, JSON or CDR that do not fit a schema: the layout runtime's
/// error (var_message.hpp), whichever of the codecs or the generated views
/// finds it. what() names the field path ("header.frame_id") and what is
/// wrong. Errc::kInvalidArgument.
using CodecError = MessageError;

/// A set of message definitions: parsed, resolved and laid out together.
/// Thread-safety: build from one thread; const members may be shared.
class MessageSet {
 public:
  /// Limits that bound a schema from elsewhere (a channel's segment, a
  /// recording) before anything walks it: message types in one set, how
  /// deep messages nest in messages, and a canonical text's size. Every
  /// walk of a message (layout, codec, JSON Schema) is at most kMaxNesting
  /// deep, and kMaxExpandedFields (fields counted through nested
  /// messages, arrays once) bounds a decoded message's tree and its JSON
  /// Schema. Real messages use a few dozen types nested a few levels.
  static constexpr std::size_t kMaxMessageTypes = 4096;
  static constexpr std::size_t kMaxNesting = 32;
  static constexpr std::size_t kMaxExpandedFields = 65536;
  static constexpr std::size_t kMaxCanonicalBytes = std::size_t{1} << 20;

  MessageSet();
  ~MessageSet();
  MessageSet(MessageSet&&) noexcept;
  MessageSet& operator=(MessageSet&&) noexcept;

  /// Adds `.../package/Name.msg`, a service `.../package/Name.srv`
  /// (request fields, a line `---`, response fields) as the two messages
  /// `package/Name_Request` and `package/Name_Response` (names.hpp), or an
  /// action `.../package/Name.action` (goal, `---`, result, `---`,
  /// feedback) as `package/Name_Goal`, `Name_Result` and `Name_Feedback`,
  /// with the types rosidl derives from them (add_action_types()).
  /// The file may also be in ROS 2's share layout,
  /// `.../package/msg|srv|action/Name.*`. Throws SchemaError (unreadable
  /// file, bad package or name, syntax).
  void add_file(const std::string& path);
  /// For each message type a definition in the set uses and the set does
  /// not hold, calls `load` with each name it may be (its package's, then
  /// std_msgs/Header for `Header`) until one call returns true: `load` adds
  /// that type's definition (add_file) or returns false. Types the added
  /// definitions use are loaded too. What stays unknown, resolve() refuses
  /// naming its file and line.
  void load_missing(const std::function<bool(const std::string& full_name)>& load);
  /// Adds the text of a definition file `package/stem.kind` (`kind`
  /// "msg", "srv" or "action"), as add_file() adds the file; `source`
  /// names it in errors.
  void add_text(const std::string& package, const std::string& stem, std::string_view kind, std::string_view text,
                const std::string& source);
  /// True when the set holds a definition of `full_name` (resolved or not).
  [[nodiscard]] bool has(std::string_view full_name) const;
  /// Adds every `*.msg` and `*.srv` under `root/<package>/` (a service as
  /// its request and response types).
  void add_directory(const std::string& root);
  /// Adds one definition from text.
  void add(const std::string& package, const std::string& name, std::string_view text, const std::string& source);
  /// Adds the definitions of a canonical schema text (what a channel
  /// stores); returns the full name of its first (root) message. Throws
  /// SchemaError for a text over kMaxCanonicalBytes; in time linear in its
  /// size.
  std::string add_canonical(std::string_view text, const std::string& source);
  /// Adds the definitions of a ros2msg text (what MCAP files, rosbag2 and
  /// Foxglove carry: ros2msg_text()): the root type `type` (`pkg/msg/Type`
  /// or `pkg/Type`) first, then each type it uses after a line of '=' and
  /// "MSG: pkg/msg/Type". Returns `pkg/Type`. Bounded as add_canonical().
  /// As rosbag2 writes it: a section repeated with the same definition is
  /// read once (one that differs is refused, naming both lines), and the
  /// text of a service event type (`pkg/srv/Name_Event`) may be the
  /// `.srv` itself (request, `---`, response), read as the event type ROS
  /// 2 derives from it (add_service_event()).
  std::string add_ros2msg(std::string_view text, std::string_view type, const std::string& source);
  /// Resolves type names, refuses recursion and computes every layout.
  /// Throws SchemaError "file:line: message". Idempotent.
  void resolve();

  /// The resolved message `package/Name`, or nullptr.
  [[nodiscard]] const MessageDef* find(std::string_view full_name) const;
  /// Every message, in the order added.
  [[nodiscard]] std::vector<const MessageDef*> messages() const;

  /// The canonical text of `m`: "MSG: name" then one line per constant and
  /// field, for `m` and then every message it uses (depth first, once each).
  [[nodiscard]] static std::string canonical_text(const MessageDef& m);

 private:
  /// add_canonical() (`root_name` empty) or add_ros2msg().
  std::string add_sections(std::string_view text, const std::string& source, const std::string& root_name);
  /// The parts of a `.srv` (`parts`: request, response) or `.action`
  /// (goal, result, feedback) text, split at its lines `---`, added to
  /// `package`; line numbers count from first_line + 1.
  void add_parts(const std::string& package, const std::vector<std::string>& parts, std::string_view body,
                 const std::string& source, int first_line);
  /// The event type ROS 2 derives from the `.srv` text of `service`
  /// (`Name_Event`: service_msgs/ServiceEventInfo info, the request and the
  /// response as sequences of at most one), with its request and response.
  void add_service_event(const std::string& package, const std::string& service, std::string_view srv_text,
                         const std::string& source, int first_line);
  /// service_msgs/ServiceEventInfo and the builtin_interfaces/Time it uses,
  /// from the shipped definitions, where the set lacks them
  /// (add_service_event()'s types).
  void add_service_event_types();
  /// What rosidl derives from action `package/action`: `Name_SendGoal` and
  /// `Name_GetResult`'s requests and responses and `Name_FeedbackMessage`
  /// (names.hpp), with the shipped types they use.
  void add_action_types(const std::string& package, const std::string& action, const std::string& source);
  /// Each of `types` (`pkg/Name`) from the shipped definitions, where the
  /// set lacks it.
  void add_shipped_types(std::initializer_list<std::string_view> types);
  /// add() of text whose first line is line first_line + 1 of `source`.
  void add_at(const std::string& package, const std::string& name, std::string_view text, const std::string& source,
              int first_line);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `m` in ROS 2 `.msg` syntax, as a `ros2msg` schema carries it (MCAP,
/// Foxglove, rosbag2): `m`'s constants and fields, then for each message
/// it uses a line of 80 '=', "MSG: pkg/Type" and its definition.
/// `string<N>` is written `string<=N` (N bytes at most, as here).
std::string ros2msg_text(const MessageDef& m);

/// `pkg/Type` -> `pkg/msg/Type`, the name ROS 2 tools give a message type
/// (a ros2msg schema's name); other names unchanged.
std::string ros2_type_name(std::string_view type);
/// The ros2msg text of what raw bytes are offered as (bytes_to_cdr).
inline constexpr std::string_view kBytesRos2msgText = "uint8[] data\n";

/// Raw bytes as the CDR of a message `uint8[] data` (what a channel without
/// a schema is offered as), appended to `out`.
void bytes_to_cdr(std::span<const std::byte> bytes, std::string& out);
/// The reverse: the bytes of a CDR `uint8[] data` message. Throws
/// CodecError for CDR that is cut short or not little-endian.
std::vector<std::byte> bytes_from_cdr(std::span<const std::byte> cdr);
/// Raw bytes as JSON, {"data": "<RFC 4648 base64>"} (as Foxglove shows
/// bytes), and the jsonschema of that form.
Json bytes_to_json(std::span<const std::byte> bytes);
Json bytes_json_schema();

/// What Schema::from_cdr() accepted that is not CDR as ROS 2 writes it,
/// counted so that a caller can say it.
struct CdrNotes {
  /// Strings whose CDR length is 0 or whose last byte is not NUL: kept
  /// whole, as Fast-CDR reads them (Cyclone DDS refuses them).
  std::uint64_t strings_without_nul = 0;
  /// Strings with bytes after a NUL inside them: cut at that NUL, where a
  /// ROS 2 string ends (rosidl's C strings; Fast-CDR writes c_str()).
  std::uint64_t strings_cut_at_nul = 0;
};

/// One message type, self-contained, ready to decode and encode.
/// Thread-safety: immutable; share freely.
class Schema {
 public:
  /// From a canonical text (as stored in a channel). Throws SchemaError.
  static Schema from_canonical(std::string_view canonical_text);
  /// The schema `type` carries (from_canonical of its text), or nullopt
  /// when it carries none (TypeInfo::carries_schema). Throws SchemaError
  /// as from_canonical.
  static std::optional<Schema> of(const TypeInfo& type) {
    if (!type.carries_schema()) return std::nullopt;
    return from_canonical(type.schema);
  }
  /// The message `full_name` of a resolved set.
  static Schema from_set(std::shared_ptr<const MessageSet> set, std::string_view full_name);

  [[nodiscard]] const MessageDef& root() const noexcept { return *root_; }
  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  [[nodiscard]] std::uint64_t hash() const noexcept { return hash_; }
  /// The type as a channel stores it: name, hash and this text.
  [[nodiscard]] TypeInfo type_info() const { return {root().name, hash_, text_}; }

  /// Bytes -> JSON. A buffer shorter than the message needs is a
  /// CodecError, never a read past its end. Extra bytes are ignored.
  /// With `int64_as_string`, int64 and uint64 values are decimal strings
  /// (exact in JavaScript, where numbers past 2^53 round).
  [[nodiscard]] Json decode(std::span<const std::byte> bytes, bool int64_as_string = false) const;
  /// Bytes -> CDR (little-endian, after its 4-byte encapsulation header),
  /// appended to `out`: the message as ROS 2 serializes the type that
  /// ros2msg_text(root()) describes, so Foxglove and rosbag2 readers
  /// decode it, 64-bit integers exact. Buffers are checked as decode()
  /// checks them (CodecError).
  void to_cdr(std::span<const std::byte> bytes, std::string& out) const;
  /// CDR -> bytes, the reverse of to_cdr(): a ROS 2 message of the type
  /// ros2msg_text(root()) describes. Foreign input: every length is checked
  /// against what is left before anything is allocated; a string longer
  /// than its capacity, a sequence longer than its bound, a bool not 0 or
  /// 1, CDR cut short or big-endian, a message past `max_bytes` is a
  /// CodecError naming the field. No recursion deeper than the schema's.
  /// Accepts what Fast-CDR (rmw_fastrtps's serializer) accepts: no pad
  /// after the count of an empty sequence, a string whose CDR length is 0
  /// or whose last byte is not NUL (kept whole), a string with a NUL
  /// inside (cut there, as ROS 2's strings end); both counted in `notes`.
  [[nodiscard]] std::vector<std::byte> from_cdr(std::span<const std::byte> cdr,
                                                std::size_t max_bytes = kMaxDecodedBytes,
                                                CdrNotes* notes = nullptr) const;
  /// What encode() and from_cdr() make at most unless told otherwise: a
  /// bounded string (`string<=N`) takes N bytes here however short it is in
  /// JSON or CDR, so a small input may ask for a large message.
  static constexpr std::size_t kMaxDecodedBytes = std::size_t{1} << 28;
  /// JSON -> bytes. Every field must be present with the right JSON type
  /// and in range (a 64-bit integer may also be a decimal string); unknown
  /// keys are refused. A message that would be larger than `max_bytes` is
  /// refused before it is. Throws CodecError.
  [[nodiscard]] std::vector<std::byte> encode(const Json& value, std::size_t max_bytes = kMaxDecodedBytes) const;
  /// `partial` (a JSON object, possibly empty) over the default message
  /// (the definitions' default values, else zero, false, empty): the fields
  /// it leaves out have their defaults, in nested messages too (also each
  /// element of an array or sequence of messages it gives). What encode()
  /// takes from a person or a remote client. A `partial` that is not an
  /// object is a CodecError naming the message type.
  [[nodiscard]] Json with_defaults(const Json& partial) const;
  /// A JSON Schema (draft-07) that every decode() result satisfies:
  /// objects with all fields required and no others, integers within
  /// their type's range, fixed arrays of their length, strings within
  /// their capacity, floats as numbers or "NaN"/"Infinity"/"-Infinity".
  /// What Foxglove and MCAP tools use to show JSON messages.
  [[nodiscard]] Json json_schema() const;

 private:
  std::shared_ptr<const MessageSet> set_;
  const MessageDef* root_ = nullptr;
  std::string text_;
  std::uint64_t hash_ = 0;
};

}  // namespace shmbus::schema
