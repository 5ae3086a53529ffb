// shmtool's terminal formatting: human numbers, aligned tables with colour
// codes, the YAML form of a decoded message.
#include <gtest/gtest.h>

#include <cmath>

#include "format.hpp"

using namespace shmbus::tool;

TEST(ShmtoolFormat, HumanNumbersKeepThreeSignificantDigits) {
  EXPECT_EQ(human_count(0), "0");
  EXPECT_EQ(human_count(9999), "9999");
  EXPECT_EQ(human_count(12345), "12.3k");
  EXPECT_EQ(human_count(999'499), "999k");
  EXPECT_EQ(human_count(999'949), "1.00M");
  EXPECT_EQ(human_count(4'560'000'000ULL), "4.56G");
  EXPECT_EQ(human_rate(0), "-");
  EXPECT_EQ(human_rate(std::nan("")), "-");
  EXPECT_EQ(human_rate(1.5), "1.500 Hz");
  EXPECT_EQ(human_rate(200.004), "200.0 Hz");
  EXPECT_EQ(human_rate(16'600'000), "16.600 MHz");
  EXPECT_EQ(human_seconds(0.005), "5.00 ms");
  EXPECT_EQ(human_seconds(12.3e-6), "12.3 us");
  EXPECT_EQ(human_seconds(87e-9), "87 ns");
  EXPECT_EQ(human_seconds(1.5), "1.50 s");
  EXPECT_EQ(human_seconds(std::nan("")), "-");
  EXPECT_TRUE(json_number(std::nan("")).is_null());
  EXPECT_EQ(json_number(0.25), 0.25);
}

TEST(ShmtoolFormat, TableAlignsColumnsIgnoringColourCodes) {
  Table t({"NAME", "RATE>", "LEVEL"});
  t.add({"/a", "1.000 Hz", coloured_level(shmbus::monitor::Level::kCritical, true)});
  t.add({"/longer/name", "200.0 Hz", "nominal"});
  const std::string out = t.render();
  EXPECT_EQ(out,
            "NAME              RATE  LEVEL\n"
            "/a            1.000 Hz  \033[1;31mcritical\033[0m\n"
            "/longer/name  200.0 Hz  nominal\n");
  EXPECT_EQ(display_width("\033[32mnominal\033[0m"), 7U);
  EXPECT_EQ(display_width("µs"), 2U);
  EXPECT_EQ(coloured_level(shmbus::monitor::Level::kDegraded, false), "degraded");
}

TEST(ShmtoolFormat, MessagesPrintAsYaml) {
  const shmbus::schema::Json m = shmbus::schema::Json::parse(
      R"({"header": {"seq": 3, "frame_id": "map"}, "v": [1, 2, 3], "poses": [{"x": 1, "y": 2}, {"x": 3, "y": 4}],
          "e": {}, "big": [0, 1, 2, 3, 4]})");
  EXPECT_EQ(to_yaml(m, 4),
            "header:\n"
            "  seq: 3\n"
            "  frame_id: \"map\"\n"
            "v: [1, 2, 3]\n"
            "poses:\n"
            "  - x: 1\n"
            "    y: 2\n"
            "  - x: 3\n"
            "    y: 4\n"
            "e: {}\n"
            "big: [0, 1, 2, 3, ... (1 more)]\n");
}
