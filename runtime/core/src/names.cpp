#include "shmbus/names.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>

#include "shmbus/error.hpp"
#include "shmbus/types.hpp"
#include "shmbus/utf8.hpp"

namespace shmbus {
namespace {

bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

void validate_channel_name(std::string_view name) {
  const auto bad = [&](const std::string& why) {
    throw Error(Errc::kInvalidArgument, "channel name \"" + std::string{name} + "\" " + why +
                                            "; use /segment[/segment...] with letters, digits, '_' and '-', at most " +
                                            std::to_string(kMaxChannelName) + " bytes");
  };
  if (name.empty() || name.front() != '/') bad("must start with '/'");
  if (name.size() > kMaxChannelName) bad("is " + std::to_string(name.size()) + " bytes long");
  if (name.back() == '/') bad("must not end with '/'");
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '/') {
      if (i + 1 < name.size() && name[i + 1] == '/') bad("has an empty segment ('//')");
    } else if (!is_name_char(c)) {
      bad("has the character '" + std::string(1, c) + "' at position " + std::to_string(i));
    }
  }
}

ChannelName::ChannelName(std::string_view name, std::string_view domain) : name_(name) {
  validate_channel_name(name_);
  object_ = channel_object_name(domain, name_);
  alias_ = shmbus::settings_alias(name_);
}

std::string settings_alias(std::string_view channel) {
  const std::string service = service_of_client_response_channel(channel);
  return service.empty() ? std::string{} : service_response_channel(service);
}

void validate_domain_name(std::string_view domain) {
  bool ok = !domain.empty() && domain.size() <= kMaxDomainName;
  for (char c : domain) ok = ok && is_name_char(c);
  if (!ok) {
    throw Error(Errc::kInvalidArgument,
                "domain \"" + std::string{domain} + "\" is not valid; use 1 to 32 letters, digits, '_' or '-'");
  }
}

void validate_node_name(std::string_view node) {
  bool ok = !node.empty() && node.size() <= kMaxNodeName;
  for (char c : node) ok = ok && c > ' ' && c < 127;
  if (!ok) {
    throw Error(Errc::kInvalidArgument, "node name \"" + std::string{node} +
                                            "\" is not valid; use 1 to 63 printable ASCII characters without spaces");
  }
}

namespace {
constexpr std::string_view kRequestSuffix = "/_request";
constexpr std::string_view kResponseSuffix = "/_response";
constexpr std::string_view kRequestTypeSuffix = "_Request";
constexpr std::string_view kResponseTypeSuffix = "_Response";

std::string concat(std::string_view a, std::string_view b) { return std::string{a}.append(b); }

std::string strip_suffix(std::string_view s, std::string_view suffix) {
  if (s.size() <= suffix.size() || s.substr(s.size() - suffix.size()) != suffix) return {};
  return std::string{s.substr(0, s.size() - suffix.size())};
}
}  // namespace

std::string service_request_channel(std::string_view service) { return concat(service, kRequestSuffix); }
std::string service_response_channel(std::string_view service) { return concat(service, kResponseSuffix); }
std::string short_type_name(std::string_view type) {
  const auto slash = type.find('/');
  if (slash == std::string_view::npos) return std::string{type};
  for (const std::string_view middle : {"msg/", "srv/", "action/"}) {
    const std::string_view rest = type.substr(slash + 1);
    if (rest.starts_with(middle) && rest.size() > middle.size() && rest.find('/', middle.size()) == rest.npos) {
      return fmt::format("{}/{}", type.substr(0, slash), rest.substr(middle.size()));
    }
  }
  return std::string{type};
}

std::string service_request_type(std::string_view service_type) { return concat(service_type, kRequestTypeSuffix); }
std::string service_response_type(std::string_view service_type) { return concat(service_type, kResponseTypeSuffix); }
std::string service_of_request_channel(std::string_view channel) { return strip_suffix(channel, kRequestSuffix); }
std::string service_type_of_request_type(std::string_view request_type) {
  return strip_suffix(request_type, kRequestTypeSuffix);
}
std::string service_client_response_channel(std::string_view service, std::uint32_t slot) {
  return concat(service, kResponseSuffix) + "/" + std::to_string(slot);
}
std::string service_of_client_response_channel(std::string_view channel) {
  const std::size_t last = channel.rfind('/');
  if (last == std::string_view::npos || last + 1 == channel.size()) return {};
  // Only a slot as service_client_response_channel writes it (below
  // kMaxChannelPublishers, no leading 0, no sign).
  const std::string_view slot = channel.substr(last + 1);
  std::uint32_t n = 0;
  const std::errc ec = std::from_chars(slot.data(), slot.data() + slot.size(), n).ec;
  if (ec != std::errc{} || n >= kMaxChannelPublishers || std::to_string(n) != slot) {
    return {};
  }
  return strip_suffix(channel.substr(0, last), kResponseSuffix);
}
std::string service_of_channel(std::string_view channel) {
  for (std::string service : {strip_suffix(channel, kRequestSuffix), strip_suffix(channel, kResponseSuffix),
                              service_of_client_response_channel(channel)}) {
    if (!service.empty()) return service;
  }
  return {};
}

namespace {
constexpr std::string_view kActionInfix = "/_action/";
}  // namespace

std::string action_part(std::string_view action, std::string_view part) {
  return concat(action, kActionInfix) + std::string{part};
}

std::string action_of_channel(std::string_view channel) {
  const std::string service = service_of_channel(channel);
  const std::string_view name = service.empty() ? channel : std::string_view{service};
  const std::size_t at = name.rfind(kActionInfix);
  if (at == std::string_view::npos || at == 0) return {};
  const std::string_view part = name.substr(at + kActionInfix.size());
  for (const std::string_view p : {"send_goal", "get_result", "cancel_goal", "feedback", "status"}) {
    if (part == p && (service.empty() == (p == "feedback" || p == "status"))) return std::string{name.substr(0, at)};
  }
  return {};
}

std::string action_type_of_send_goal_request(std::string_view request_type) {
  return strip_suffix(service_type_of_request_type(request_type), kActionSendGoalSuffix);
}

std::string domain_object_prefix(std::string_view domain) { return "shmbus." + std::string{domain} + "."; }

std::string registry_object_name(std::string_view domain) { return domain_object_prefix(domain) + "registry"; }

namespace {
/// Relaxed throughout: a count read by tests, ordering nothing else (no
/// partner); only channel opens touch it, never a publish or a take.
std::atomic<std::uint64_t> g_channel_object_name_calls{0};
}  // namespace

std::uint64_t detail::channel_object_name_calls() noexcept {
  return g_channel_object_name_calls.load(std::memory_order_relaxed);
}

std::string channel_object_name(std::string_view domain, std::string_view channel) {
  g_channel_object_name_calls.fetch_add(1, std::memory_order_relaxed);
  // '/' cannot appear in a POSIX shm name; '.' cannot appear in a channel
  // name, so the mapping is one-to-one.
  std::string out = domain_object_prefix(domain) + "c";
  for (char c : channel) out.push_back(c == '/' ? '.' : c);
  return out;
}

std::string ring_object_name(std::string_view domain, std::string_view channel, std::uint32_t generation) {
  std::string out = domain_object_prefix(domain) + "g" + std::to_string(generation);
  for (char c : channel) out.push_back(c == '/' ? '.' : c);
  return out;
}

std::string channel_of_ring_object(std::string_view domain, std::string_view object) {
  const std::string prefix = domain_object_prefix(domain) + "g";
  if (object.substr(0, prefix.size()) != prefix) return {};
  std::size_t i = prefix.size();
  const std::size_t digits = i;
  while (i < object.size() && object[i] >= '0' && object[i] <= '9') ++i;
  if (i == digits || i >= object.size() || object[i] != '.') return {};
  std::string channel{object.substr(i)};
  std::replace(channel.begin(), channel.end(), '.', '/');
  return channel;
}

std::string escape_name(std::string_view name) {
  const auto plain = [&](std::size_t i, std::size_t n) {
    if (n != 1)
      return n != 0 && !(static_cast<unsigned char>(name[i]) == 0xC2 &&
                         static_cast<unsigned char>(name[i + 1]) < 0xA0);  // not a C1 control
    const auto c = static_cast<unsigned char>(name[i]);
    return c >= 0x20 && c != 0x7F && c != '\\';
  };
  bool clean = true;
  for (std::size_t i = 0; i < name.size() && clean;) {
    const std::size_t n = utf8_sequence(name, i);
    clean = plain(i, n);
    i += n;
  }
  if (clean) return std::string{name};
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t n = utf8_sequence(name, i);
    if (plain(i, n)) {
      out.append(name.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(name[i]));
      ++i;
    }
  }
  return out;
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "unknown";
  return name.data();
}

}  // namespace shmbus
