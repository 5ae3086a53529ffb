#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "shmbus/error.hpp"
#include "shmbus/sync.hpp"
#include "stamp_field.hpp"

namespace shmbus::sync {

struct Synchronizer::Input {
  explicit Input(Subscriber s) : subscriber(std::move(s)) {}
  Subscriber subscriber;
  std::optional<StampField> stamp;
  std::vector<std::byte> buffer;
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
    auto taken = std::make_shared<TakenMessage>();
    taken->info = r.info;
    taken->payload.assign(in.buffer.begin(), in.buffer.begin() + r.info.size);
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
      item.stamp_ns = in.stamp->read(in.buffer.data());
    }
    item.message = std::move(taken);
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
        a.members.push_back(Member{inputs_[item.channel], item.stamp_ns, std::move(item.message)});
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
