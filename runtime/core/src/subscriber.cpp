#include "shmbus/subscriber.hpp"

#include <fmt/format.h>

#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "subscriber_impl.hpp"

namespace shmbus {

namespace {

/// The seqlock's optimistic copy of a payload (SeqlockReadScope): inline
/// in take's loop, out of line for readers in place (copy_in_place).
inline void copy_racy(const std::byte* payload, std::size_t size, std::byte* out) noexcept {
  [[maybe_unused]] SeqlockReadScope racy_copy;
  if (size != 0) std::memcpy(out, payload, size);  // an empty buffer's data() may be null
}

}  // namespace

Subscriber::Subscriber(std::string_view channel, const std::optional<TypeInfo>& type, Context& context,
                       const SubscriberOptions& options)
    : impl_(std::make_unique<Impl>(ChannelName(channel, context.config().domain), context.config())) {
  impl_->context = &context;
  impl_->options = options;
  try {
    impl_->open(type);
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound || type || !options.wait_for_channel) throw;
    impl_->next_attach_try = mono_now_ns() + kAttachRetryNs;
  }
}

bool Subscriber::Impl::try_attach(bool force) noexcept {
  if (channel) return true;
  const std::int64_t now = mono_now_ns();
  if (!force && now < next_attach_try) return false;
  next_attach_try = now + kAttachRetryNs;
  try {
    open(std::nullopt, true);
  } catch (const Error&) {
    return false;  // not there yet (or not usable yet): tried again later
  }
  // The channel did not exist when we subscribed: every message in it came
  // after, so none is skipped (those already overwritten count as lost).
  next = 0;
  return true;
}

void Subscriber::Impl::open(const std::optional<TypeInfo>& type, bool from_start) {
  from_start = from_start || options.from_first;
  auto ch = context->state().channel(name, settings, type ? &*type : nullptr);
  // The iceoryx port first: a subscriber whose port cannot be made is not
  // attached (try_attach tries again).
  std::unique_ptr<IceoryxSubscriberPort> port;
  if (ch->transport() == Transport::kIceoryx) {
    // A channel that appeared after we subscribed holds only messages sent
    // after: as on the ring, we take them from its start (iceoryx's
    // history, up to 16 of them).
    const auto capacity = static_cast<std::uint32_t>(ch->capacity());
    const std::uint32_t history = from_start ? capacity : options.history;
    port = std::make_unique<IceoryxSubscriberPort>(context->config().domain, name.str(), capacity, history,
                                                   ch->live_endpoints(false) != 0);
  }
  entry_index = ch->register_subscriber(options.node.empty() ? context->node() : options.node, id);
  if (port) {
    // What each live publisher sent before we subscribed is not ours to
    // lose, unless we start at the channel's first message: then what
    // iceoryx's history no longer holds is. A publisher counts a message
    // after iceoryx delivered it, so a message in flight now is counted at
    // most once, by its arrival.
    // Publishers with a later id registered after this (relaxed: ids are
    // only compared, and the scan below is ordered by its own loads).
    id_floor = ch->header().next_endpoint_id.load(std::memory_order_relaxed);
    last_count.clear();
    for (std::uint32_t i = 0; i < kMaxPublishers; ++i) {
      Channel::PublisherCount c;
      if (ch->publisher_count(i, c) && c.live) last_count.emplace_back(c.id, from_start ? 0 : c.sent);
    }
  }
  iox = std::move(port);
  channel = std::move(ch);
  Impl& s = *this;
  s.header = &s.channel->header();
  s.entry = &s.channel->subscriber(s.entry_index);
  s.stall_timeout_ns =
      options.stall_timeout.count() > 0 ? options.stall_timeout.count() : s.channel->stall_timeout_ns();
  s.wait_spin_ns = settings.wait_spin.count();
  s.age_sample_every = settings.age_sample_every;
  // The newest ring: history is what it holds ("Generations").
  s.ring_held = s.channel->current_ring();
  if (!s.ring_held) {
    s.channel->unregister_subscriber(s.entry_index);
    s.channel.reset();
    throw Error(Errc::kLayoutMismatch,
                fmt::format("channel {}: its current ring cannot be mapped (see the line above)", s.name.str()));
  }
  s.ring = s.ring_held.get();
  s.gen = s.ring->generation;
  s.ring_end = kStartUnknown;
  s.max_size = s.iox ? s.channel->max_message_size() : s.ring->max_message_size;
  s.header->subscriber_wants_slots[s.entry_index].store(options.history, std::memory_order_relaxed);
  s.header->subscriber_generation[s.entry_index].store(s.gen + 1, std::memory_order_relaxed);
  const std::uint64_t cursor = s.channel->write_cursor();
  const std::uint64_t history = std::min<std::uint64_t>(options.history, s.ring->capacity());
  s.next = cursor > history && !from_start ? cursor - history : 0;
  if (s.next < s.ring->start) {
    // From the start of a channel that grew before we came: what the older
    // rings held is counted lost; history comes from the newest ring.
    if (from_start) s.skip_to(s.ring->start);
    s.next = s.ring->start;
  }
  // overflow = block: publishers wait for us from their next look at the
  // cursors (they look again when they reach the room they last saw, at
  // most a ring's worth of messages later). Until then a publisher may
  // still overwrite history we start from; the seqlock sees it, and we
  // count it lost.
  s.blocking = !s.iox && s.channel->overflow() == Overflow::kBlock;
  if (s.blocking) s.show_cursor();
}

Subscriber::~Subscriber() = default;
Subscriber::Subscriber(Subscriber&&) noexcept = default;
Subscriber& Subscriber::operator=(Subscriber&&) noexcept = default;

TakeResult Subscriber::take(std::span<std::byte> buffer) noexcept {
  return impl_->take_with([buffer](const std::byte* payload, std::uint32_t size, const MessageInfo&) {
    if (size > buffer.size()) return false;
    copy_racy(payload, size, buffer.data());
    return true;
  });
}

void Subscriber::copy_in_place(std::span<const std::byte> payload, std::byte* out) noexcept {
  copy_racy(payload.data(), payload.size(), out);
}

TakeResult Subscriber::read_in_place(InPlaceReader reader, void* context) noexcept {
  return impl_->take_with([reader, context](const std::byte* payload, std::uint32_t size, const MessageInfo& info) {
    reader(context, std::span<const std::byte>{payload, size}, info);
    return true;
  });
}

TakeResult Subscriber::take_exact(std::span<std::byte> buffer) noexcept {
  return impl_->take_sized(buffer.size(), [buffer](const std::byte* payload, std::uint32_t size, const MessageInfo&) {
    copy_racy(payload, size, buffer.data());
  });
}

TakeResult Subscriber::read_exact_in_place(std::size_t size, InPlaceReader reader, void* context) noexcept {
  return impl_->take_sized(size, [reader, context](const std::byte* payload, std::uint32_t n, const MessageInfo& info) {
    reader(context, std::span<const std::byte>{payload, n}, info);
  });
}

void Subscriber::require_room(std::size_t size, std::string_view type) const {
  const Impl& s = *impl_;
  if (!s.channel || size <= s.max_size || size <= s.channel->size_ceiling()) return;
  throw Error(Errc::kTypeMismatch,
              fmt::format("channel {} holds messages of at most {} bytes ({}), and its type {} is {} bytes: give it a "
                          "max_message_size of at least {} where it is created, then stop the processes using it "
                          "(shmtool info {}) and run `shmtool clean`",
                          s.name.str(), s.max_size, s.channel->sizes_origin(), type, size, size, s.name.str()));
}

bool Subscriber::reread_in_place(std::uint64_t sequence, InPlaceRereader reader, void* context) const noexcept {
  const Channel* ch = impl_->channel.get();
  // iceoryx channels have no ring: a chunk, once released, is gone.
  if (ch == nullptr || impl_->iox) return false;
  // The ring of its generation, looked up through the channel (the
  // subscriber's own may be moving on in another thread): one we still
  // hold, or one mapped again while its segment exists.
  std::shared_ptr<const Ring> r;
  try {
    r = ch->ring_of(sequence);
  } catch (...) {
    return false;
  }
  if (!r) return false;
  layout::SlotHeader* slot = r->slot(sequence);
  // SYNC POINT READ: pairs with the publisher's release store of the
  // committed state, as in take.
  const std::uint64_t st = slot->state.load(std::memory_order_acquire);
  if (st != layout::committed_state(sequence)) return false;
  const RingCheck check(&slot->state, st);
  {
    // No SeqlockReadScope: the header words are atomic loads, and the
    // reader is the caller's code, which ThreadSanitizer checks.
    const std::uint16_t flags = std::atomic_ref<std::uint16_t>(slot->flags).load(std::memory_order_relaxed);
    if ((flags & layout::kSlotDiscarded) != 0) return false;
    const std::uint32_t size = Impl::slot_size_in(slot, flags, r->max_message_size);
    reader(context, std::span<const std::byte>{Channel::payload(slot, flags, size), size}, check);
  }
  return check.unchanged();
}

bool RingCheck::unchanged() const noexcept {
  // SYNC POINT READ (seqlock): pairs with the publisher's release fence
  // after it marks the slot writing.
  std::atomic_thread_fence(std::memory_order_acquire);
  return state_->load(std::memory_order_relaxed) == expected_;
}

std::uint32_t Subscriber::capacity() const noexcept {
  if (!impl_->channel) return 0;
  return static_cast<std::uint32_t>(impl_->ring != nullptr && !impl_->iox ? impl_->ring->capacity()
                                                                          : impl_->channel->capacity());
}

bool Subscriber::pending() const noexcept {
  if (!impl_->channel && !impl_->try_attach()) return false;
  return impl_->pending();
}

Transport Subscriber::transport() const noexcept {
  return impl_->channel ? impl_->channel->transport() : Transport::kShm;
}

bool Subscriber::attached() const noexcept { return impl_->channel != nullptr; }
bool Subscriber::attach() noexcept { return impl_->try_attach(true); }

bool Subscriber::wait(std::chrono::nanoseconds timeout) noexcept {
  Impl* self = impl_.get();
  return wait_any(std::span<Impl* const>{&self, 1}, {}, timeout, nullptr) != 0;
}

// Before the channel is attached there is no entry: counters read 0.
std::uint64_t Subscriber::received() const noexcept {
  return impl_->entry ? impl_->entry->messages.load(std::memory_order_relaxed) : 0;
}
std::uint64_t Subscriber::lost() const noexcept {
  return impl_->entry ? impl_->entry->lost().load(std::memory_order_relaxed) : 0;
}

LostRange Subscriber::take_lost() noexcept {
  Impl& s = *impl_;
  if (s.pending_lost == 0 || s.iox) return {};
  s.pending_lost = 0;
  return {s.lost_from, s.next};
}

LostRange Subscriber::lost_before(const MessageInfo& info) const noexcept {
  const Impl& s = *impl_;
  // lost_from stays until the next loss after a delivered message.
  if (info.lost_before == 0 || s.iox || s.lost_from > info.sequence) return {};
  return {s.lost_from, info.sequence};
}

void Subscriber::count_discarded(std::uint64_t n) noexcept {
  if (!impl_->entry) return;
  // Single writer (this subscriber): a relaxed load and store, no RMW.
  auto& d = impl_->entry->discarded;
  d.store(d.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

std::uint64_t Subscriber::discarded() const noexcept {
  return impl_->entry ? impl_->entry->discarded.load(std::memory_order_relaxed) : 0;
}
void Subscriber::count_error(std::uint64_t n) noexcept {
  if (!impl_->entry) return;
  auto& e = impl_->entry->errors;
  e.store(e.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

std::uint64_t Subscriber::errors() const noexcept {
  return impl_->entry ? impl_->entry->errors.load(std::memory_order_relaxed) : 0;
}
std::uint32_t Subscriber::id() const noexcept { return impl_->id; }
const std::string& Subscriber::channel() const noexcept { return impl_->name.str(); }
std::uint32_t Subscriber::channel_index() const noexcept {
  return impl_->header ? impl_->header->registry_index.load(std::memory_order_relaxed) : UINT32_MAX;
}
std::size_t Subscriber::max_message_size() const noexcept { return impl_->max_size; }
std::size_t Subscriber::size_ceiling() const noexcept {
  return impl_->channel ? std::max<std::size_t>(impl_->channel->size_ceiling(), impl_->max_size) : 0;
}
TypeInfo Subscriber::type() const { return impl_->channel ? impl_->channel->type() : TypeInfo{}; }

}  // namespace shmbus
