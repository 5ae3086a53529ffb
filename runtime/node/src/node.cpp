#include "shmbus/node.hpp"

#include <signal.h>
#include <algorithm>

#include <cstdio>
#include <mutex>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/input_scope.hpp"
#include "shmbus/names.hpp"

namespace shmbus {

Subscription::Subscription(Subscriber subscriber, CallbackGroup* group, std::uint32_t batch)
    : subscriber_(std::move(subscriber)), group_(group), batch_(std::max<std::uint32_t>(batch, 1)) {}

void Subscription::cancel() noexcept {
  cancelled_.store(true, std::memory_order_release);
  if (node_ != nullptr) node_->announce_change();  // its executors rebuild their wait sets without it
}

Timer::Timer(std::chrono::nanoseconds period, bool periodic, std::function<void()> callback, CallbackGroup* group)
    : period_ns_(period.count()), periodic_(periodic), callback_(std::move(callback)), group_(group), next_ns_(0) {}

Node::Node(std::string_view name, Context& context, NodeOptions options)
    : name_(name.empty() ? context.node() : std::string{name}), context_(&context), options_(options) {
  validate_node_name(name_);
}

Node::~Node() = default;

void Node::announce_change() noexcept {
  generation_.fetch_add(1, std::memory_order_release);
  wake_.trigger();
}

Subscription& Node::add_subscription(std::string_view channel, const std::optional<TypeInfo>& type,
                                     const SubscriptionOptions& options, Subscription::Dispatch dispatch,
                                     std::size_t fixed_size) {
  SubscriberOptions subscriber_options = options.subscriber;
  subscriber_options.node = name_;
  auto s = std::make_unique<Subscription>(Subscriber(channel, type, *context_, subscriber_options),
                                          options.group != nullptr ? options.group : &default_group_, options.batch);
  if (fixed_size != 0 && type) s->subscriber().require_room(fixed_size, type->name);
  s->dispatch_ = std::move(dispatch);
  s->on_lost_ = options.on_lost;
  s->node_ = this;
  Subscription& ref = *s;
  {
    const std::lock_guard lock(mutex_);
    subscriptions_.push_back(std::move(s));
  }
  announce_change();
  return ref;
}

Subscription& Node::subscribe_raw(std::string_view channel, const std::optional<TypeInfo>& type, RawCallback callback,
                                  const SubscriptionOptions& options) {
  if (options.in_place) {
    return add_subscription(channel, type, options, dispatch_in_place(std::move(callback), options.on_overwritten));
  }
  return add_subscription(channel, type, options, [cb = std::move(callback)](Subscription& s) {
    Subscriber& sub = s.subscriber();
    // Sized on first use: a wait_for_channel subscriber learns its
    // channel's max_message_size when it attaches.
    if (s.buffer_.size() < sub.max_message_size()) s.buffer_.resize(sub.max_message_size());
    TakeResult r = sub.take(s.buffer_);
    if (r.status == TakeStatus::kBufferTooSmall) {
      // The channel grew: its larger message is taken into a larger buffer.
      s.buffer_.resize(std::max<std::size_t>(r.info.size, sub.max_message_size()));
      r = sub.take(s.buffer_);
    }
    if (r.ok()) cb(std::span<const std::byte>{s.buffer_.data(), r.info.size}, r.info);
    return r.status;
  });
}

Subscription::Dispatch Node::dispatch_in_place(RawCallback callback,
                                               std::function<void(const MessageInfo&)> on_overwritten,
                                               std::size_t exact_size) {
  return [cb = std::move(callback), on_overwritten = std::move(on_overwritten), exact_size](Subscription& s) {
    // read() calls the reader again with the next message when the one it
    // saw was overwritten meanwhile: every call but a delivered last one
    // saw a torn message. The reader is noexcept territory: an exception is
    // kept and rethrown after the read - unless the message it came from
    // turned out torn: then it is an artifact of the tearing (a view that
    // found a length pointing nowhere), not the callback's failure.
    std::uint32_t seen = 0;
    MessageInfo last;
    std::exception_ptr failed;  ///< the latest call's
    auto torn = [&](const MessageInfo& info) {
      failed = nullptr;
      s.count(s.overwritten_);
      if (!on_overwritten) return;
      try {
        on_overwritten(info);
      } catch (...) {
        if (!s.in_place_error_) s.in_place_error_ = std::current_exception();
      }
    };
    auto reader = [&](std::span<const std::byte> payload, const MessageInfo& info) {
      if (seen++ != 0) torn(last);
      last = info;
      // The subscriber records a message as taken once it is read whole,
      // after this call: what the callback publishes cites it from here
      // (the executor's scope holds only this dispatch's message).
      if (InputScope* scope = InputScope::current()) {
        scope->clear();
        scope->log().add(s.subscriber().channel_index(), info);
      }
      try {
        cb(payload, info);
      } catch (...) {
        failed = std::current_exception();
      }
    };
    const TakeResult r = exact_size != 0 ? s.subscriber().read_exact(exact_size, reader) : s.subscriber().read(reader);
    if (!r.ok() && seen != 0) torn(last);
    if (!s.in_place_error_) s.in_place_error_ = failed;
    if (s.in_place_error_) {
      std::exception_ptr e;
      std::swap(e, s.in_place_error_);
      std::rethrow_exception(e);
    }
    return r.status;
  };
}

NodePublisher<Publisher>& Node::publisher(std::string_view channel, const TypeInfo& type, PublisherOptions options) {
  options.node = name_;
  auto handle = std::make_shared<NodePublisher<Publisher>>(
      std::make_shared<Publisher>(channel, type, *context_, std::move(options)));
  const std::lock_guard lock(mutex_);
  publishers_.push_back(handle);
  return *handle;
}

Timer& Node::add_timer(std::chrono::nanoseconds period, bool periodic, std::function<void()> callback,
                       TimerOptions options) {
  if (periodic && period.count() <= 0) {
    throw Error(Errc::kInvalidArgument, "node \"" + name_ + "\": a timer period must be positive");
  }
  auto t = std::make_unique<Timer>(period, periodic, std::move(callback),
                                   options.group != nullptr ? options.group : &default_group_);
  t->node_ = this;
  t->next_ns_.store(mono_now_ns() + std::max<std::int64_t>(period.count(), 0), std::memory_order_relaxed);
  Timer& ref = *t;
  {
    const std::lock_guard lock(mutex_);
    timers_.push_back(std::move(t));
  }
  announce_change();
  return ref;
}

Timer& Node::every(std::chrono::nanoseconds period, std::function<void()> callback, TimerOptions options) {
  return add_timer(period, true, std::move(callback), options);
}

Timer& Node::after(std::chrono::nanoseconds delay, std::function<void()> callback, TimerOptions options) {
  return add_timer(delay, false, std::move(callback), options);
}

CallbackGroup& Node::create_callback_group(CallbackGroupKind kind) {
  const std::lock_guard lock(mutex_);
  groups_.push_back(std::make_unique<CallbackGroup>(kind));
  return *groups_.back();
}

void Node::spin() {
  if (!own_) {
    own_ = std::make_unique<Executor>(1);
    own_->add(*this);
  }
  own_->spin();
}

std::size_t Node::spin_once(std::chrono::nanoseconds timeout) {
  if (!own_) {
    own_ = std::make_unique<Executor>(1);
    own_->add(*this);
  }
  return own_->spin_once(timeout);
}

void Node::stop() noexcept {
  stop_requested_.store(true, std::memory_order_release);
  wake_.trigger();
}

bool Node::ok() const noexcept {
  return !stop_requested_.load(std::memory_order_acquire) && !(options_.handle_signals && stop_signalled());
}

std::uint64_t Node::calls() const {
  const std::lock_guard lock(mutex_);
  std::uint64_t n = 0;
  for (const auto& s : subscriptions_) n += s->calls();
  for (const auto& t : timers_) n += t->runs();
  return n;
}

std::uint64_t Node::errors() const {
  const std::lock_guard lock(mutex_);
  std::uint64_t n = 0;
  for (const auto& s : subscriptions_) n += s->errors();
  for (const auto& t : timers_) n += t->errors();
  return n;
}

std::optional<int> module_arguments(int argc, char** argv, std::string_view program, std::string_view about) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "%.*s\nUsage: %.*s [OPTIONS]\n\nOptions:\n  -h,--help  Print this help message and exit\n"
          "  --version  Display program version information and exit\n",
          static_cast<int>(about.size()), about.data(), static_cast<int>(program.size()), program.data());
      return 0;
    }
    if (a == "--version") {
      std::printf("%s\n", SHMBUS_VERSION);
      return 0;
    }
    std::fprintf(stderr, "%.*s: unknown argument '%s'; it takes --help and --version only\n",
                 static_cast<int>(program.size()), program.data(), argv[i]);
    return 2;
  }
  return std::nullopt;
}

}  // namespace shmbus
