#include "shmbus/sync.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "shmbus/error.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::sync {

std::string_view to_string(Policy p) noexcept {
  switch (p) {
    case Policy::kBoundedDisparity:
      return "bounded";
    case Policy::kExactTime:
      return "exact";
    case Policy::kApproximateTime:
      return "approximate";
    case Policy::kAllLatest:
      return "latest";
  }
  return "?";
}

std::optional<Policy> parse_policy(std::string_view name) noexcept {
  for (Policy p : {Policy::kBoundedDisparity, Policy::kExactTime, Policy::kApproximateTime, Policy::kAllLatest}) {
    if (to_string(p) == name) return p;
  }
  return std::nullopt;
}

std::string_view to_string(DropReason r) noexcept {
  switch (r) {
    case DropReason::kTooOld:
      return "too_old";
    case DropReason::kNoMatch:
      return "no_match";
    case DropReason::kQueueFull:
      return "queue_full";
    case DropReason::kOutOfOrder:
      return "out_of_order";
    case DropReason::kSuperseded:
      return "superseded";
  }
  return "?";
}

// ---------------------------------------------------------------- Aligner

Aligner::Aligner(std::size_t channels, const Options& options)
    : options_(options),
      queues_(channels),
      last_stamp_(channels),
      latest_(channels),
      latest_used_(channels, false),
      dropped_(channels, std::array<std::uint64_t, kDropReasons>{}) {
  if (channels < 2) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("a synchronizer needs at least 2 input channels, got {}; name them all", channels));
  }
  if (options.policy == Policy::kBoundedDisparity && options.threshold.count() <= 0) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("the bounded-disparity threshold must be > 0, got {} ns", options.threshold.count()));
  }
  if (options.threshold.count() < 0) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("the threshold must not be negative, got {} ns", options.threshold.count()));
  }
  if (options.queue_size == 0) throw Error(Errc::kInvalidArgument, "the per-channel queue size must be >= 1");
  if (options.policy == Policy::kAllLatest && options.master >= channels) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("the master channel index {} is out of range (0 to {})", options.master, channels - 1));
  }
}

std::uint64_t Aligner::dropped(std::size_t channel, DropReason reason) const noexcept {
  return channel < dropped_.size() ? dropped_[channel][static_cast<std::size_t>(reason)] : 0;
}

std::uint64_t Aligner::dropped(std::size_t channel) const noexcept {
  std::uint64_t n = 0;
  for (std::size_t r = 0; r < kDropReasons; ++r) n += dropped(channel, static_cast<DropReason>(r));
  return n;
}

std::size_t Aligner::pending() const noexcept {
  std::size_t n = 0;
  for (const auto& q : queues_) n += q.size();
  for (std::size_t c = 0; c < latest_.size(); ++c) n += latest_[c] && !latest_used_[c] ? 1 : 0;
  return n;
}

void Aligner::drop(Item item, DropReason reason) {
  ++dropped_[item.channel][static_cast<std::size_t>(reason)];
  if (on_drop_) on_drop_(item, reason);
}

void Aligner::drop_front(std::size_t channel, DropReason reason) {
  Item item = std::move(queues_[channel].front());
  queues_[channel].pop_front();
  drop(std::move(item), reason);
}

void Aligner::emit_heads(std::vector<Set>& out) {
  Set s;
  s.members.reserve(queues_.size());
  std::int64_t lo = INT64_MAX;
  std::int64_t hi = INT64_MIN;
  for (auto& q : queues_) {
    lo = std::min(lo, q.front().stamp_ns);
    hi = std::max(hi, q.front().stamp_ns);
    s.members.push_back(std::move(q.front()));
    q.pop_front();
  }
  s.disparity_ns = hi - lo;
  ++sets_;
  out.push_back(std::move(s));
}

void Aligner::push(Item item, std::vector<Set>& out) {
  const std::size_t c = item.channel;
  if (c >= queues_.size()) {
    throw Error(Errc::kInvalidArgument, fmt::format("channel index {} out of range (0 to {})", c, queues_.size() - 1));
  }
  // A channel's messages must come in timestamp order: one that does not
  // could break the order of sets, so it goes.
  if (last_stamp_[c] && item.stamp_ns < *last_stamp_[c]) {
    drop(std::move(item), DropReason::kOutOfOrder);
    return;
  }
  last_stamp_[c] = item.stamp_ns;

  if (options_.policy == Policy::kAllLatest) {
    align_latest(std::move(item), out);
    return;
  }
  auto& q = queues_[c];
  const bool was_empty = q.empty();
  if (q.size() >= options_.queue_size) drop_front(c, DropReason::kQueueFull);
  q.push_back(std::move(item));
  switch (options_.policy) {
    case Policy::kBoundedDisparity:
      if (was_empty) align_bounded(c, options_.threshold.count(), DropReason::kTooOld, out);
      break;
    case Policy::kExactTime:
      if (was_empty) align_bounded(c, 0, DropReason::kNoMatch, out);
      break;
    case Policy::kApproximateTime:
      align_approximate(out);
      break;
    case Policy::kAllLatest:
      break;
  }
}

void Aligner::align_bounded(std::size_t pivot_channel, std::int64_t threshold_ns, DropReason mismatch,
                            std::vector<Set>& out) {
  const auto all_non_empty = [&] {
    return std::none_of(queues_.begin(), queues_.end(), [](const auto& q) { return q.empty(); });
  };
  if (!all_non_empty()) return;
  // The pivot rule: the arrival that filled the last empty queue is the
  // pivot; heads older than it by more than T can never be matched with it
  // or with anything after it on its channel.
  const std::int64_t pivot = queues_[pivot_channel].front().stamp_ns;
  for (std::size_t c = 0; c < queues_.size(); ++c) {
    if (c == pivot_channel) continue;
    while (!queues_[c].empty() && queues_[c].front().stamp_ns < pivot - threshold_ns) drop_front(c, mismatch);
  }
  // The guarantee: heads form a set only when they span at most T; else the
  // oldest head goes (the newest head's channel has only newer messages to
  // come). Repeats while every queue has a head, so queued messages that
  // now line up form their sets too.
  while (all_non_empty()) {
    std::size_t oldest = 0;
    std::int64_t lo = INT64_MAX;
    std::int64_t hi = INT64_MIN;
    for (std::size_t c = 0; c < queues_.size(); ++c) {
      const std::int64_t t = queues_[c].front().stamp_ns;
      if (t < lo) {
        lo = t;
        oldest = c;
      }
      hi = std::max(hi, t);
    }
    if (hi - lo <= threshold_ns) {
      emit_heads(out);
    } else {
      drop_front(oldest, mismatch);
    }
  }
}

void Aligner::align_approximate(std::vector<Set>& out) {
  while (true) {
    // The pivot: the newest of the queue heads (the latest of the earliest).
    std::size_t pivot_channel = 0;
    std::int64_t pivot = INT64_MIN;
    for (std::size_t c = 0; c < queues_.size(); ++c) {
      if (queues_[c].empty()) return;
      if (queues_[c].front().stamp_ns > pivot) {
        pivot = queues_[c].front().stamp_ns;
        pivot_channel = c;
      }
    }
    // Each other channel's message nearest to the pivot is known once a
    // message at or after the pivot has arrived on it (or its queue is full:
    // then what is there must do).
    std::vector<std::size_t> choice(queues_.size(), 0);
    for (std::size_t c = 0; c < queues_.size(); ++c) {
      if (c == pivot_channel) continue;
      const auto& q = queues_[c];
      const auto after = std::find_if(q.begin(), q.end(), [&](const Item& i) { return i.stamp_ns >= pivot; });
      if (after == q.end() && q.size() < options_.queue_size) return;  // a nearer one may still come
      std::size_t best = static_cast<std::size_t>((after == q.end() ? q.end() - 1 : after) - q.begin());
      if (after != q.end() && after != q.begin()) {
        const auto before = after - 1;
        if (pivot - before->stamp_ns <= after->stamp_ns - pivot) best = static_cast<std::size_t>(before - q.begin());
      }
      choice[c] = best;
    }
    for (std::size_t c = 0; c < queues_.size(); ++c) {
      for (std::size_t k = 0; k < choice[c]; ++k) drop_front(c, DropReason::kNoMatch);
    }
    emit_heads(out);
  }
}

void Aligner::align_latest(Item item, std::vector<Set>& out) {
  const std::size_t c = item.channel;
  if (c != options_.master) {
    if (latest_[c] && !latest_used_[c]) drop(std::move(*latest_[c]), DropReason::kSuperseded);
    latest_[c] = std::move(item);
    latest_used_[c] = false;
    return;
  }
  for (std::size_t k = 0; k < latest_.size(); ++k) {
    if (k != c && !latest_[k]) {
      drop(std::move(item), DropReason::kNoMatch);
      return;
    }
  }
  Set s;
  std::int64_t lo = item.stamp_ns;
  std::int64_t hi = item.stamp_ns;
  for (std::size_t k = 0; k < latest_.size(); ++k) {
    if (k == c) {
      s.members.push_back(item);
      continue;
    }
    s.members.push_back(*latest_[k]);
    latest_used_[k] = true;
    lo = std::min(lo, latest_[k]->stamp_ns);
    hi = std::max(hi, latest_[k]->stamp_ns);
  }
  s.disparity_ns = hi - lo;
  ++sets_;
  out.push_back(std::move(s));
}

// ----------------------------------------------------------- Synchronizer

namespace {

/// Where a stamp field lies in a message, and how to read it.
struct StampField {
  std::uint32_t offset = 0;
  bool is_signed = false;
};

StampField resolve_stamp_field(const std::string& channel, const TypeInfo& type, const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    return Error(Errc::kInvalidArgument,
                 fmt::format("input {} has type {}, {}; name an int64 or uint64 field of nanoseconds "
                             "(e.g. header.stamp_ns), or none for the publish time",
                             channel, type.name, why));
  };
  if (type.schema.empty()) throw refuse(fmt::format("which has no schema to find '{}' in", path));
  const schema::Schema s = schema::Schema::from_canonical(type.schema);
  const schema::MessageDef* def = &s.root();
  std::uint32_t offset = 0;
  std::string_view rest(path);
  while (true) {
    const auto dot = rest.find('.');
    const std::string_view name = rest.substr(0, dot);
    const auto f = std::find_if(def->fields.begin(), def->fields.end(),
                                [&](const schema::Field& field) { return field.name == name; });
    if (f == def->fields.end()) throw refuse(fmt::format("which has no field '{}'", path));
    if (f->array_length != 0 || f->unbounded) throw refuse(fmt::format("whose field '{}' is an array", path));
    offset += f->offset;
    if (dot == std::string_view::npos) {
      if (f->kind != schema::FieldKind::kPrimitive ||
          (f->primitive != schema::Primitive::kInt64 && f->primitive != schema::Primitive::kUint64)) {
        throw refuse(fmt::format("whose field '{}' is {}, not an int64 or uint64", path, f->type()));
      }
      return StampField{offset, f->primitive == schema::Primitive::kInt64};
    }
    if (f->kind != schema::FieldKind::kMessage) throw refuse(fmt::format("whose field '{}' is not a message", name));
    def = f->message;
    rest = rest.substr(dot + 1);
  }
}

}  // namespace

struct Synchronizer::Input {
  explicit Input(Subscriber s) : subscriber(std::move(s)) {}
  Subscriber subscriber;
  std::optional<StampField> stamp;
  std::vector<std::byte> buffer;
};

/// What an Item's data holds: the message as taken.
struct Stored {
  MessageInfo info;
  std::vector<std::byte> payload;
};

namespace {

std::vector<Subscriber> subscribe(const std::vector<std::string>& inputs, Context& context) {
  std::vector<Subscriber> subs;
  subs.reserve(inputs.size());
  for (const std::string& name : inputs) subs.emplace_back(name, std::nullopt, context);
  return subs;
}

std::vector<std::string> channels_of(const std::vector<Subscriber>& subs) {
  std::vector<std::string> names;
  names.reserve(subs.size());
  for (const Subscriber& s : subs) names.push_back(s.channel());
  return names;
}

}  // namespace

Synchronizer::Synchronizer(const std::vector<std::string>& inputs, const SynchronizerOptions& options, Context& context)
    // The parameters are checked (a throwaway Aligner) before anything is
    // subscribed, so a refused stage never shows up as a subscriber.
    : Synchronizer((Aligner(inputs.size(), options), subscribe(inputs, context)), options) {}

Synchronizer::Synchronizer(std::vector<Subscriber> inputs, const SynchronizerOptions& options)
    : inputs_(channels_of(inputs)), aligner_(inputs.size(), options) {
  std::set<std::string> seen;
  for (const std::string& name : inputs_) {
    if (!seen.insert(name).second) {
      throw Error(Errc::kInvalidArgument, fmt::format("input {} is named twice; name each channel once", name));
    }
  }
  for (Subscriber& sub : inputs) {
    auto in = std::make_unique<Input>(std::move(sub));
    const std::string& name = in->subscriber.channel();
    if (!options.stamp_field.empty()) {
      in->stamp = resolve_stamp_field(name, in->subscriber.type(), options.stamp_field);
    }
    in->buffer.resize(in->subscriber.max_message_size());
    wait_set_.attach(in->subscriber);
    in_.push_back(std::move(in));
  }
  aligner_.on_drop([this](const Item& item, DropReason reason) {
    in_[item.channel]->subscriber.count_discarded(1);
    if (on_drop_) on_drop_(inputs_[item.channel], reason);
  });
}

Synchronizer::~Synchronizer() = default;

void Synchronizer::on_drop(std::function<void(const std::string&, DropReason)> callback) {
  on_drop_ = std::move(callback);
}

std::uint64_t Synchronizer::lost(std::size_t input) const noexcept {
  return input < in_.size() ? in_[input]->subscriber.lost() : 0;
}

void Synchronizer::take_all(std::size_t input, std::vector<Set>& sets) {
  Input& in = *in_[input];
  while (true) {
    const TakeResult r = in.subscriber.take(in.buffer);
    if (r.status == TakeStatus::kNoData) return;
    if (r.status == TakeStatus::kBufferTooSmall) {
      in.buffer.resize(r.info.size);
      continue;
    }
    auto stored = std::make_shared<Stored>();
    stored->info = r.info;
    stored->payload.assign(in.buffer.begin(), in.buffer.begin() + r.info.size);
    Item item;
    item.channel = input;
    item.sequence = r.info.sequence;
    item.stamp_ns = r.info.publish_time_ns;
    if (in.stamp) {
      if (r.info.size < in.stamp->offset + 8) {
        // Shorter than its schema says: cannot be aligned.
        in.subscriber.count_discarded(1);
        if (on_drop_) on_drop_(inputs_[input], DropReason::kNoMatch);
        continue;
      }
      if (in.stamp->is_signed) {
        std::memcpy(&item.stamp_ns, in.buffer.data() + in.stamp->offset, 8);
      } else {
        std::uint64_t u = 0;
        std::memcpy(&u, in.buffer.data() + in.stamp->offset, 8);
        item.stamp_ns = static_cast<std::int64_t>(std::min<std::uint64_t>(u, INT64_MAX));
      }
    }
    item.data = std::move(stored);
    aligner_.push(std::move(item), sets);
  }
}

std::optional<AlignedSet> Synchronizer::next(std::chrono::nanoseconds timeout) {
  // Saturated: nanoseconds::max() waits forever instead of overflowing.
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = timeout >= std::chrono::steady_clock::time_point::max() - start
                            ? std::chrono::steady_clock::time_point::max()
                            : start + timeout;
  std::vector<Set> sets;
  while (ready_.empty()) {
    // Take what is there first, then sleep on all inputs at once.
    for (std::size_t i = 0; i < in_.size(); ++i) take_all(i, sets);
    for (Set& s : sets) {
      AlignedSet a;
      a.disparity_ns = s.disparity_ns;
      for (Item& item : s.members) {
        // Stored objects are made non-const in take_all(); when this set is
        // the last holder (every policy but all-latest, whose partners serve
        // again), the payload moves instead of being copied a second time.
        auto* stored = const_cast<Stored*>(static_cast<const Stored*>(item.data.get()));
        std::vector<std::byte> payload = item.data.use_count() == 1 ? std::move(stored->payload) : stored->payload;
        a.members.push_back(Member{inputs_[item.channel], item.stamp_ns, stored->info, std::move(payload)});
      }
      ready_.push_back(std::move(a));
    }
    sets.clear();
    if (!ready_.empty()) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    wait_set_.wait(deadline - now, ready_inputs_);
  }
  AlignedSet a = std::move(ready_.front());
  ready_.pop_front();
  return a;
}

}  // namespace shmbus::sync
