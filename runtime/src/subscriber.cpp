#include "shmbus/subscriber.hpp"

#include "subscriber_impl.hpp"

namespace shmbus {

Subscriber::Subscriber(std::string_view channel, const std::optional<TypeInfo>& type, Context& context,
                       SubscriberOptions options)
    : impl_(std::make_unique<Impl>()) {
  auto ch = context.state().channel(channel, type ? &*type : nullptr);
  impl_->entry_index = ch->register_subscriber(context.node(), impl_->id);
  impl_->channel = std::move(ch);
  Impl& s = *impl_;
  s.header = &s.channel->header();
  s.entry = &s.channel->subscriber(s.entry_index);
  s.stall_timeout_ns = s.channel->stall_timeout_ns();
  s.max_size = s.channel->max_message_size();
  const ChannelSettings settings = context.config().channel(channel);
  s.wait_spin_ns = settings.wait_spin.count();
  s.age_sample_every = settings.age_sample_every;
  const std::uint64_t cursor = s.header->write_cursor.load(std::memory_order_acquire);
  const std::uint64_t history = std::min<std::uint64_t>(options.history, s.channel->capacity());
  s.next = cursor > history ? cursor - history : 0;
}

Subscriber::~Subscriber() = default;
Subscriber::Subscriber(Subscriber&&) noexcept = default;
Subscriber& Subscriber::operator=(Subscriber&&) noexcept = default;

TakeResult Subscriber::take(std::span<std::byte> buffer) noexcept {
  return impl_->take_with([buffer](const std::byte* payload, std::uint32_t size, const MessageInfo&) {
    if (size > buffer.size()) return false;
    std::memcpy(buffer.data(), payload, size);
    return true;
  });
}

TakeResult Subscriber::read_in_place(InPlaceReader reader, void* context) noexcept {
  return impl_->take_with([reader, context](const std::byte* payload, std::uint32_t size, const MessageInfo& info) {
    reader(context, std::span<const std::byte>{payload, size}, info);
    return true;
  });
}

bool Subscriber::pending() const noexcept { return reader_pending(*impl_->channel, impl_->next); }

bool Subscriber::wait(std::chrono::nanoseconds timeout) noexcept {
  Impl* self = impl_.get();
  return wait_any(std::span<Impl* const>{&self, 1}, timeout, nullptr) != 0;
}

std::uint64_t Subscriber::received() const noexcept { return impl_->entry->messages.load(std::memory_order_relaxed); }
std::uint64_t Subscriber::lost() const noexcept { return impl_->entry->lost.load(std::memory_order_relaxed); }

void Subscriber::count_discarded(std::uint64_t n) noexcept {
  // Single writer (this subscriber): a relaxed load and store, no RMW.
  auto& d = impl_->entry->discarded;
  d.store(d.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

std::uint64_t Subscriber::discarded() const noexcept { return impl_->entry->discarded.load(std::memory_order_relaxed); }
std::uint32_t Subscriber::id() const noexcept { return impl_->id; }
const std::string& Subscriber::channel() const noexcept { return impl_->channel->name(); }
std::uint32_t Subscriber::channel_index() const noexcept {
  return impl_->header->registry_index.load(std::memory_order_relaxed);
}
std::size_t Subscriber::max_message_size() const noexcept { return impl_->max_size; }
TypeInfo Subscriber::type() const { return impl_->channel->type(); }

}  // namespace shmbus
