#include "format.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>

#include "shmbus/error.hpp"

namespace shmbus::tool {

void print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void print_json(const schema::Json& j) { print(j.dump(2) + "\n"); }

std::string human_count(std::uint64_t n) {
  if (n < 10'000) return std::to_string(n);
  static constexpr const char* kSuffix[] = {"k", "M", "G", "T", "P", "E"};
  double v = static_cast<double>(n);
  int i = -1;
  while (v >= 999.5 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.{}f}{}", v, v < 9.995 ? 2 : v < 99.95 ? 1 : 0, kSuffix[i]);
}

std::string human_rate(double hz) {
  if (!(hz > 0) || !std::isfinite(hz)) return "-";
  if (hz < 1000) return fmt::format("{:.{}f} Hz", hz, hz < 10 ? 3 : hz < 100 ? 2 : 1);
  if (hz < 1e6) return fmt::format("{:.3f} kHz", hz / 1e3);
  return fmt::format("{:.3f} MHz", hz / 1e6);
}

std::string human_bytes(std::uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n) / 1024;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : v < 100 ? 1 : 0, units[u]);
}

std::string human_seconds(double s) {
  if (std::isnan(s)) return "-";
  const double a = std::fabs(s);
  const auto three = [](double v, const char* unit) {
    return fmt::format("{:.{}f} {}", v, std::fabs(v) < 9.995 ? 2 : std::fabs(v) < 99.95 ? 1 : 0, unit);
  };
  if (a >= 1 || a == 0) return a == 0 ? "0 s" : three(s, "s");
  if (a >= 1e-3) return three(s * 1e3, "ms");
  if (a >= 1e-6) return three(s * 1e6, "us");
  return fmt::format("{:.0f} ns", s * 1e9);
}

schema::Json json_number(double x) { return std::isfinite(x) ? schema::Json(x) : schema::Json(nullptr); }

namespace {

void yaml_object(const schema::Json& object, std::size_t indent, std::size_t max_array, std::string& out) {
  const std::string pad(indent, ' ');
  for (const auto& [key, value] : object.items()) {
    out += pad + key + ":";
    if (value.is_object()) {
      if (value.empty()) {
        out += " {}\n";
      } else {
        out += '\n';
        yaml_object(value, indent + 2, max_array, out);
      }
    } else if (value.is_array() && !value.empty() && value.front().is_object()) {
      out += '\n';
      for (const auto& element : value) {
        std::string item;
        yaml_object(element, indent + 4, max_array, item);
        out += pad + "  - " + item.substr(indent + 4);  // the first key goes on the dash line
      }
    } else if (value.is_array()) {
      out += " [";
      const std::size_t shown = std::min(value.size(), max_array);
      for (std::size_t i = 0; i < shown; ++i) {
        if (i != 0) out += ", ";
        out += value[i].dump();
      }
      if (shown < value.size()) out += fmt::format(", ... ({} more)", value.size() - shown);
      out += "]\n";
    } else {
      // Appended piece by piece: `" " + value.dump()` inserts at the front,
      // which GCC 12 at -O3 flags as an overlapping memcpy (-Wrestrict, a
      // false positive).
      out += ' ';
      out += value.dump();
      out += '\n';
    }
  }
}

}  // namespace

std::string to_yaml(const schema::Json& message, std::size_t max_array) {
  std::string out;
  yaml_object(message, 0, max_array, out);
  return out;
}

bool colour_stdout() {
  const char* no_colour = std::getenv("NO_COLOR");  // NOLINT(concurrency-mt-unsafe): shmtool has one thread
  return ::isatty(STDOUT_FILENO) == 1 && (no_colour == nullptr || *no_colour == '\0');
}

std::string coloured_level(monitor::Level level, bool colour) {
  const std::string_view text = monitor::to_string(level);
  if (!colour) return std::string(text);
  switch (level) {
    case monitor::Level::kNominal:
      return fmt::format("\033[32m{}\033[0m", text);
    case monitor::Level::kDegraded:
      return fmt::format("\033[33m{}\033[0m", text);
    case monitor::Level::kCritical:
      return fmt::format("\033[1;31m{}\033[0m", text);
    default:
      return std::string(text);
  }
}

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {  // CSI: ESC [ ... final byte in @..~
      while (++i < s.size() && !(s[i] >= '@' && s[i] <= '~' && s[i] != '[')) {
      }
      continue;
    }
    if ((c & 0xC0) != 0x80) ++width;  // count lead bytes only
  }
  return width;
}

Table::Table(std::vector<std::string> header) {
  for (std::string& h : header) {
    const bool right = !h.empty() && h.back() == '>';
    if (right) h.pop_back();
    right_.push_back(right);
    header_.push_back(std::move(h));
  }
}

void Table::add(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string Table::render(std::size_t indent) const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) {
    width[c] = display_width(header_[c]);
    for (const auto& r : rows_) width[c] = std::max(width[c], display_width(r[c]));
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string l(indent, ' ');
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = width[c] - display_width(cells[c]);
      const bool last = c + 1 == cells.size();
      if (right_[c]) l.append(pad, ' ');
      l += cells[c];
      if (!right_[c] && !last) l.append(pad, ' ');
      if (!last) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l;
    out += '\n';
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

std::uint64_t parse_wall_time(const std::string& command, const std::string& option, const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return std::stoull(text);
  std::tm tm{};
  const char* rest = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  double fraction = 0;
  if (rest != nullptr && *rest == '.') {
    char* after = nullptr;
    fraction = std::strtod(rest, &after);
    rest = after;
  }
  if (rest != nullptr && *rest == 'Z') ++rest;
  if (rest == nullptr || *rest != '\0') {
    throw Error(Errc::kInvalidArgument, command + ": " + option + " '" + text +
                                            "' is not a wall time; use UTC like 2026-11-23T10:00:00.5Z or "
                                            "nanoseconds since the epoch (see shmtool bag info for the span)");
  }
  return static_cast<std::uint64_t>(::timegm(&tm)) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(std::llround(fraction * 1e9));
}

ProgressLine::ProgressLine(std::string verb, bool quiet)
    : verb_(std::move(verb)), on_(!quiet && ::isatty(STDERR_FILENO) == 1), start_ns_(mono_now_ns()) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::clear() {
  if (drawn_) std::fputs("\r\033[K", stderr);
  drawn_ = false;
}

bool ProgressLine::due() {
  const std::int64_t now = mono_now_ns();
  if (!on_ || now < next_ns_) return false;
  next_ns_ = now + 100'000'000;  // at most 10 lines a second
  return true;
}

/// Done of total per second so far, and the seconds left at that rate.
std::pair<double, double> ProgressLine::pace(std::uint64_t done, std::uint64_t total) const {
  const double elapsed_s = static_cast<double>(mono_now_ns() - start_ns_) / 1e9;
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  return {rate, rate > 0 && total > done ? static_cast<double>(total - done) / rate : 0.0};
}

void ProgressLine::draw(const std::string& text) {
  std::fprintf(stderr, "\r\033[K%s: %s", verb_.c_str(), text.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::update(std::uint64_t done, std::uint64_t total, std::uint64_t bytes_written) {
  if (!due()) return;
  const auto [rate, left_s] = pace(done, total);
  draw(fmt::format("{}/{} messages ({:.0f}%), {} written, {} msg/s, {:.0f} s left", done, total,
                   total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                   human_bytes(bytes_written), human_count(static_cast<std::uint64_t>(rate)), left_s));
}

void ProgressLine::update_bytes(std::uint64_t read, std::uint64_t total) {
  if (!due()) return;
  const auto [rate, left_s] = pace(read, total);
  draw(fmt::format("{} of {} read ({:.0f}%), {}/s, {:.0f} s left", human_bytes(read), human_bytes(total),
                   total > 0 ? 100.0 * static_cast<double>(read) / static_cast<double>(total) : 100.0,
                   human_bytes(static_cast<std::uint64_t>(rate)), left_s));
}

}  // namespace shmbus::tool
