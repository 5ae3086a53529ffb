// shmbus-bridge connect: the bridge as a client of a remote rosbridge v2
// server. The link is a Session in client mode, so exports go through the
// same subscriptions and bounded queue as a server's clients, and imports
// through the same publish path.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <mutex>
#include <thread>

#include "rosbridge.hpp"
#include "shmbus/service_shell/tls.hpp"

namespace shmbus::bridge {

using schema::Json;

namespace {

struct WsUrl {
  std::string host;
  std::string port;
  std::string target = "/";
  std::string authority;  ///< HOST[:PORT] as written: the Host header
  bool tls = false;
};

/// ws://HOST[:PORT][/PATH] or wss://... (ports 80 and 443 by default;
/// IPv6 addresses in brackets).
WsUrl parse_ws_url(const std::string& url) {
  const auto bad = [&] {
    throw Error(Errc::kConfig,
                fmt::format("\"{}\" is not ws://HOST[:PORT][/PATH] or wss://... (e.g. ws://127.0.0.1:9090)", url));
  };
  WsUrl u;
  std::string rest;
  if (url.starts_with("ws://")) {
    rest = url.substr(5);
  } else if (url.starts_with("wss://")) {
    rest = url.substr(6);
    u.tls = true;
  } else {
    bad();
  }
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    u.target = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  u.authority = rest;
  std::string::size_type host_end = rest.size();
  if (rest.starts_with('[')) {
    host_end = rest.find(']');
    if (host_end == std::string::npos || host_end == 1) bad();
    u.host = rest.substr(1, host_end - 1);
    ++host_end;
  } else {
    host_end = std::min(rest.find(':'), rest.size());
    u.host = rest.substr(0, host_end);
  }
  if (u.host.empty()) bad();
  if (host_end == rest.size()) {
    u.port = u.tls ? "443" : "80";
  } else {
    if (rest[host_end] != ':') bad();
    u.port = rest.substr(host_end + 1);
    if (u.port.empty() || u.port.size() > 5 || u.port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(u.port) > 65535) {
      bad();
    }
  }
  return u;
}

BridgeSettings for_link() {
  // The peer is one server sending every import: no per-client rate limit.
  BridgeSettings b;
  b.max_ops_per_second = 10'000'000;
  return b;
}

}  // namespace

struct Uplink::Impl {
  Impl(const Config& config, UplinkOptions o)
      : options(std::move(o)), url(parse_ws_url(options.url)), hub(config, for_link(), io), retry(io), resolver(io) {
    if (url.tls) tls.emplace(service_shell::client_tls(options.tls_ca));
    hub.start_reader();
    asio::post(io, [this] { connect(); });
    thread = std::thread([this] { io.run(); });
  }

  ~Impl() {
    io.stop();
    thread.join();
    stopping = true;
    hub.shutdown_sessions();
    session.reset();
    hub.stop();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void connect() {
    resolver.async_resolve(url.host, url.port, [this](beast::error_code ec, const tcp::resolver::results_type& r) {
      if (ec) {
        spdlog::warn("remote {}: cannot resolve {}: {}", options.url, url.host, ec.message());
        schedule();
        return;
      }
      auto socket = std::make_shared<tcp::socket>(io);
      asio::async_connect(*socket, r, [this, socket](beast::error_code cec, const tcp::endpoint&) {
        if (cec) {
          spdlog::warn("remote {}: {}; retrying in {} ms", options.url, cec.message(), backoff_ms);
          schedule();
          return;
        }
        if (tls) {
          handshake(std::move(*socket));
        } else {
          open(Stream(std::move(*socket)));
        }
      });
    });
  }

  /// wss://: the TLS handshake, verifying the server's certificate against
  /// the trusted authorities and the URL's host name.
  void handshake(tcp::socket socket) {
    auto stream = std::make_shared<Stream>(std::move(socket), *tls);
    stream->verify_host(url.host);
    stream->tcp().expires_after(std::chrono::seconds(10));
    stream->async_handshake(beast::role_type::client, [this, stream](beast::error_code hec) {
      if (hec) {
        spdlog::warn("remote {}: TLS handshake failed: {}{}; retrying in {} ms", options.url,
                     service_shell::tls_failure(hec),
                     options.tls_ca.empty() ? " (a private authority? trust it with --tls-ca FILE)" : "", backoff_ms);
        schedule();
        return;
      }
      open(Stream(std::move(*stream)));
    });
  }

  void open(Stream stream) {
    session = std::make_shared<RosbridgeSession>(hub, std::move(stream));
    session->on_close([this] { down(); });
    session->start_client(url.authority, url.target, [this] { up(); });
  }

  void schedule() {
    retry.expires_after(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<std::int64_t>(backoff_ms * 2, 5000);
    retry.async_wait([this](beast::error_code ec) {
      if (!ec) connect();
    });
  }

  void up() {
    backoff_ms = 250;
    {
      const std::lock_guard lock(mutex);
      ++figures.connects;
      figures.connected = true;
    }
    spdlog::info("connected to {}; checking the types of {} exports and {} imports", options.url,
                 options.exports.size(), options.imports.size());
    for (const std::string& topic : options.exports) ask_type(topic, true);
    for (const std::string& topic : options.imports) ask_type(topic, false);
  }

  void down() {
    if (stopping) return;
    {
      const std::lock_guard lock(mutex);
      figures.connected = false;
    }
    // What the exports publish from now until the next link is lost to the
    // remote side: their message counts now, compared at reconnect.
    for (const auto& [topic, flowing] : exporting) {
      if (const auto v = hub.catalog().view(topic)) marks[topic] = v->messages;
    }
    exporting.clear();
    spdlog::warn("link to {} is down; reconnecting (backoff from {} ms)", options.url, backoff_ms);
    session.reset();
    schedule();
  }

  void refuse(const std::string& message) {
    spdlog::error("{}", message);
    const std::lock_guard lock(mutex);
    ++figures.refused_topics;
  }

  void ask_type(const std::string& topic, bool is_export) {
    std::weak_ptr<RosbridgeSession> weak = session;
    session->send_op(Json{{"op", "call_service"}, {"service", "/rosapi/topic_type"}, {"args", {{"topic", topic}}}},
                     [this, weak, topic, is_export](const Json& reply) {
                       const auto s = weak.lock();
                       if (!s || s != session) return;  // an answer from a link that is gone
                       std::string remote;
                       if (reply.value("result", false) && reply.contains("values") && reply["values"].is_object()) {
                         remote = reply["values"].value("type", std::string{});
                       } else {
                         refuse(fmt::format("{} {}: the remote side did not answer /rosapi/topic_type: {}",
                                            is_export ? "export" : "import", topic,
                                            reply.contains("values") ? dump_json(reply["values"]) : dump_json(reply)));
                         return;
                       }
                       if (is_export) {
                         start_export(topic, remote);
                       } else {
                         start_import(topic, remote);
                       }
                     });
  }

  void start_export(const std::string& topic, const std::string& remote) {
    hub.refresh();
    const ChannelEntry* local = hub.catalog().find(topic);
    if (local == nullptr) {
      refuse(
          fmt::format("export {}: refused: no local channel {} in domain \"{}\" (it is tried again at the next "
                      "link)",
                      topic, topic, hub.catalog().domain()));
      return;
    }
    if (const auto refusal = type_mismatch(topic, "the remote side", remote, local->type.name, "nothing flows on it")) {
      refuse(fmt::format("export {}: refused: {}", topic, *refusal));
      return;
    }
    if (const auto mark = marks.find(topic); mark != marks.end()) {
      if (const auto v = hub.catalog().view(topic); v && v->messages > mark->second) {
        const std::uint64_t lost = v->messages - mark->second;
        spdlog::warn("export {}: {} messages were published while the link was down (lost to the remote side)", topic,
                     lost);
        const std::lock_guard lock(mutex);
        figures.link_lost += lost;
      }
      marks.erase(mark);
    }
    session->send_op(Json{{"op", "advertise"}, {"topic", topic}, {"type", local->type.name}});
    session->handle(Json{{"op", "subscribe"}, {"topic", topic}, {"type", local->type.name}});
    exporting[topic] = true;
    spdlog::info("export {} ({}): flowing", topic, local->type.name);
  }

  void start_import(const std::string& topic, const std::string& remote) {
    if (remote.empty()) {
      refuse(fmt::format("import {}: refused: the remote side has no topic {} (it is tried again at the next link)",
                         topic, topic));
      return;
    }
    hub.refresh();
    const ChannelEntry* local = hub.catalog().find(topic);
    if (const auto refusal =
            local != nullptr ? type_mismatch(topic, "the remote side", remote, local->type.name, "nothing flows on it")
                             : std::nullopt) {
      refuse(fmt::format("import {}: refused: {}", topic, *refusal));
      return;
    }
    // The local publisher first (it creates the channel when a local
    // channel carries the type), then the remote subscription.
    session->handle(Json{{"op", "advertise"}, {"topic", topic}, {"type", remote}});
    session->send_op(Json{{"op", "subscribe"}, {"topic", topic}, {"type", remote}});
    spdlog::info("import {} ({}): flowing", topic, remote);
  }

  UplinkOptions options;
  WsUrl url;
  asio::io_context io{1};
  Hub hub;
  asio::steady_timer retry;
  tcp::resolver resolver;
  std::optional<ssl::context> tls;  ///< wss://
  std::shared_ptr<RosbridgeSession> session;
  std::int64_t backoff_ms = 250;
  bool stopping = false;  ///< set once the network thread has ended
  std::map<std::string, bool> exporting;
  std::map<std::string, std::uint64_t> marks;  ///< export -> its message count when the link went down
  mutable std::mutex mutex;                    ///< figures, between the network thread and stats()
  UplinkStats figures;
  std::thread thread;
};

Uplink::Uplink(const Config& config, UplinkOptions options)
    : impl_(std::make_unique<Impl>(config, std::move(options))) {}
Uplink::~Uplink() = default;

UplinkStats Uplink::stats() const {
  UplinkStats s;
  {
    const std::lock_guard lock(impl_->mutex);
    s = impl_->figures;
  }
  s.bridge = impl_->hub.stats();
  return s;
}

}  // namespace shmbus::bridge
