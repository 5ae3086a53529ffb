#include "shmbus/schema_text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "fnv.hpp"

namespace shmbus::schema {

std::uint64_t hash_text(std::string_view canonical_text) noexcept { return detail::fnv1a64(canonical_text); }

std::string first_difference(std::string_view a, std::string_view b) {
  std::string message;  // the MSG section both are in
  int field = 0;
  std::size_t pa = 0, pb = 0;
  while (pa < a.size() || pb < b.size()) {
    const std::size_t ea = std::min(a.find('\n', pa), a.size());
    const std::size_t eb = std::min(b.find('\n', pb), b.size());
    const std::string_view la = pa < a.size() ? a.substr(pa, ea - pa) : std::string_view{};
    const std::string_view lb = pb < b.size() ? b.substr(pb, eb - pb) : std::string_view{};
    if (la != lb) {
      const auto show = [](std::string_view l) { return l.empty() ? std::string{"nothing"} : fmt::format("'{}'", l); };
      return fmt::format("{}line {} differs: {} here, {} there", message.empty() ? "" : "in " + message + ", ",
                         field + 1, show(la), show(lb));
    }
    if (la.rfind("MSG: ", 0) == 0) {
      message = std::string{la.substr(5)};
      field = 0;
    } else {
      ++field;
    }
    pa = ea + 1;
    pb = eb + 1;
  }
  return "";
}

}  // namespace shmbus::schema
