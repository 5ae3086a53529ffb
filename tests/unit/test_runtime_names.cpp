#include <gtest/gtest.h>

#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

using namespace shmbus;

namespace {
std::string name_error(std::string_view name) {
  try {
    validate_channel_name(name);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kInvalidArgument);
    return e.what();
  }
  return "valid";
}
}  // namespace

TEST(NamesTest, ValidChannelNamesPass) {
  EXPECT_EQ(name_error("/imu"), "valid");
  EXPECT_EQ(name_error("/camera/front_left-2"), "valid");
  EXPECT_EQ(name_error("/" + std::string(kMaxChannelName - 1, 'a')), "valid");
}

TEST(NamesTest, InvalidChannelNamesAreRefusedWithTheReason) {
  const std::string rule = "; use /segment[/segment...] with letters, digits, '_' and '-', at most 100 bytes";
  EXPECT_EQ(name_error("imu"), "channel name \"imu\" must start with '/'" + rule);
  EXPECT_EQ(name_error(""), "channel name \"\" must start with '/'" + rule);
  EXPECT_EQ(name_error("/a/"), "channel name \"/a/\" must not end with '/'" + rule);
  EXPECT_EQ(name_error("/a//b"), "channel name \"/a//b\" has an empty segment ('//')" + rule);
  EXPECT_EQ(name_error("/a.b"), "channel name \"/a.b\" has the character '.' at position 2" + rule);
  EXPECT_EQ(name_error("/a b"), "channel name \"/a b\" has the character ' ' at position 2" + rule);
  const std::string long_name = "/" + std::string(kMaxChannelName, 'a');
  EXPECT_EQ(name_error(long_name), "channel name \"" + long_name + "\" is 101 bytes long" + rule);
}

TEST(NamesTest, DomainAndNodeNamesAreChecked) {
  EXPECT_NO_THROW(validate_domain_name("robot_1-a"));
  EXPECT_THROW(validate_domain_name(""), Error);
  EXPECT_THROW(validate_domain_name("a.b"), Error);
  EXPECT_THROW(validate_domain_name(std::string(33, 'a')), Error);
  EXPECT_NO_THROW(validate_node_name("camera_driver"));
  EXPECT_THROW(validate_node_name("has space"), Error);
}

TEST(NamesTest, ObjectNamesMapSlashesOneToOne) {
  EXPECT_EQ(channel_object_name("d1", "/camera/front"), "shmbus.d1.c.camera.front");
  EXPECT_EQ(registry_object_name("d1"), "shmbus.d1.registry");
  EXPECT_NE(channel_object_name("d1", "/a/b"), channel_object_name("d1", "/a_b"));
}

TEST(NamesTest, AServicesChannelsNameItsService) {
  EXPECT_EQ(service_client_response_channel("/map/get", 7), "/map/get/_response/7");
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response/7"), "/map/get");
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response/31"), "/map/get");
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response"), "");
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response/x"), "");
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response/100"), "");  // a slot is below 32
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response/32"), "");
  EXPECT_EQ(service_of_client_response_channel("/map/get/_response/07"), "");
  EXPECT_EQ(service_of_client_response_channel("/_response/3"), "");
  for (const char* channel : {"/map/get/_request", "/map/get/_response", "/map/get/_response/0"}) {
    EXPECT_EQ(service_of_channel(channel), "/map/get") << channel;
  }
  EXPECT_EQ(service_of_channel("/map/get"), "");
  EXPECT_EQ(service_of_channel("/map/_requests"), "");
}
