#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "shmbus/error.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"

using namespace shmbus::schema;

namespace {

std::string error_of(const std::string& text, const std::string& name = "Bad") {
  try {
    MessageSet set;
    set.add("std_msgs", "Header", "uint64 stamp_ns\nuint32 seq\nstring<52> frame_id\n", "Header.msg");
    set.add("pkg", name, text, "pkg/" + name + ".msg");
    set.resolve();
  } catch (const SchemaError& e) {
    return e.what();
  }
  return "no error";
}

const Field& field(const MessageDef& m, const std::string& name) {
  for (const Field& f : m.fields) {
    if (f.name == name) return f;
  }
  throw std::runtime_error("no field " + name);
}

}  // namespace

TEST(SchemaParserTest, LayoutFollowsNaturalAlignmentWithExplicitPadding) {
  MessageSet set;
  set.add("pkg", "Inner", "uint8 a\nfloat64 b\n", "Inner.msg");
  set.add("pkg", "Outer", "uint8 tag\nInner inner  # comment\nuint16[3] ids\nstring<5> s\nuint32 last\n", "Outer.msg");
  set.resolve();
  const MessageDef& inner = *set.find("pkg/Inner");
  EXPECT_EQ(inner.size, 16U);
  EXPECT_EQ(inner.align, 8U);
  EXPECT_EQ(field(inner, "b").offset, 8U);
  const MessageDef& outer = *set.find("pkg/Outer");
  EXPECT_EQ(field(outer, "tag").offset, 0U);
  EXPECT_EQ(field(outer, "inner").offset, 8U);
  EXPECT_EQ(field(outer, "ids").offset, 24U);
  EXPECT_EQ(field(outer, "s").offset, 30U);
  EXPECT_EQ(field(outer, "last").offset, 36U);
  EXPECT_EQ(outer.size, 40U);
  EXPECT_EQ(outer.align, 8U);
  EXPECT_EQ(field(outer, "ids").type(), "uint16[3]");
}

TEST(SchemaParserTest, ASequenceOrAStringIsAVarRefInTheFixedPart) {
  MessageSet set;
  set.add("pkg", "Blob", "uint8 kind\nfloat64[] samples\nstring name\nstring[<=3] tags\n", "Blob.msg");
  set.add("pkg", "Fixed", "uint8 kind\nstring<=4 name\n", "Fixed.msg");
  set.resolve();
  const MessageDef& m = *set.find("pkg/Blob");
  EXPECT_TRUE(m.variable);
  EXPECT_EQ(field(m, "samples").offset, 4U);
  EXPECT_EQ(field(m, "samples").fixed_size(), 8U);
  EXPECT_EQ(field(m, "samples").element_size, 8U);
  EXPECT_EQ(field(m, "name").kind, FieldKind::kUnboundedString);
  EXPECT_EQ(field(m, "name").offset, 12U);
  EXPECT_EQ(field(m, "tags").offset, 20U);
  EXPECT_EQ(field(m, "tags").sequence_bound, 3U);
  EXPECT_EQ(field(m, "tags").element_size, 8U) << "a string element is its VarRef";
  EXPECT_EQ(field(m, "tags").type(), "string[<=3]");
  EXPECT_EQ(m.align, 4U);
  EXPECT_EQ(m.size, 28U);
  EXPECT_FALSE(set.find("pkg/Fixed")->variable);
}

TEST(SchemaParserTest, CanonicalTextNamesTypesFullyAndHashIsStable) {
  MessageSet set;
  set.add("std_msgs", "Header", "uint64 stamp_ns # when\n\n", "Header.msg");
  set.add("pkg", "A", "# comment\nuint8 MODE=0x10\nHeader   header\nfloat32[2] v\n", "A.msg");
  set.resolve();
  const std::string text = MessageSet::canonical_text(*set.find("pkg/A"));
  EXPECT_EQ(text,
            "MSG: pkg/A\nuint8 MODE=16\nstd_msgs/Header header\nfloat32[2] v\nMSG: std_msgs/Header\nuint64 stamp_ns\n");
  EXPECT_EQ(hash_text(text), hash_text(text));
  // Round trip through the canonical text gives the same text and hash.
  const Schema s = Schema::from_canonical(text);
  EXPECT_EQ(s.text(), text);
  EXPECT_EQ(s.hash(), hash_text(text));
  EXPECT_EQ(s.root().name, "pkg/A");
  // Any change of a field changes the hash.
  MessageSet other;
  other.add("std_msgs", "Header", "uint64 stamp_ns\n", "Header.msg");
  other.add("pkg", "A", "uint8 MODE=16\nHeader header\nfloat64[2] v\n", "A.msg");
  other.resolve();
  EXPECT_NE(hash_text(MessageSet::canonical_text(*other.find("pkg/A"))), hash_text(text));
}

TEST(SchemaParserTest, MalformedDefinitionsAreRefusedWithFileAndLine) {
  EXPECT_EQ(error_of("uint8 a\nVector3 v\n"),
            "pkg/Bad.msg:2: unknown type 'Vector3': not a primitive, a string, or a message of package pkg");
  EXPECT_EQ(error_of("uint8 a\nfloat32 b\nint16 a\n"), "pkg/Bad.msg:3: duplicate field 'a' (first on line 1)");
  EXPECT_EQ(error_of("uint8[0] a\n"),
            "pkg/Bad.msg:1: bad array bound '0' in 'uint8[0]'; use [N] or [<=N] with N from 1 to 1048576, or [] for "
            "a sequence of any length");
  EXPECT_EQ(error_of("uint8[x] a\n"),
            "pkg/Bad.msg:1: bad array bound 'x' in 'uint8[x]'; use [N] or [<=N] with N from 1 to 1048576, or [] for "
            "a sequence of any length");
  EXPECT_EQ(error_of("string<0> name\n"),
            "pkg/Bad.msg:1: bad string bound in 'string<0>'; use string<=N with N from 1 to 1048576");
  EXPECT_EQ(error_of("uint8 K=300\n"), "pkg/Bad.msg:1: value '300' is not a valid uint8");
  EXPECT_EQ(error_of("uint8 class\n"), "pkg/Bad.msg:1: 'class' is reserved (a C++ keyword or shmbus_ prefix)");
  EXPECT_EQ(error_of("uint8\n"), "pkg/Bad.msg:1: 'uint8' needs a type and a name");
  EXPECT_EQ(error_of("uint8 2x\n"),
            "pkg/Bad.msg:1: '2x' is not a valid name; use letters, digits and '_', starting with a letter");
}

TEST(SchemaParserTest, RecursiveTypesAreRefused) {
  try {
    MessageSet set;
    set.add("pkg", "A", "uint8 x\nB b\n", "pkg/A.msg");
    set.add("pkg", "B", "A a\n", "pkg/B.msg");
    set.resolve();
    FAIL() << "no error";
  } catch (const SchemaError& e) {
    EXPECT_STREQ(e.what(), "pkg/B.msg:1: recursive type: pkg/A -> pkg/B -> pkg/A (field 'a')");
  }
  EXPECT_EQ(error_of("Bad self\n"), "pkg/Bad.msg:1: recursive type: pkg/Bad -> pkg/Bad (field 'self')");
}

TEST(SchemaParserTest, VariableMessagesNestAnywhere) {
  MessageSet set;
  set.add("pkg", "Blob", "uint8[] data\n", "pkg/Blob.msg");
  set.add("pkg", "Holder", "Blob blob\nBlob[2] pair\nBlob[] many\nuint8 last\n", "pkg/Holder.msg");
  set.resolve();
  const MessageDef& h = *set.find("pkg/Holder");
  EXPECT_TRUE(h.variable);
  EXPECT_TRUE(field(h, "blob").element_variable());
  EXPECT_EQ(field(h, "pair").offset, 8U);
  EXPECT_EQ(field(h, "many").offset, 24U);
  EXPECT_EQ(field(h, "last").offset, 32U);
}

TEST(SchemaParserTest, FilesAreReadFromPackageFolders) {
  MessageSet set;
  set.add_directory(SHMBUS_SOURCE_DIR "/runtime/msg");
  set.resolve();
  EXPECT_NE(set.find("shmbus_msgs/Imu"), nullptr);
  EXPECT_NE(set.find("shmbus_msgs/Alert"), nullptr);
  try {
    MessageSet missing;
    missing.add_file("/nonexistent/pkg/X.msg");
    FAIL();
  } catch (const SchemaError& e) {
    EXPECT_EQ(std::string{e.what()}.rfind("/nonexistent/pkg/X.msg:1: cannot read", 0), 0U);
  }
}

TEST(SchemaParserTest, FirstDifferenceNamesTheMessageAndLine) {
  EXPECT_EQ(first_difference("MSG: a/B\nfloat64 x\nfloat64 y\n", "MSG: a/B\nfloat64 x\nfloat32 y\n"),
            "in a/B, line 2 differs: 'float64 y' here, 'float32 y' there");
  EXPECT_EQ(first_difference("MSG: a/B\nfloat64 x\n", "MSG: a/B\nfloat64 x\n"), "");
  EXPECT_EQ(first_difference("MSG: a/B\nfloat64 x\nuint8 z\n", "MSG: a/B\nfloat64 x\n"),
            "in a/B, line 2 differs: 'uint8 z' here, nothing there");
}

TEST(SchemaParserTest, ServiceFileGivesRequestAndResponseMessages) {
  const std::string dir = ::testing::TempDir() + "/srv_" + std::to_string(::getpid()) + "/demo_srvs";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/Plan.srv") << "# a plan\nfloat64 x\nuint32 steps\n---\nbool ok\nfloat64[4] path\n";
    std::ofstream(dir + "/Broken.srv") << "int64 a\n---  \nint64 a\nVector3 v\n";
    std::ofstream(dir + "/NoSeparator.srv") << "int64 a\nint64 b\n";
  }
  MessageSet set;
  set.add_file(dir + "/Plan.srv");
  set.resolve();
  const MessageDef* request = set.find("demo_srvs/Plan_Request");
  const MessageDef* response = set.find("demo_srvs/Plan_Response");
  ASSERT_NE(request, nullptr);
  ASSERT_NE(response, nullptr);
  ASSERT_EQ(request->fields.size(), 2U);
  EXPECT_EQ(request->fields[1].name, "steps");
  ASSERT_EQ(response->fields.size(), 2U);
  EXPECT_EQ(response->fields[1].array_length, 4U);
  EXPECT_EQ(set.find("demo_srvs/Plan"), nullptr);  // the service itself is no message
  // Errors in the response part keep the file's line numbers.
  try {
    MessageSet broken;
    broken.add_file(dir + "/Broken.srv");
    broken.resolve();
    FAIL() << "no error";
  } catch (const SchemaError& e) {
    EXPECT_EQ(std::string{e.what()}, dir +
                                         "/Broken.srv:4: unknown type 'Vector3': not a primitive, a string, or a "
                                         "message of package demo_srvs");
  }
  try {
    MessageSet missing;
    missing.add_file(dir + "/NoSeparator.srv");
    FAIL() << "no error";
  } catch (const SchemaError& e) {
    EXPECT_EQ(std::string{e.what()}, dir +
                                         "/NoSeparator.srv:2: a service definition needs a line '---' between the "
                                         "request and the response fields");
  }
  std::filesystem::remove_all(dir);
}

TEST(TypeCatalogTest, ShippedTypesThenMsgPathThenTheEnvironment) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("shmbus_catalog_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "cli_msgs");
  std::filesystem::create_directories(dir / "env" / "env_msgs");
  std::ofstream(dir / "cli_msgs" / "Pose.msg") << "shmbus_msgs/Header header\nfloat64 x\n";
  std::ofstream(dir / "env" / "env_msgs" / "Tick.msg") << "uint64 n\n";
  const std::string env_roots = "::" + (dir / "env").string() + ":";
  ASSERT_EQ(::setenv("SHMBUS_MSG_PATH", env_roots.c_str(), 1), 0);

  const TypeCatalog shipped_only({}, false);
  EXPECT_TRUE(shipped_only.contains("shmbus_msgs/Image"));
  EXPECT_FALSE(shipped_only.contains("env_msgs/Tick"));
  EXPECT_EQ(shipped_only.find("shmbus_msgs/String").root().name, "shmbus_msgs/String");

  const TypeCatalog all({dir.string()});
  EXPECT_EQ(all.roots(), (std::vector<std::string>{dir.string(), (dir / "env").string()}));
  EXPECT_EQ(all.find("cli_msgs/Pose").root().fields.size(), 2U);  // its Header resolves to the shipped one
  EXPECT_TRUE(all.contains("env_msgs/Tick"));
  try {
    (void)all.find("no_pkg/Nothing");
    FAIL();
  } catch (const shmbus::Error& e) {
    EXPECT_EQ(e.code(), shmbus::Errc::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown message type 'no_pkg/Nothing'"), std::string::npos) << what;
    EXPECT_NE(what.find(dir.string()), std::string::npos) << what;
    EXPECT_NE(what.find("cli_msgs/Pose"), std::string::npos) << what;
  }
  ::unsetenv("SHMBUS_MSG_PATH");
  std::filesystem::remove_all(dir);
}

TEST(SchemaParserTest, Ros2SyntaxDefaultsConstantsAndFullNames) {
  MessageSet set;
  set.add_file(SHMBUS_SOURCE_DIR "/tests/msg/test_msgs/Point.msg");
  set.add_file(SHMBUS_SOURCE_DIR "/tests/msg/test_msgs/Ros2Syntax.msg");
  set.resolve();
  const MessageDef& m = *set.find("test_msgs/Ros2Syntax");
  // byte and char are 8-bit unsigned integers; string<=N holds N bytes.
  EXPECT_EQ(field(m, "flags").primitive, Primitive::kUint8);
  EXPECT_EQ(field(m, "letter").primitive, Primitive::kUint8);
  EXPECT_EQ(field(m, "name").kind, FieldKind::kString);
  EXPECT_EQ(field(m, "name").string_capacity, 16U);
  EXPECT_EQ(field(m, "origin").message->name, "test_msgs/Point");
  // Defaults, as decode() gives values.
  EXPECT_EQ(field(m, "flags").default_value, Json(7));
  EXPECT_EQ(field(m, "on").default_value, Json(true));
  EXPECT_EQ(field(m, "w").default_value, Json(1.0));
  EXPECT_EQ(field(m, "triple").default_value, Json::parse("[1, -2, 3]"));
  EXPECT_EQ(field(m, "name").default_value, Json("robot \"one\""));
  EXPECT_EQ(field(m, "other").default_value, Json("x#y"));
  EXPECT_EQ(field(m, "pair").default_value, Json::parse("[0.5, -1000.0]"));
  EXPECT_TRUE(field(m, "origin").default_value.is_null());
  // Constants of every kind, strings with '#' and escaped quotes.
  ASSERT_EQ(m.constants.size(), 6U);
  EXPECT_EQ(m.constants[0].type(), "uint8");
  EXPECT_EQ(m.constants[0].value, "255");
  EXPECT_EQ(m.constants[4].type(), "string");
  EXPECT_EQ(m.constants[4].value, "hello # not a comment");
  EXPECT_EQ(m.constants[5].value, "single 'quoted'");
  // The canonical text carries them, and reads back to itself.
  const std::string text = MessageSet::canonical_text(m);
  EXPECT_NE(text.find("string GREETING=\"hello # not a comment\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("string<16> name \"robot \\\"one\\\"\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("int32[3] triple [1, -2, 3]\n"), std::string::npos) << text;
  const Schema again = Schema::from_canonical(text);
  EXPECT_EQ(again.text(), text);
  // ROS 2's text writes the bound as ROS 2 does.
  EXPECT_NE(ros2msg_text(m).find("string<=16 name \"robot \\\"one\\\"\"\n"), std::string::npos);
  // A message from a person or a client starts from the defaults.
  const Json d = again.with_defaults(Json{{"w", 2.0}});
  EXPECT_EQ(d["w"], Json(2.0));
  EXPECT_EQ(d["flags"], Json(7));
  EXPECT_EQ(d["triple"], Json::parse("[1, -2, 3]"));
  EXPECT_EQ(d["name"], Json("robot \"one\""));
  EXPECT_EQ(d["origin"], Json::parse(R"({"x": 0.0, "y": 0.0})"));
  EXPECT_EQ(again.decode(again.encode(d)), d);
}

TEST(SchemaParserTest, DefaultsThatDoNotFitTheirTypeAreRefused) {
  EXPECT_EQ(error_of("float64 x abc\n"), "pkg/Bad.msg:1: default value 'abc' of x: 'abc' is not a valid float64");
  EXPECT_EQ(error_of("uint8 x 256\n"), "pkg/Bad.msg:1: default value '256' of x: '256' is not a valid uint8");
  EXPECT_EQ(error_of("int32[2] x [1, 2, 3]\n"),
            "pkg/Bad.msg:1: default value '[1, 2, 3]' of x: 3 values for an array of 2");
  EXPECT_EQ(error_of("int32[2] x 1\n"),
            "pkg/Bad.msg:1: default value '1' of x: an array's default is written [a, b, ...]");
  EXPECT_EQ(error_of("string<=2 s \"abc\"\n"),
            "pkg/Bad.msg:1: default value '\"abc\"' of s: 3 bytes do not fit string<2>");
  EXPECT_EQ(error_of("string<=8 s \"abc\n"), "pkg/Bad.msg:1: default value '\"abc' of s: its quote is not closed");
  EXPECT_EQ(error_of("Header h 1\n"), "pkg/Bad.msg:1: default value '1' of h: a message field takes no default");
  EXPECT_EQ(error_of("uint8[<=2] a [1, 2, 3]\n"),
            "pkg/Bad.msg:1: default value '[1, 2, 3]' of a: 3 values for a sequence of at most 2");
  EXPECT_EQ(error_of("wstring w\n"),
            "pkg/Bad.msg:1: 'wstring': wide strings are not carried (their CDR is implementation-defined, and "
            "Foxglove's and rosbridge's clients refuse them too); use string (UTF-8)");
  EXPECT_EQ(error_of("uint8[2] K=1\n"), "pkg/Bad.msg:1: constant K must not be an array");
  EXPECT_EQ(error_of("Header K=1\n"), "pkg/Bad.msg:1: constant K must have a primitive or string type");
}

TEST(TypeCatalogTest, ShareLayoutRootsAreReadLazilyAndAmentPrefixPathIsARoot) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("shmbus_share_" + std::to_string(::getpid()));
  // A root as ROS 2 installs interface packages, with one broken file.
  const fs::path geo = dir / "share" / "geo_msgs";
  fs::create_directories(geo / "msg");
  fs::create_directories(geo / "srv");
  fs::create_directories(geo / "action");
  std::ofstream(geo / "msg" / "Point.msg") << "float64 x\nfloat64 y\nfloat64 z\n";
  std::ofstream(geo / "msg" / "Quaternion.msg") << "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
  std::ofstream(geo / "msg" / "Pose.msg") << "Point position\ngeo_msgs/msg/Quaternion orientation\n";
  std::ofstream(geo / "msg" / "Broken.msg") << "float64 x\nnot_a_type y z w\n";
  std::ofstream(geo / "msg" / "UsesBroken.msg") << "Broken b\n";
  std::ofstream(geo / "srv" / "Locate.srv") << "string<=32 name\n---\nPose pose\nbool found\n";
  std::ofstream(geo / "action" / "Move.action") << "Pose target\n---\nbool ok\n---\nfloat32 progress\n";
  ASSERT_EQ(::setenv("AMENT_PREFIX_PATH", (dir.string() + ":/nonexistent/prefix").c_str(), 1), 0);
  ::unsetenv("SHMBUS_MSG_PATH");
  const TypeCatalog catalog;
  ::unsetenv("AMENT_PREFIX_PATH");
  EXPECT_EQ(catalog.roots(), (std::vector<std::string>{(dir / "share").string(), "/nonexistent/prefix/share"}));

  // Every type but the broken one resolves, by either name.
  const Schema pose = catalog.find("geo_msgs/msg/Pose");
  EXPECT_EQ(pose.root().name, "geo_msgs/Pose");
  EXPECT_EQ(catalog.find("geo_msgs/Pose").hash(), pose.hash());
  EXPECT_EQ(pose.with_defaults(Json::object())["orientation"]["w"], Json(1.0));
  EXPECT_EQ(catalog.find("geo_msgs/srv/Locate_Response").root().fields.size(), 2U);
  EXPECT_EQ(catalog.find("geo_msgs/Locate_Request").root().fields[0].string_capacity, 32U);
  EXPECT_EQ(catalog.find("geo_msgs/Move_Goal").root().fields[0].message->name, "geo_msgs/Pose");
  EXPECT_EQ(catalog.find("geo_msgs/Move_Feedback").root().fields[0].name, "progress");
  EXPECT_TRUE(catalog.contains("geo_msgs/msg/Broken"));
  MessageSet by_ros2_name;
  EXPECT_TRUE(catalog.load(by_ros2_name, "geo_msgs/msg/Point"));
  EXPECT_TRUE(catalog.load(by_ros2_name, "builtin_interfaces/msg/Time")) << "a shipped type by its ROS 2 name";
  EXPECT_TRUE(by_ros2_name.has("geo_msgs/Point") && by_ros2_name.has("builtin_interfaces/Time"));
  EXPECT_FALSE(catalog.load(by_ros2_name, "geo_msgs/msg/Nothing"));
  // The broken file fails what uses it, naming its file and line.
  const std::string broken = (geo / "msg" / "Broken.msg").string();
  for (const char* type : {"geo_msgs/Broken", "geo_msgs/UsesBroken"}) {
    try {
      (void)catalog.find(type);
      ADD_FAILURE() << type << " resolved";
    } catch (const SchemaError& e) {
      EXPECT_EQ(std::string{e.what()}, broken + ":2: default value 'z w' of y: a message field takes no default")
          << type;
    }
  }
  fs::remove_all(dir);
}
