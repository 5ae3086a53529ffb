#pragma once
// Terminal output for shmtool: aligned tables, human numbers with units, and
// colour only when stdout is a terminal (and NO_COLOR is unset).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/monitor/levels.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::tool {

/// Writes `text` to stdout and flushes it (output may be a pipe a script
/// reads line by line while the command runs).
void print(std::string_view text);
/// `j` indented, then a newline.
void print_json(const schema::Json& j);

/// "12", "12.3k", "4.56M", "7.89G": three significant digits from 10,000 on.
std::string human_count(std::uint64_t n);
/// "200.0 Hz", "1.234 kHz", "12.35 MHz"; "-" for no rate (0 or NaN).
std::string human_rate(double hz);
/// Seconds as "4.99 ms", "12.3 us", "87 ns", "1.50 s"; "-" for NaN.
std::string human_seconds(double s);
/// "512 B", "12.3 KiB", "4.56 MiB", "7.89 GiB".
std::string human_bytes(std::uint64_t n);
/// A wall time for --begin/--end: nanoseconds since the epoch, or ISO 8601
/// in UTC ("2026-11-23T10:00:00", fractions and a trailing Z allowed).
/// Throws Error(kInvalidArgument) naming `command` and `option`.
std::uint64_t parse_wall_time(const std::string& command, const std::string& option, const std::string& text);

/// One progress line on stderr for long work (bag export, recover, filter,
/// merge, compress): updated at most 10 times a second, and only when
/// stderr is a terminal and not `quiet`; cleared when done.
class ProgressLine {
 public:
  ProgressLine(std::string verb, bool quiet);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  /// Messages done of `total`, bytes written so far.
  void update(std::uint64_t done, std::uint64_t total, std::uint64_t bytes_written);
  /// Bytes of the input read of `total` (when the message count is not
  /// known: a file without its summary).
  void update_bytes(std::uint64_t read, std::uint64_t total);
  /// Erases the line (before the summary is printed).
  void clear();

 private:
  bool due();
  [[nodiscard]] std::pair<double, double> pace(std::uint64_t done, std::uint64_t total) const;
  void draw(const std::string& text);

  std::string verb_;
  bool on_;
  std::int64_t start_ns_;
  std::int64_t next_ns_ = 0;
  bool drawn_ = false;
};

/// A JSON number, or null for NaN and infinities (JSON has neither).
schema::Json json_number(double x);

/// A decoded message as YAML, like `ros2 topic echo`: one `key: value` per
/// field, nested messages indented, arrays of numbers on one line and cut
/// after `max_array` elements (JSON output shows them all).
std::string to_yaml(const schema::Json& message, std::size_t max_array = 64);

/// Whether stdout gets colour: a TTY and no NO_COLOR in the environment.
bool colour_stdout();
/// `text` in the colour of `level` (green, yellow, red) when `colour`.
std::string coloured_level(monitor::Level level, bool colour);

/// Columns padded to their widest cell; cells may hold ANSI colour codes,
/// which take no width. Numbers (columns marked right) align right.
class Table {
 public:
  /// Header names; a name ending in '>' is right-aligned (the '>' is dropped).
  explicit Table(std::vector<std::string> header);
  void add(std::vector<std::string> row);
  [[nodiscard]] bool empty() const noexcept { return rows_.empty(); }
  /// The table, one line per row, `indent` spaces before each.
  [[nodiscard]] std::string render(std::size_t indent = 0) const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

/// Display width of `s`: UTF-8 code points, ANSI escape sequences excluded.
std::size_t display_width(std::string_view s);

}  // namespace shmbus::tool
