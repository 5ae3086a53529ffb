#include "shmbus/config_reader.hpp"

#include "shmbus/config.hpp"
#include "shmbus/error.hpp"

namespace shmbus {

void TomlReader::fail(const toml::node& at, const std::string& what) const { fail(at.source(), what); }

void TomlReader::fail(const toml::source_region& region, const std::string& what) const {
  const auto& where = region.begin;
  throw Error(Errc::kConfig,
              source_ + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " + what);
}

std::string TomlReader::position(const toml::node& n) const {
  return source_ + ":" + std::to_string(n.source().begin.line) + ":" + std::to_string(n.source().begin.column);
}

std::string TomlReader::string_of(const toml::node& n, std::string_view key) const {
  if (const auto* s = n.as_string()) return s->get();
  fail(n, std::string{key} + " must be a string");
}

std::vector<std::string> TomlReader::strings_of(const toml::node& n, std::string_view key) const {
  const auto* list = n.as_array();
  if (list == nullptr) fail(n, std::string{key} + " must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : *list) out.push_back(string_of(e, key));
  return out;
}

std::int64_t TomlReader::integer_of(const toml::node& n, std::string_view key) const {
  if (const auto* i = n.as_integer()) return i->get();
  fail(n, std::string{key} + " must be an integer");
}

std::uint32_t TomlReader::bounded(const toml::node& n, std::string_view key, std::int64_t lo, std::int64_t hi) const {
  const std::int64_t v = integer_of(n, key);
  if (v < lo || v > hi) {
    fail(n, std::string{key} + " = " + std::to_string(v) + " must be from " + std::to_string(lo) + " to " +
                std::to_string(hi));
  }
  return static_cast<std::uint32_t>(v);
}

std::uint32_t TomlReader::power_of_two(const toml::node& n, std::string_view key, std::int64_t max) const {
  const std::int64_t v = integer_of(n, key);
  if (v < 2 || v > max || (v & (v - 1)) != 0) {
    fail(n, std::string{key} + " = " + std::to_string(v) + " must be a power of two from 2 to " + std::to_string(max));
  }
  return static_cast<std::uint32_t>(v);
}

std::chrono::nanoseconds TomlReader::duration_of(const toml::node& n, std::string_view key) const {
  const std::string text = string_of(n, key);
  const auto d = parse_duration(text);
  if (!d || d->count() <= 0) {
    fail(n, std::string{key} + " = \"" + text +
                "\" is not a positive duration; write a number and a unit (ns, us, ms, s, min), e.g. \"100ms\"");
  }
  return *d;
}

const toml::table& TomlReader::table_of(const toml::node& n, std::string_view name) const {
  const auto* t = n.as_table();
  if (t == nullptr) fail(n, std::string{name} + " must be a table ([" + std::string{name} + "])");
  return *t;
}

std::vector<const toml::table*> TomlReader::entries_of(const toml::node& n, std::string_view name) const {
  const auto* arr = n.as_array();
  const std::string brackets = "([[" + std::string{name} + "]])";
  if (arr == nullptr) fail(n, std::string{name} + " must be an array of tables " + brackets);
  std::vector<const toml::table*> out;
  for (const auto& e : *arr) {
    const auto* t = e.as_table();
    if (t == nullptr) fail(e, "each " + std::string{name} + " entry must be a table " + brackets);
    out.push_back(t);
  }
  return out;
}

}  // namespace shmbus
