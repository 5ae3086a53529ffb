#include "peer_transports.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/interprocess/ipc/message_queue.hpp>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <thread>

#include "point_cloud.hpp"
#include "sensor_msgs/msg/compressed_image.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/node.hpp"
#include "shmbus/rclcpp.hpp"
#include "shmbus/service.hpp"
#include "shmbus/shmbus.hpp"

#if SHMBUS_BENCH_ICEORYX
#include "iceoryx_hoofs/log/logmanager.hpp"
#include "iceoryx_posh/popo/rpc_header.hpp"
#include "iceoryx_posh/popo/untyped_client.hpp"
#include "iceoryx_posh/popo/untyped_publisher.hpp"
#include "iceoryx_posh/popo/untyped_server.hpp"
#include "iceoryx_posh/popo/untyped_subscriber.hpp"
#include "iceoryx_posh/popo/wait_set.hpp"
#include "iceoryx_posh/runtime/posh_runtime.hpp"
#endif

namespace shmbus::bench {
namespace {

std::uint64_t read_seq(const std::byte* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// ---------------------------------------------------------------- shmbus

/// Both sides' configuration: a 256-slot ring of max_size messages (or, over
/// iceoryx, queues of 256 chunks).
Config link_config(const std::string& domain, Side side, std::size_t max_size,
                   shmbus::Transport transport = shmbus::Transport::kShm, bool block = false) {
  Config c;
  // shmbus_block: publishers wait for the subscriber instead of
  // overwriting, so the throughput test needs no flow window of its own.
  if (block) {
    c.defaults.overflow = Overflow::kBlock;
    c.defaults.block_timeout = std::chrono::seconds(10);
  }
  c.domain = domain;
  c.defaults.transport = transport;
  c.node = side == Side::kLeader ? "bench_leader" : "bench_follower";
  c.defaults.capacity = 256;
  c.defaults.max_message_size = static_cast<std::uint32_t>(max_size);
  // A writer stalled mid-message beyond stall_timeout is judged crashed and
  // its message lost. This VM kind deschedules a busy vCPU for 2-8 ms
  // dozens of times a minute under host load (measured): with the default
  // 2 ms, that invalidates lossless runs. The hot path does not read it.
  c.defaults.stall_timeout = std::chrono::milliseconds(100);
  return c;
}

class ShmbusLink final : public Link {
 public:
  ShmbusLink(const std::string& domain, Side side, std::size_t max_size,
             shmbus::Transport transport = shmbus::Transport::kShm, bool notify_hook = true, bool block = false,
             bool source = false)
      : block_(block), source_(source) {
    ctx_ = std::make_unique<Context>(link_config(domain, side, max_size, transport, block));
    const bool leader = side == Side::kLeader;
    sub_ = std::make_unique<Subscriber>(leader ? "/pong" : "/ping", TypeInfo::bytes(), *ctx_);
    pub_ = std::make_unique<Publisher>(leader ? "/ping" : "/pong", TypeInfo::bytes(), *ctx_,
                                       PublisherOptions{.notify_hook = notify_hook});
  }
  void send(const std::byte* data, std::size_t size) override { static_cast<void>(pub_->publish(data, size)); }
  std::uint64_t receive(Mode mode) override {
    // shmbus_source: the take is recorded in this scope, gone with it, so
    // the next send cites nothing.
    std::optional<InputScope> scope;
    if (source_) scope.emplace();
    // Zero-copy, like the iceoryx peer: read the sequence in place.
    std::uint64_t seq = 0;
    for (std::uint32_t polls = 1;; ++polls) {
      if (sub_->read([&](std::span<const std::byte> p, const MessageInfo&) { seq = read_seq(p.data()); }).ok()) {
        return seq;
      }
      // A message judged lost (its writer stalled beyond stall_timeout)
      // would leave a ping-pong waiting forever: a sequence never sent ends
      // the run as failed, and it is run again.
      if ((mode == Mode::kBlock || (polls & 4095U) == 0) && sub_->lost() != 0) return UINT64_MAX;
      if (mode == Mode::kBlock) sub_->wait(std::chrono::seconds(1));
    }
  }
  std::uint64_t lost() const override { return sub_->lost(); }
  std::uint64_t flow_window() const override { return block_ ? 0 : 192; }

 private:
  bool block_;
  bool source_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Subscriber> sub_;
  std::unique_ptr<Publisher> pub_;
};

/// Spins `node` until its callback sets `got` (cleared first): polling
/// (spin_once(0)) or sleeping in the executor's wait, by mode.
void spin_until_received(Node& node, bool& got, Mode mode) {
  got = false;
  const auto timeout =
      mode == Mode::kPoll ? std::chrono::nanoseconds(0) : std::chrono::nanoseconds(std::chrono::seconds(1));
  while (!got) node.spin_once(timeout);
}

/// The same channels through the Node API: a callback receives each message
/// (an in-place view, as ShmbusLink reads it), dispatched by spin_once - the
/// difference to ShmbusLink is the executor's cost per message.
class NodeLink final : public Link {
 public:
  NodeLink(const std::string& domain, Side side, std::size_t max_size)
      : ctx_(link_config(domain, side, max_size)), node_("", ctx_, NodeOptions{.handle_signals = false}) {
    const bool leader = side == Side::kLeader;
    SubscriptionOptions o;
    o.in_place = true;
    o.batch = 1;  // one message per receive()
    node_.subscribe_raw(
        leader ? "/pong" : "/ping", TypeInfo::bytes(),
        [this](std::span<const std::byte> p, const MessageInfo&) {
          seq_ = read_seq(p.data());
          got_ = true;
        },
        o);
    pub_ = &*node_.publisher(leader ? "/ping" : "/pong", TypeInfo::bytes());
  }
  void send(const std::byte* data, std::size_t size) override { static_cast<void>(pub_->publish(data, size)); }
  std::uint64_t receive(Mode mode) override {
    spin_until_received(node_, got_, mode);
    return seq_;
  }
  std::uint64_t flow_window() const override { return 192; }

 private:
  Context ctx_;
  Node node_;
  Publisher* pub_ = nullptr;
  std::uint64_t seq_ = 0;
  bool got_ = false;
};

/// An rclcpp node for a benchmark link: on the link's context, without
/// parameter services (a module's six services are not the row's cost).
std::shared_ptr<rclcpp::Node> bench_rclcpp_node(Context& ctx) {
  return std::make_shared<rclcpp::Node>("bench", rclcpp::NodeOptions()
                                                     .context(ctx)
                                                     .use_global_arguments(false)
                                                     .start_parameter_services(false)
                                                     .start_parameter_event_publisher(false));
}

/// The payload as a typed message, sensor_msgs/CompressedImage whose data
/// is the bytes, through the Node API's typed publisher and subscription
/// ("node_typed") or through shmbus::rclcpp's ("rclcpp"): the same type,
/// view callback and dispatch, so the pair shows what the rclcpp layer
/// costs per message. One message is kept and refilled (no allocation per
/// send, on either side).
class TypedLink final : public Link {
 public:
  using Image = sensor_msgs::msg::CompressedImage;

  TypedLink(const std::string& domain, Side side, std::size_t max_size, bool rclcpp)
      : ctx_(link_config(domain, side, max_size + 256)) {
    const bool leader = side == Side::kLeader;
    const char* in = leader ? "/pong" : "/ping";
    const char* out = leader ? "/ping" : "/pong";
    // A wakeup may dispatch several messages (the subscription's batch,
    // the same on both sides): each is queued, receive() takes one.
    const auto read = [this](const Image::View& v) {
      received_.push_back(read_seq(reinterpret_cast<const std::byte*>(v.data().data())));
    };
    if (rclcpp) {
      rclcpp_node_ = bench_rclcpp_node(ctx_);
      rclcpp::SubscriptionOptions o;
      o.in_place = true;
      sub_ = rclcpp_node_->create_subscription<Image>(in, 10, read, o);
      rclcpp_pub_ = rclcpp_node_->create_publisher<Image>(out, 10);
      node_ = &rclcpp_node_->shmbus_node();
    } else {
      own_node_ = std::make_unique<Node>("", ctx_, NodeOptions{.handle_signals = false});
      SubscriptionOptions o;
      o.in_place = true;
      own_node_->subscribe<Image>(
          in, [read](const Image::View& v, const MessageInfo&) { read(v); }, o);
      node_pub_ = &*own_node_->publisher<Image>(out);
      node_ = own_node_.get();
    }
  }
  void send(const std::byte* data, std::size_t size) override {
    message_.data.resize(size);
    std::memcpy(message_.data.data(), data, size);
    if (rclcpp_pub_) {
      rclcpp_pub_->publish(message_);
    } else {
      static_cast<void>(node_pub_->publish(message_));
    }
  }
  std::uint64_t receive(Mode mode) override {
    const auto timeout =
        mode == Mode::kPoll ? std::chrono::nanoseconds(0) : std::chrono::nanoseconds(std::chrono::seconds(1));
    while (received_.empty()) node_->spin_once(timeout);
    const std::uint64_t seq = received_.front();
    received_.pop_front();
    return seq;
  }
  std::uint64_t flow_window() const override { return 192; }

 private:
  Context ctx_;
  std::shared_ptr<rclcpp::Node> rclcpp_node_;
  rclcpp::Subscription<Image>::SharedPtr sub_;
  rclcpp::Publisher<Image>::SharedPtr rclcpp_pub_;
  std::unique_ptr<Node> own_node_;
  TypedPublisher<Image>* node_pub_ = nullptr;
  Node* node_ = nullptr;
  Image message_;
  std::deque<std::uint64_t> received_;
};

/// A PointCloud2-shaped message (ROS 2's fields: a header with a string,
/// a sequence of PointFields with strings, then the points) through Node
/// callbacks ("node_cloud"), `size` bytes of points. The sender builds it
/// in a loan (header, four fields, the points' block claimed and its last
/// byte written, as a driver would fill it; the sequence in `width`); the
/// receiver reads it in place through its generated view (frame, field
/// names, last point byte). Neither side touches the points in between: a
/// loan's cost, which must not grow with the cloud. Rings of 8 slots.
class NodeCloudLink final : public Link {
 public:
  using Cloud = ros2_test_msgs::PointCloud;
  /// Bytes a cloud holds besides its points (fixed part, frame, fields).
  static constexpr std::size_t kOverhead = 1024;

  /// `rclcpp`: through shmbus::rclcpp's publisher and subscription
  /// ("rclcpp_cloud"), the same loan and view.
  NodeCloudLink(const std::string& domain, Side side, std::size_t size, bool rclcpp = false)
      : ctx_(cloud_config(domain, side, size)) {
    const bool leader = side == Side::kLeader;
    const auto read = [this](const Cloud::View& v) {
      seq_ = v.width();
      std::size_t n = v.header().frame_id().size() + v.data().back();
      for (const auto& f : v.fields()) n += f.name().size();
      sink_ += n;
      got_ = true;
    };
    if (rclcpp) {
      rclcpp_node_ = bench_rclcpp_node(ctx_);
      rclcpp::SubscriptionOptions o;
      o.in_place = true;
      o.batch = 1;  // as node_cloud's
      sub_ = rclcpp_node_->create_subscription<Cloud>(leader ? "/pong" : "/ping", 8, read, o);
      rclcpp_pub_ = rclcpp_node_->create_publisher<Cloud>(leader ? "/ping" : "/pong", 8);
      pub_ = &rclcpp_pub_->shmbus_publisher();
      node_ = &rclcpp_node_->shmbus_node();
      return;
    }
    own_node_ = std::make_unique<Node>("", ctx_, NodeOptions{.handle_signals = false});
    SubscriptionOptions o;
    o.in_place = true;
    o.batch = 1;
    own_node_->subscribe<Cloud>(
        leader ? "/pong" : "/ping", [read](const Cloud::View& v, const MessageInfo&) { read(v); }, o);
    pub_ = &*own_node_->publisher<Cloud>(leader ? "/ping" : "/pong");
    node_ = own_node_.get();
  }
  void send(const std::byte* data, std::size_t size) override {
    Loan loan = pub_->loan(size + kOverhead);
    if (!loan) throw std::runtime_error("node_cloud: no loan");
    msg::Writer w(loan.data());
    build_cloud(w, size, static_cast<std::uint32_t>(read_seq(data))).back() = static_cast<std::uint8_t>(read_seq(data));
    static_cast<void>(pub_->commit(loan, w.size()));
  }
  std::uint64_t receive(Mode mode) override {
    spin_until_received(*node_, got_, mode);
    return seq_;
  }

 private:
  static Config cloud_config(const std::string& domain, Side side, std::size_t size) {
    Config c = link_config(domain, side, size + kOverhead);
    c.defaults.capacity = 8;  // 8 slots of up to 16 MiB a direction
    return c;
  }
  Context ctx_;
  std::shared_ptr<rclcpp::Node> rclcpp_node_;
  rclcpp::Subscription<Cloud>::SharedPtr sub_;
  rclcpp::Publisher<Cloud>::SharedPtr rclcpp_pub_;
  std::unique_ptr<Node> own_node_;
  Node* node_ = nullptr;
  TypedPublisher<Cloud>* pub_ = nullptr;
  std::uint64_t seq_ = 0;
  std::uint64_t sink_ = 0;  ///< what the reads found, so that they are made
  bool got_ = false;
};

/// A service round trip: the leader is a ServiceClient (send() is the
/// whole call), the follower a ServiceServer whose handler echoes the
/// request (receive() serves one request; send() has nothing left to do).
/// Poll mode: the server spins on spin_once(0); the client's call always
/// spins for wait_spin before it sleeps.
class ServiceLink final : public Link {
 public:
  ServiceLink(const std::string& domain, Side side, std::size_t max_size)
      : ctx_(link_config(domain, side, max_size)), response_(max_size) {
    const ServiceTypes types{"shmbus/BenchEcho", TypeInfo{"shmbus/BenchEcho_Request", 0, ""},
                             TypeInfo{"shmbus/BenchEcho_Response", 0, ""}};
    if (side == Side::kLeader) {
      client_.emplace("/bench", types, ctx_);
      if (!client_->wait_for_server(std::chrono::seconds(10))) throw std::runtime_error("no bench server");
    } else {
      server_.emplace(
          "/bench", types,
          [](std::span<const std::byte> request, const MessageInfo&, std::span<std::byte> response) {
            std::memcpy(response.data(), request.data(), request.size());
            return request.size();
          },
          ctx_);
    }
  }
  void send(const std::byte* data, std::size_t size) override {
    if (!client_) return;  // the server answered in receive()
    const CallResult r = client_->call({data, size}, response_, std::chrono::seconds(10));
    if (r.status == CallStatus::kLost) {
      seq_ = UINT64_MAX;  // counted by the client (lost()); the caller may call again
      return;
    }
    if (!r.ok()) throw std::runtime_error("call failed: " + std::string(to_string(r.status)));
    seq_ = read_seq(response_.data());
  }
  std::uint64_t receive(Mode mode) override {
    if (client_) return seq_;
    // One receive() is one request served, as for iceoryx's server: a
    // spin_once() serves every request there is, and a client answered
    // early in it may have called again before it returned, so what it
    // served beyond one is banked for the next receive() calls (before,
    // a run's server counted too few and waited for ever at its end).
    if (banked_ != 0) {
      --banked_;
      return 0;
    }
    const std::uint64_t before = server_->served();
    const auto timeout =
        mode == Mode::kPoll ? std::chrono::nanoseconds(0) : std::chrono::nanoseconds(std::chrono::seconds(1));
    while (server_->served() == before) server_->spin_once(timeout);
    banked_ = server_->served() - before - 1;
    return 0;  // the echo is already sent
  }
  std::uint64_t lost() const override { return client_ ? client_->lost() + client_->late_responses() : 0; }

 private:
  Context ctx_;
  std::vector<std::byte> response_;
  std::optional<ServiceClient> client_;
  std::optional<ServiceServer> server_;
  std::uint64_t seq_ = 0;
  std::uint64_t banked_ = 0;  ///< requests served beyond those receive() returned for
};

/// shmbus through raw subscribers ("shmbus"), through Node callbacks
/// ("node"), or as a service round trip ("service", latency only).
class ShmbusTransport final : public Transport {
 public:
  enum class Kind { kRaw, kNoHook, kBlock, kSource, kNode, kService, kNodeCloud, kNodeTyped, kRclcpp, kRclcppCloud };
  explicit ShmbusTransport(Kind kind) : kind_(kind) {}
  std::string name() const override {
    switch (kind_) {
      case Kind::kNode:
        return "node";
      case Kind::kNodeCloud:
        return "node_cloud";
      case Kind::kNodeTyped:
        return "node_typed";
      case Kind::kRclcpp:
        return "rclcpp";
      case Kind::kRclcppCloud:
        return "rclcpp_cloud";
      case Kind::kService:
        return "service";
      case Kind::kNoHook:
        return "shmbus_nohook";
      case Kind::kBlock:
        return "shmbus_block";
      case Kind::kSource:
        return "shmbus_source";
      case Kind::kRaw:
        break;
    }
    return "shmbus";
  }
  bool supports(Mode) const override { return true; }
  bool has_throughput() const override {
    return kind_ != Kind::kService && kind_ != Kind::kNodeCloud && kind_ != Kind::kRclcppCloud;
  }
  bool in_place() const override { return kind_ == Kind::kNodeCloud || kind_ == Kind::kRclcppCloud; }
  void prepare(std::size_t) override { domain_ = "bench_" + std::to_string(::getpid()) + "_" + std::to_string(run_++); }
  std::unique_ptr<Link> connect(Side side, std::size_t max_size) override {
    if (kind_ == Kind::kNode) return std::make_unique<NodeLink>(domain_, side, max_size);
    if (kind_ == Kind::kNodeCloud) return std::make_unique<NodeCloudLink>(domain_, side, max_size);
    if (kind_ == Kind::kRclcppCloud) return std::make_unique<NodeCloudLink>(domain_, side, max_size, true);
    if (kind_ == Kind::kNodeTyped || kind_ == Kind::kRclcpp) {
      return std::make_unique<TypedLink>(domain_, side, max_size, kind_ == Kind::kRclcpp);
    }
    if (kind_ == Kind::kService) return std::make_unique<ServiceLink>(domain_, side, max_size);
    return std::make_unique<ShmbusLink>(domain_, side, max_size, shmbus::Transport::kShm, kind_ != Kind::kNoHook,
                                        kind_ == Kind::kBlock, kind_ == Kind::kSource);
  }
  void cleanup() override { introspect::clean_domain(domain_, false); }

 private:
  Kind kind_;
  std::string domain_;
  int run_ = 0;
};

// ---------------------------------------------------------------- iceoryx

#if SHMBUS_BENCH_ICEORYX
/// This process's iceoryx runtime, logging warnings only (its debug lines
/// on stdout are not results), named as shmbus names its runtimes: the
/// children end with _exit, and the files iceoryx leaves for them are
/// removed by remove_stale_runtime_files.

class IceoryxLink final : public Link {
 public:
  /// `in_place` ("iceoryx_loan"): a loan of `size` bytes whose sequence and
  /// last byte only are written, and read in place (node_cloud's peer).
  /// `run` names this run's services: RouDi's monitoring is off, so a side
  /// that died before giving its ports back leaves them listed, and a
  /// blocking publisher of a later run must never wait for its queue.
  IceoryxLink(const std::string& run, Side side, std::size_t max_size, bool in_place)
      : max_size_(max_size), in_place_(in_place) {
    const bool leader = side == Side::kLeader;
    init_iceoryx_runtime(iceoryx::runtime_name(leader ? "bench_leader" : "bench_follower", ::getpid()));
    iox::popo::PublisherOptions po;
    po.subscriberTooSlowPolicy = iox::popo::ConsumerTooSlowPolicy::WAIT_FOR_CONSUMER;
    iox::popo::SubscriberOptions so;
    so.queueCapacity = 256;
    so.queueFullPolicy = iox::popo::QueueFullPolicy::BLOCK_PRODUCER;
    const iox::capro::IdString_t instance{iox::cxx::TruncateToCapacity, run.c_str()};
    pub_.emplace(iox::capro::ServiceDescription{"ShmbusBench", instance, leader ? "Ping" : "Pong"}, po);
    sub_.emplace(iox::capro::ServiceDescription{"ShmbusBench", instance, leader ? "Pong" : "Ping"}, so);
    waitset_.emplace();
    waitset_->attachState(*sub_, iox::popo::SubscriberState::HAS_DATA).or_else([](auto) {
      throw std::runtime_error("iceoryx: cannot attach the subscriber to a WaitSet");
    });
    while (sub_->getSubscriptionState() != iox::SubscribeState::SUBSCRIBED || !pub_->hasSubscribers()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~IceoryxLink() override {
    waitset_.reset();
    sub_.reset();
    pub_.reset();
  }
  void send(const std::byte* data, std::size_t size) override {
    for (;;) {
      bool sent = false;
      pub_->loan(static_cast<std::uint32_t>(size)).and_then([&](void* payload) {
        if (in_place_) {
          std::memcpy(payload, data, sizeof(std::uint64_t));
          static_cast<std::byte*>(payload)[size - 1] = data[0];
        } else {
          std::memcpy(payload, data, size);
        }
        pub_->publish(payload);
        sent = true;
      });
      if (sent) return;
      cpu_relax();  // mempool momentarily exhausted
    }
  }
  std::uint64_t receive(Mode mode) override {
    for (;;) {
      std::uint64_t seq = 0;
      bool got = false;
      // Zero-copy: read the sequence in place, no copy out.
      sub_->take().and_then([&](const void* payload) {
        seq = read_seq(static_cast<const std::byte*>(payload));
        if (in_place_) sink_ += std::to_integer<unsigned>(static_cast<const std::byte*>(payload)[max_size_ - 1]);
        sub_->release(payload);
        got = true;
      });
      if (got) return seq;
      if (mode == Mode::kBlock) waitset_->wait();
    }
  }

 private:
  std::size_t max_size_;
  bool in_place_;
  std::uint64_t sink_ = 0;
  iox::cxx::optional<iox::popo::UntypedPublisher> pub_;
  iox::cxx::optional<iox::popo::UntypedSubscriber> sub_;
  iox::cxx::optional<iox::popo::WaitSet<>> waitset_;
};

/// iceoryx 2.0's request/response (untyped client and server): the
/// leader's send() sends the request, its receive() takes the response.
class IceoryxServiceLink final : public Link {
 public:
  /// `run` names this run's service, as for IceoryxLink.
  IceoryxServiceLink(const std::string& run, Side side, std::size_t size) : size_(size) {
    const bool leader = side == Side::kLeader;
    init_iceoryx_runtime(iceoryx::runtime_name(leader ? "bench_client" : "bench_server", ::getpid()));
    const iox::capro::ServiceDescription service{
        "ShmbusBench", iox::capro::IdString_t{iox::cxx::TruncateToCapacity, run.c_str()}, "Echo"};
    waitset_.emplace();
    if (leader) {
      iox::popo::ClientOptions co;
      co.responseQueueCapacity = 16;
      client_.emplace(service, co);
      waitset_->attachState(*client_, iox::popo::ClientState::HAS_RESPONSE).or_else([](auto) {
        throw std::runtime_error("iceoryx: cannot attach the client to a WaitSet");
      });
      while (client_->getConnectionState() != iox::ConnectionState::CONNECTED) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    } else {
      server_.emplace(service);
      waitset_->attachState(*server_, iox::popo::ServerState::HAS_REQUEST).or_else([](auto) {
        throw std::runtime_error("iceoryx: cannot attach the server to a WaitSet");
      });
    }
  }
  ~IceoryxServiceLink() override {
    waitset_.reset();
    client_.reset();
    server_.reset();
  }
  void send(const std::byte* data, std::size_t size) override {
    if (!client_) return;  // the server answered in receive()
    bool sent = false;
    while (!sent) {
      client_->loan(static_cast<std::uint32_t>(size), alignof(std::uint64_t)).and_then([&](void* payload) {
        iox::popo::RequestHeader::fromPayload(payload)->setSequenceId(request_id_++);
        std::memcpy(payload, data, size);
        sent = !client_->send(payload).has_error();
      });
      if (!sent) cpu_relax();
    }
  }
  std::uint64_t receive(Mode mode) override {
    while (client_) {
      std::uint64_t seq = 0;
      bool got = false;
      client_->take().and_then([&](const void* payload) {
        seq = read_seq(static_cast<const std::byte*>(payload));
        client_->releaseResponse(payload);
        got = true;
      });
      if (got) return seq;
      if (mode == Mode::kBlock) waitset_->wait();
    }
    for (;;) {
      bool served = false;
      server_->take().and_then([&](const void* request) {
        const auto* header = iox::popo::RequestHeader::fromPayload(request);
        const auto size = static_cast<std::uint32_t>(size_);  // every message of a run has its size
        server_->loan(header, size, alignof(std::uint64_t)).and_then([&](void* response) {
          std::memcpy(response, request, size);
          served = !server_->send(response).has_error();
        });
        server_->releaseRequest(request);
      });
      if (served) return 0;
      if (mode == Mode::kBlock) waitset_->wait();
    }
  }

 private:
  iox::cxx::optional<iox::popo::UntypedClient> client_;
  iox::cxx::optional<iox::popo::UntypedServer> server_;
  iox::cxx::optional<iox::popo::WaitSet<>> waitset_;
  std::size_t size_;
  std::int64_t request_id_ = 0;
};

/// Raw iceoryx ("iceoryx", "iceoryx_service"), or shmbus over iceoryx
/// ("shmbus_iceoryx": the shmbus API on a channel with transport =
/// "iceoryx", the same RouDi).
class IceoryxTransport final : public Transport {
 public:
  using Kind = IceoryxKind;
  IceoryxTransport(std::string dir, Kind kind) : dir_(std::move(dir)), kind_(kind) {}
  std::string name() const override {
    switch (kind_) {
      case Kind::kService:
        return "iceoryx_service";
      case Kind::kShmbus:
        return "shmbus_iceoryx";
      case Kind::kLoan:
        return "iceoryx_loan";
      case Kind::kRaw:
        break;
    }
    return "iceoryx";
  }
  bool supports(Mode) const override { return true; }
  bool has_throughput() const override { return kind_ != Kind::kService && kind_ != Kind::kLoan; }
  bool in_place() const override { return kind_ == Kind::kLoan; }
  void prepare(std::size_t) override {
    domain_ = "bench_iox_" + std::to_string(::getpid()) + "_" + std::to_string(run_++);
    if (!roudi_) roudi_ = BenchRoudi::shared(dir_, peer_pools());
  }
  std::unique_ptr<Link> connect(Side side, std::size_t max_size) override {
    if (kind_ == Kind::kService) return std::make_unique<IceoryxServiceLink>(domain_, side, max_size);
    if (kind_ == Kind::kShmbus)
      return std::make_unique<ShmbusLink>(domain_, side, max_size, shmbus::Transport::kIceoryx);
    return std::make_unique<IceoryxLink>(domain_, side, max_size, kind_ == Kind::kLoan);
  }
  void cleanup() override {
    if (kind_ == Kind::kShmbus) introspect::clean_domain(domain_, false);
  }

 private:
  std::string dir_;
  Kind kind_;
  std::string domain_;
  int run_ = 0;
  std::shared_ptr<BenchRoudi> roudi_;
};
#endif

// ------------------------------------------------ Boost.Interprocess mq

class BoostMqLink final : public Link {
 public:
  BoostMqLink(const std::string& prefix, Side side, std::size_t max_size) : buf_(max_size) {
    namespace bip = boost::interprocess;
    const bool leader = side == Side::kLeader;
    out_ = std::make_unique<bip::message_queue>(bip::open_only, (prefix + (leader ? "ping" : "pong")).c_str());
    in_ = std::make_unique<bip::message_queue>(bip::open_only, (prefix + (leader ? "pong" : "ping")).c_str());
  }
  void send(const std::byte* data, std::size_t size) override { out_->send(data, size, 0); }
  std::uint64_t receive(Mode) override {
    std::size_t got = 0;
    unsigned prio = 0;
    in_->receive(buf_.data(), buf_.size(), got, prio);
    return read_seq(buf_.data());
  }

 private:
  std::unique_ptr<boost::interprocess::message_queue> out_, in_;
  std::vector<std::byte> buf_;
};

class BoostMqTransport final : public Transport {
 public:
  std::string name() const override { return "boost_mq"; }
  bool supports(Mode m) const override { return m == Mode::kBlock; }
  void prepare(std::size_t max_size) override {
    namespace bip = boost::interprocess;
    prefix_ = "shmbus_bench_mq_" + std::to_string(::getpid()) + "_";
    cleanup();
    bip::message_queue(bip::create_only, (prefix_ + "ping").c_str(), 256, max_size);
    bip::message_queue(bip::create_only, (prefix_ + "pong").c_str(), 256, max_size);
  }
  std::unique_ptr<Link> connect(Side side, std::size_t max_size) override {
    return std::make_unique<BoostMqLink>(prefix_, side, max_size);
  }
  void cleanup() override {
    boost::interprocess::message_queue::remove((prefix_ + "ping").c_str());
    boost::interprocess::message_queue::remove((prefix_ + "pong").c_str());
  }

 private:
  std::string prefix_;
};

// ------------------------------------------------ Unix-domain socket

class UdsLink final : public Link {
 public:
  UdsLink(int fd, std::size_t max_size) : fd_(fd), buf_(max_size) {}
  ~UdsLink() override { ::close(fd_); }
  void send(const std::byte* data, std::size_t size) override {
    if (::send(fd_, data, size, 0) != static_cast<ssize_t>(size)) throw std::runtime_error("uds send failed");
  }
  std::uint64_t receive(Mode) override {
    if (::recv(fd_, buf_.data(), buf_.size(), 0) < 8) throw std::runtime_error("uds recv failed");
    return read_seq(buf_.data());
  }

 private:
  int fd_;
  std::vector<std::byte> buf_;
};

class UdsTransport final : public Transport {
 public:
  std::string name() const override { return "uds"; }
  bool supports(Mode m) const override { return m == Mode::kBlock; }
  void prepare(std::size_t) override {
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds_) != 0) throw std::runtime_error("socketpair failed");
  }
  std::unique_ptr<Link> connect(Side side, std::size_t max_size) override {
    const int mine = side == Side::kLeader ? fds_[0] : fds_[1];
    ::close(side == Side::kLeader ? fds_[1] : fds_[0]);
    return std::make_unique<UdsLink>(mine, max_size);
  }
  void cleanup() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

 private:
  int fds_[2] = {-1, -1};
};

// ------------------------------------------------ floor: one shared word

struct alignas(64) FloorShared {
  std::atomic<std::uint64_t> word;
};

class FloorLink final : public Link {
 public:
  FloorLink(FloorShared* s, Side side) : s_(s), leader_(side == Side::kLeader) {}
  // The leader stores odd values, the follower even ones: the message is
  // the cache line itself.
  void send(const std::byte* data, std::size_t) override {
    const std::uint64_t seq = read_seq(data);
    s_->word.store(seq * 2 + (leader_ ? 1 : 2), std::memory_order_release);
  }
  std::uint64_t receive(Mode) override {
    const std::uint64_t parity = leader_ ? 0 : 1;
    for (;;) {
      const std::uint64_t w = s_->word.load(std::memory_order_acquire);
      if (w != last_ && (w & 1U) == parity) {
        last_ = w;
        return (w - (leader_ ? 2 : 1)) / 2;
      }
      cpu_relax();
    }
  }

 private:
  FloorShared* s_;
  bool leader_;
  std::uint64_t last_ = 0;
};

class FloorTransport final : public Transport {
 public:
  std::string name() const override { return "floor"; }
  bool supports(Mode m) const override { return m == Mode::kPoll; }
  bool has_throughput() const override { return false; }
  void prepare(std::size_t) override {
    void* p = ::mmap(nullptr, sizeof(FloorShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared_ = new (p) FloorShared{};
  }
  std::unique_ptr<Link> connect(Side side, std::size_t) override { return std::make_unique<FloorLink>(shared_, side); }
  void cleanup() override { ::munmap(shared_, sizeof(FloorShared)); }

 private:
  FloorShared* shared_ = nullptr;
};

// ------------------------------------------------ spsc: the simplest ring

constexpr std::size_t kSpscSlots = 256;

struct SpscRing {
  alignas(64) std::atomic<std::uint64_t> head;  // written by the producer
  alignas(64) std::atomic<std::uint64_t> tail;  // written by the consumer
  alignas(64) std::byte data[1];                // kSpscSlots * slot bytes follow
};

class SpscLink final : public Link {
 public:
  SpscLink(SpscRing* out, SpscRing* in, std::size_t slot) : out_(out), in_(in), slot_(slot), buf_(slot) {}
  void send(const std::byte* data, std::size_t size) override {
    const std::uint64_t h = out_->head.load(std::memory_order_relaxed);
    while (h - cached_tail_ >= kSpscSlots) {
      cached_tail_ = out_->tail.load(std::memory_order_acquire);
      cpu_relax();
    }
    std::memcpy(out_->data + (h % kSpscSlots) * slot_, data, size);
    out_->head.store(h + 1, std::memory_order_release);
  }
  std::uint64_t receive(Mode) override {
    const std::uint64_t t = in_->tail.load(std::memory_order_relaxed);
    while (cached_head_ <= t) {
      cached_head_ = in_->head.load(std::memory_order_acquire);
      if (cached_head_ <= t) cpu_relax();
    }
    std::memcpy(buf_.data(), in_->data + (t % kSpscSlots) * slot_, slot_);
    in_->tail.store(t + 1, std::memory_order_release);
    return read_seq(buf_.data());
  }

 private:
  SpscRing* out_;
  SpscRing* in_;
  std::size_t slot_;
  std::vector<std::byte> buf_;
  std::uint64_t cached_tail_ = 0;
  std::uint64_t cached_head_ = 0;
};

class SpscTransport final : public Transport {
 public:
  std::string name() const override { return "spsc"; }
  bool supports(Mode m) const override { return m == Mode::kPoll; }
  void prepare(std::size_t max_size) override {
    slot_ = max_size;
    bytes_ = sizeof(SpscRing) + kSpscSlots * slot_;
    for (auto*& r : rings_) {
      void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      r = new (p) SpscRing{};
    }
  }
  std::unique_ptr<Link> connect(Side side, std::size_t) override {
    return side == Side::kLeader ? std::make_unique<SpscLink>(rings_[0], rings_[1], slot_)
                                 : std::make_unique<SpscLink>(rings_[1], rings_[0], slot_);
  }
  void cleanup() override {
    for (auto* r : rings_) ::munmap(r, bytes_);
  }

 private:
  SpscRing* rings_[2] = {nullptr, nullptr};
  std::size_t slot_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace

#if SHMBUS_BENCH_ICEORYX
void init_iceoryx_runtime(const std::string& name) {
  iox::log::LogManager::GetLogManager().SetDefaultLogLevel(iox::log::LogLevel::kWarn,
                                                           iox::log::LogLevelOutput::kHideLogLevel);
  iox::runtime::PoshRuntime::initRuntime(iox::RuntimeName_t(iox::cxx::TruncateToCapacity, name.c_str()));
}
#endif

BenchRoudi::BenchRoudi(const std::string& dir, std::vector<RoudiPool> pools) {
  if (const std::string why = iceoryx_refusal(); !why.empty()) throw std::runtime_error(why);
  // RouDi wants its pools in ascending chunk size.
  std::sort(pools.begin(), pools.end(), [](const RoudiPool& a, const RoudiPool& b) { return a.size < b.size; });
  std::string config_text = "[general]\nversion = 1\n\n[[segment]]\n";
  for (const RoudiPool& p : pools) {
    config_text +=
        "\n[[segment.mempool]]\nsize = " + std::to_string(p.size) + "\ncount = " + std::to_string(p.count) + "\n";
  }
  const std::string config = dir + "/roudi_bench.toml";
  FILE* f = std::fopen(config.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + config);
  std::fputs(config_text.c_str(), f);
  std::fclose(f);
  pid_ = ::fork();
  if (pid_ == 0) {
    // RouDi logs to its own file: its shutdown warnings are not results.
    const int log = ::open((dir + "/roudi_bench.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    ::execlp("iox-roudi", "iox-roudi", "-c", config.c_str(), "-l", "warning", "-m", "off", nullptr);
    std::perror("shmbus-bench: cannot run iox-roudi (install the iceoryx package)");
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    throw std::runtime_error("iox-roudi exited at start; " + dir + "/roudi_bench.log says why");
  }
}

BenchRoudi::~BenchRoudi() {
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  // RouDi 2.0.3 asserts at its shutdown when a process it still lists is
  // gone (the sides end with _exit; its monitoring is off), and aborts with
  // its shared memory in place. It was the only RouDi (it holds a lock
  // while it runs), so what it leaves is this benchmark's to remove: its
  // management segment and its one payload segment, named after the group.
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::shm_unlink("iceoryx_mgmt");
    if (const group* g = ::getgrgid(::getegid()); g != nullptr) ::shm_unlink(g->gr_name);
  }
}

std::shared_ptr<BenchRoudi> BenchRoudi::shared(const std::string& dir, const std::vector<RoudiPool>& pools) {
  static std::weak_ptr<BenchRoudi> running;
  auto r = running.lock();
  if (!r) {
    r = std::make_shared<BenchRoudi>(dir, pools);
    running = r;
  }
  return r;
}

std::vector<RoudiPool> peer_pools() {
  // 64 B and 4 KiB payloads, raw and with shmbus's chunk header, enough
  // chunks for 256-deep queues in both directions.
  std::vector<RoudiPool> pools;
  for (const std::uint32_t size :
       {raw_chunk_size(64), raw_chunk_size(4096), iceoryx::chunk_payload_size(64), iceoryx::chunk_payload_size(4096)}) {
    pools.push_back({size, 2048});
  }
  // iceoryx_loan's point clouds (latency only: one in flight a direction).
  for (const std::uint32_t size : kInPlaceSizes) pools.push_back({raw_chunk_size(size), 8});
  return pools;
}

std::string iceoryx_refusal() {
  // iceoryx 2.0 allows one RouDi per machine, and a running one has pools
  // sized for its own users, not for these rows.
  if (!shmbus::iceoryx::roudi_running()) return {};
  return "an iceoryx RouDi already runs on this machine (/tmp/roudi answers); the iceoryx rows need the "
         "benchmark's own, with pools for their message sizes: stop the running one (shmbusd --roudi or "
         "iox-roudi), or leave the iceoryx rows out of --transports";
}

std::unique_ptr<Transport> make_shmbus(ShmbusVariant variant) {
  switch (variant) {
    case ShmbusVariant::kNoHook:
      return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kNoHook);
    case ShmbusVariant::kBlock:
      return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kBlock);
    case ShmbusVariant::kSource:
      return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kSource);
    case ShmbusVariant::kAsShipped:
      break;
  }
  return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kRaw);
}
std::unique_ptr<Transport> make_node() { return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kNode); }
std::unique_ptr<Transport> make_node_cloud() {
  return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kNodeCloud);
}
std::unique_ptr<Transport> make_node_typed(bool rclcpp) {
  return std::make_unique<ShmbusTransport>(rclcpp ? ShmbusTransport::Kind::kRclcpp : ShmbusTransport::Kind::kNodeTyped);
}
std::unique_ptr<Transport> make_rclcpp_cloud() {
  return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kRclcppCloud);
}
std::unique_ptr<Transport> make_service() { return std::make_unique<ShmbusTransport>(ShmbusTransport::Kind::kService); }
std::unique_ptr<Transport> make_iceoryx([[maybe_unused]] const std::string& dir, [[maybe_unused]] IceoryxKind kind) {
#if SHMBUS_BENCH_ICEORYX
  return std::make_unique<IceoryxTransport>(dir, kind);
#else
  return nullptr;
#endif
}
std::unique_ptr<Transport> make_boost_mq() { return std::make_unique<BoostMqTransport>(); }
std::unique_ptr<Transport> make_uds() { return std::make_unique<UdsTransport>(); }
std::unique_ptr<Transport> make_floor() { return std::make_unique<FloorTransport>(); }
std::unique_ptr<Transport> make_spsc() { return std::make_unique<SpscTransport>(); }

}  // namespace shmbus::bench
