#include "shmbus/sync.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "shmbus/error.hpp"

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

void Aligner::drop(const Item& item, DropReason reason) {
  ++dropped_[item.channel][static_cast<std::size_t>(reason)];
  if (on_drop_) on_drop_(item, reason);
}

void Aligner::drop_front(std::size_t channel, DropReason reason) {
  Item item = std::move(queues_[channel].front());
  queues_[channel].pop_front();
  drop(item, reason);
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
    drop(item, DropReason::kOutOfOrder);
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
    if (latest_[c] && !latest_used_[c]) drop(*latest_[c], DropReason::kSuperseded);
    latest_[c] = std::move(item);
    latest_used_[c] = false;
    return;
  }
  for (std::size_t k = 0; k < latest_.size(); ++k) {
    if (k != c && !latest_[k]) {
      drop(item, DropReason::kNoMatch);
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

}  // namespace shmbus::sync
