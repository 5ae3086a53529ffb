#include "shmbus/schema/type_catalog.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>

#include "shipped_messages.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus::schema {

namespace fs = std::filesystem;

namespace {

/// Types named in a "not found" message, at most.
constexpr std::size_t kKnownListed = 40;

const ShippedMessage* shipped(std::string_view package, std::string_view name, std::string_view kind) {
  for (const ShippedMessage& m : shipped_messages()) {
    if (package == m.package && name == m.name && kind == m.kind) return &m;
  }
  return nullptr;
}

/// `suffix` taken off `stem`, or empty when it does not end so.
std::string without(std::string_view stem, std::string_view suffix);

/// The shipped file that defines message type `type` of `package`: a
/// message, or a part of a shipped service; nullptr when none does.
const ShippedMessage* shipped_type(std::string_view package, std::string_view type) {
  if (const ShippedMessage* m = shipped(package, type, "msg")) return m;
  for (const char* suffix : {"_Request", "_Response"}) {
    if (auto base = without(type, suffix); !base.empty()) {
      if (const ShippedMessage* m = shipped(package, base, "srv")) return m;
    }
  }
  return nullptr;
}

/// `stem` without `suffix`, or empty when it does not end so.
std::string without(std::string_view stem, std::string_view suffix) {
  if (stem.size() <= suffix.size() || !stem.ends_with(suffix)) return {};
  return std::string{stem.substr(0, stem.size() - suffix.size())};
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> roots;
  while (!list.empty()) {
    const auto colon = list.find(':');
    if (colon != 0) roots.emplace_back(list.substr(0, colon));
    list = colon == std::string_view::npos ? std::string_view{} : list.substr(colon + 1);
  }
  return roots;
}

TypeCatalog::TypeCatalog(std::vector<std::string> msg_paths, bool read_environment) : roots_(std::move(msg_paths)) {
  if (read_environment) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): programs build their catalog before they start threads
    if (const char* env = std::getenv("SHMBUS_MSG_PATH"); env != nullptr) {
      for (std::string& r : split_path_list(env)) roots_.push_back(std::move(r));
    }
    // A sourced ROS 2 workspace: each prefix's share folder.
    // NOLINTNEXTLINE(concurrency-mt-unsafe): as above
    if (const char* env = std::getenv("AMENT_PREFIX_PATH"); env != nullptr) {
      for (const std::string& prefix : split_path_list(env)) roots_.push_back((fs::path(prefix) / "share").string());
    }
  }
}

std::string TypeCatalog::locate(std::string_view full_name) const {
  const std::string name = short_type_name(full_name);
  const auto slash = name.find('/');
  if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) return {};
  const std::string package = name.substr(0, slash);
  const std::string type = name.substr(slash + 1);
  if (package.empty() || type.empty() || package.find("..") != std::string::npos) return {};
  if (const ShippedMessage* m = shipped_type(package, type)) {
    return fmt::format("<shipped>/{}/{}.{}", package, m->name, m->kind);
  }
  // The files that may define it: a message, or a part of a service or an
  // action, flat (<pkg>/<Name>.*) or in the share layout (<pkg>/msg/...).
  std::vector<std::pair<std::string, std::string>> files{{"msg", type + ".msg"}};
  for (const char* suffix : {"_Request", "_Response"}) {
    if (auto base = without(type, suffix); !base.empty()) files.emplace_back("srv", base + ".srv");
  }
  for (const char* suffix : {"_Goal", "_Result", "_Feedback", "_SendGoal_Request", "_SendGoal_Response",
                             "_GetResult_Request", "_GetResult_Response", "_FeedbackMessage"}) {
    if (auto base = without(type, suffix); !base.empty()) files.emplace_back("action", base + ".action");
  }
  for (const std::string& root : roots_) {
    for (const auto& [kind, file] : files) {
      for (const fs::path& p : {fs::path(root) / package / kind / file, fs::path(root) / package / file}) {
        if (is_file(p)) return p.string();
      }
    }
  }
  return {};
}

bool TypeCatalog::contains(std::string_view full_name) const { return !locate(full_name).empty(); }

bool TypeCatalog::load(MessageSet& set, const std::string& full_name) const {
  const std::string name = short_type_name(full_name);
  const std::string where = locate(name);
  if (where.empty()) return false;
  const auto slash = name.find('/');
  if (const ShippedMessage* m = shipped_type(name.substr(0, slash), name.substr(slash + 1))) {
    set.add_text(m->package, m->name, m->kind, m->text, where);
    return set.has(name);
  }
  set.add_file(where);
  return set.has(name);
}

std::vector<std::string> TypeCatalog::known() const {
  std::set<std::string> names;
  for (const ShippedMessage& m : shipped_messages()) {
    if (std::string_view(m.kind) == "msg") {
      names.insert(fmt::format("{}/{}", m.package, m.name));
    } else {
      names.insert(fmt::format("{}/{}", m.package, service_request_type(m.name)));
      names.insert(fmt::format("{}/{}", m.package, service_response_type(m.name)));
    }
  }
  const auto add_folder = [&](const std::string& package, const fs::path& folder) {
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(folder, ec)) {
      if (f.path().extension() == ".msg") names.insert(package + "/" + f.path().stem().string());
    }
  };
  for (const std::string& root : roots_) {
    std::error_code ec;
    for (const auto& pkg : fs::directory_iterator(root, ec)) {
      if (!pkg.is_directory(ec)) continue;
      const std::string package = pkg.path().filename().string();
      add_folder(package, pkg.path());
      add_folder(package, pkg.path() / "msg");
    }
  }
  return {names.begin(), names.end()};
}

Schema TypeCatalog::find(std::string_view full_name) const {
  const std::string name = short_type_name(full_name);
  auto set = std::make_shared<MessageSet>();
  if (!load(*set, name)) {
    const std::vector<std::string> all = known();
    std::vector<std::string> listed(all.begin(),
                                    all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), kKnownListed)));
    const std::string more = all.size() > listed.size() ? fmt::format(" and {} more", all.size() - listed.size()) : "";
    const std::string looked = roots_.empty() ? std::string("the shipped definitions only")
                                              : fmt::format("the shipped definitions and {}", fmt::join(roots_, ", "));
    throw Error(Errc::kInvalidArgument,
                fmt::format("unknown message type '{}' (looked in {}); known: {}{}; add definitions with --msg-path "
                            "DIR or SHMBUS_MSG_PATH (DIR/<package>/<Name>.msg or DIR/<package>/msg/<Name>.msg)",
                            full_name, looked, fmt::join(listed, ", "), more));
  }
  // Only what the type uses is read: a broken definition elsewhere in a
  // root fails only the types that use it.
  set->load_missing([&](const std::string& n) { return load(*set, n); });
  set->resolve();
  return Schema::from_set(std::move(set), name);
}

}  // namespace shmbus::schema
