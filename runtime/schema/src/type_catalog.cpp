#include "shmbus/schema/type_catalog.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <utility>

#include "shipped_messages.hpp"
#include "shmbus/error.hpp"

namespace shmbus::schema {

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> roots;
  while (!list.empty()) {
    const auto colon = list.find(':');
    if (colon != 0) roots.emplace_back(list.substr(0, colon));
    list = colon == std::string_view::npos ? std::string_view{} : list.substr(colon + 1);
  }
  return roots;
}

TypeCatalog::TypeCatalog(std::vector<std::string> msg_paths, bool read_environment)
    : set_(std::make_shared<MessageSet>()), roots_(std::move(msg_paths)) {
  for (const ShippedMessage& m : shipped_messages()) {
    set_->add(m.package, m.name, m.text, fmt::format("<shipped>/{}/{}.msg", m.package, m.name));
  }
  if (read_environment) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): programs build their catalog before they start threads
    if (const char* env = std::getenv("SHMBUS_MSG_PATH"); env != nullptr) {
      for (std::string& r : split_path_list(env)) roots_.push_back(std::move(r));
    }
  }
  for (const std::string& r : roots_) set_->add_directory(r);
  set_->resolve();
}

bool TypeCatalog::contains(std::string_view full_name) const { return set_->find(full_name) != nullptr; }

Schema TypeCatalog::find(std::string_view full_name) const {
  if (contains(full_name)) return Schema::from_set(set_, full_name);
  std::string known;
  for (const MessageDef* m : set_->messages()) known += (known.empty() ? "" : ", ") + m->name;
  const std::string looked = roots_.empty() ? std::string("the shipped definitions only")
                                            : fmt::format("the shipped definitions and {}", fmt::join(roots_, ", "));
  throw Error(Errc::kInvalidArgument,
              fmt::format("unknown message type '{}' (looked in {}); known: {}; add definitions with --msg-path DIR "
                          "or SHMBUS_MSG_PATH (DIR/<package>/<Name>.msg)",
                          full_name, looked, known));
}

}  // namespace shmbus::schema
