#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdio>
#include <thread>

#include "shmbus/clock.hpp"
#include "shmbus/input_scope.hpp"
#include "shmbus/node.hpp"
#include "shmbus/stop_signals.hpp"

namespace shmbus {

namespace {

constexpr std::int64_t kNever = INT64_MAX;

void add_one(std::atomic<std::uint64_t>& c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// Takes `group` for one callback: a mutually exclusive group runs one at a
/// time; a reentrant one always may.
bool enter(CallbackGroup& group, std::atomic<bool>& busy, std::atomic<bool>& in_flight) noexcept {
  bool expected = false;
  if (!in_flight.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
  if (group.kind() == CallbackGroupKind::kReentrant) return true;
  expected = false;
  if (busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) return true;
  in_flight.store(false, std::memory_order_release);
  return false;
}

/// Gives back what enter() took. The release stores pair with enter()'s
/// acquiring CASes: the next thread to enter sees everything the callback
/// wrote (one subscription's or group's callbacks are ordered, never
/// overlapping).
void leave(const CallbackGroup& group, std::atomic<bool>& busy, std::atomic<bool>& in_flight) noexcept {
  if (group.kind() == CallbackGroupKind::kMutuallyExclusive) busy.store(false, std::memory_order_release);
  in_flight.store(false, std::memory_order_release);
}

}  // namespace

/// One unit of work a multi-threaded worker claimed.
struct Executor::Work {
  Subscription* subscription = nullptr;
  Timer* timer = nullptr;
  std::int64_t due = 0;  ///< timers: when the claim saw it due
};

Executor::Executor(std::size_t threads) : threads_(std::max<std::size_t>(threads, 1)) {}
Executor::~Executor() = default;

void Executor::add(Node& node) {
  nodes_.push_back(&node);
  seen_.push_back(~0ULL);  // forces a refresh
}

void Executor::stop() noexcept {
  stop_requested_.store(true, std::memory_order_release);
  stop_guard_.trigger();
}

bool Executor::stopping() const noexcept {
  if (stop_requested_.load(std::memory_order_acquire)) return true;
  for (const Node* n : nodes_) {
    if (!n->ok()) return true;
  }
  return false;
}

/// Re-reads the nodes' subscriptions and timers when one was added, and
/// rebuilds the wait set. True when something changed.
bool Executor::refresh() {
  bool changed = false;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    // Acquire pairs with Node::announce_change's release: the lists it
    // announced are complete when read below.
    const std::uint64_t g = nodes_[i]->generation_.load(std::memory_order_acquire);
    if (g != seen_[i]) {
      seen_[i] = g;
      changed = true;
    }
  }
  if (!changed) return false;
  subscriptions_.clear();
  timers_.clear();
  signals_ = false;
  for (Node* n : nodes_) {
    const std::lock_guard lock(n->mutex_);
    for (auto& s : n->subscriptions_) {
      // A cancelled subscription leaves the wait set: its pending messages
      // must not wake the executor for nothing.
      if (!s->cancelled_.load(std::memory_order_acquire)) subscriptions_.push_back(s.get());
    }
    for (auto& t : n->timers_) timers_.push_back(t.get());
    signals_ |= n->options_.handle_signals;
  }
  if (signals_) install_stop_signals();
  wait_set_.clear();
  wait_index_.clear();
  for (std::size_t i = 0; i < subscriptions_.size(); ++i) {
    wait_set_.attach(subscriptions_[i]->subscriber_);
    wait_index_.push_back(i);
  }
  wait_set_.attach(stop_guard_);
  if (signals_) wait_set_.attach(stop_signal_guard());
  for (Node* n : nodes_) wait_set_.attach(n->wake_);
  return true;
}

void Executor::handle_exception(Node& node, const std::string& source, const std::exception_ptr& error) {
  std::string what = "an exception that is not a std::exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (node.options_.on_exception == OnException::kStop) {
    {
      const std::lock_guard lock(error_mutex_);
      if (!fatal_) fatal_ = error;
      has_fatal_.store(true, std::memory_order_release);
    }
    std::fprintf(stderr, "%s\n",
                 fmt::format("shmbus: node \"{}\": the callback of {} threw: {} (the node stops: on_exception = stop)",
                             node.name(), source, what)
                     .c_str());
    stop();
    return;
  }
  const std::uint64_t n = node.errors();
  if (std::has_single_bit(n)) {  // the 1st, 2nd, 4th, 8th...: a throwing loop does not flood the log
    std::fprintf(stderr, "%s\n",
                 fmt::format("shmbus: node \"{}\": the callback of {} threw: {} ({} so far; the node goes on)",
                             node.name(), source, what, n)
                     .c_str());
  }
}

/// Runs one due timer: its next deadline first (absolute, start + k *
/// period; ticks already missed by a whole period are skipped and counted),
/// then its callback.
void Executor::fire(Timer& t, std::int64_t now) {
  const std::int64_t due = t.next_ns_.load(std::memory_order_relaxed);
  if (t.periodic_) {
    const std::int64_t late_periods = (now - due) / t.period_ns_;
    if (late_periods > 0) t.missed_.fetch_add(static_cast<std::uint64_t>(late_periods), std::memory_order_relaxed);
    t.deadline_ns_.store(due + late_periods * t.period_ns_, std::memory_order_relaxed);
    t.next_ns_.store(due + (late_periods + 1) * t.period_ns_, std::memory_order_relaxed);
  } else {
    t.deadline_ns_.store(due, std::memory_order_relaxed);
    t.cancelled_.store(true, std::memory_order_release);
  }
  InputScope scope;
  try {
    t.callback_();
  } catch (...) {
    add_one(t.errors_);
    handle_exception(*t.node_, fmt::format("a timer ({} ns)", t.period_ns_), std::current_exception());
  }
  add_one(t.runs_);
}

/// Runs the due timers; returns the earliest deadline of those left.
std::int64_t Executor::run_due_timers(std::int64_t now, std::size_t& ran) {
  std::int64_t earliest = kNever;
  for (Timer* t : timers_) {
    if (t->cancelled()) continue;
    if (t->next_ns_.load(std::memory_order_relaxed) <= now) {
      fire(*t, now);
      ++ran;
      if (t->cancelled()) continue;
    }
    earliest = std::min(earliest, t->next_ns_.load(std::memory_order_relaxed));
  }
  return earliest;
}

/// Tells `s`'s on_lost of the messages it lost that no message followed.
void Executor::report_lost(Subscription& s) {
  const LostRange lost = s.subscriber_.take_lost();
  if (lost.empty()) return;
  try {
    s.on_lost_(lost);
  } catch (...) {
    callback_threw(s);
  }
}

/// Counts and handles the exception a callback of `s` threw (being caught).
void Executor::callback_threw(Subscription& s) {
  add_one(s.errors_);
  s.subscriber_.count_error();
  handle_exception(*s.node_, s.channel(), std::current_exception());
}

/// Takes and handles up to a batch of `s`'s messages; returns how many.
std::size_t Executor::drain(Subscription& s) {
  std::size_t n = 0;
  while (n < s.batch_ && !s.cancelled_.load(std::memory_order_relaxed)) {
    InputScope scope;  // the message taken first is what the callback's publishes cite first
    TakeStatus status;
    try {
      status = s.dispatch();
    } catch (...) {
      callback_threw(s);
      status = TakeStatus::kOk;
    }
    if (status != TakeStatus::kOk) {
      if (status == TakeStatus::kNoData && s.on_lost_) report_lost(s);
      break;
    }
    add_one(s.calls_);
    ++n;
    if (stop_requested_.load(std::memory_order_relaxed) || s.node_->stop_requested_.load(std::memory_order_relaxed)) {
      break;  // a callback stopped the spin: no more callbacks
    }
  }
  return n;
}

/// Clears the nodes' wake guards (a load first: most rounds find them clear).
void Executor::reset_wakes() noexcept {
  for (Node* n : nodes_) {
    if (n->wake_.triggered()) n->wake_.reset();
  }
}

std::size_t Executor::spin_once(std::chrono::nanoseconds timeout) {
  refresh();
  std::size_t ran = 0;
  std::int64_t next_timer = timers_.empty() ? kNever : run_due_timers(mono_now_ns(), ran);
  if (timeout.count() <= 0) {
    // A poll: try every subscription, as a loop of take()s would (an idle
    // take reads only the slot's state line, no publisher's line).
    for (Subscription* s : subscriptions_) ran += drain(*s);
  } else if (!stopping()) {
    // Waits only when no timer ran; either way runs what is ready. Without
    // timers the timeout goes to the wait as it is (no clock read here).
    if (ran != 0) {
      wait_set_.wait(std::chrono::nanoseconds(0), ready_);
    } else if (next_timer == kNever) {
      wait_set_.wait(timeout, ready_);
    } else {
      const std::int64_t now = mono_now_ns();
      const std::int64_t until = std::min(saturating_deadline(now, timeout), next_timer);
      wait_set_.wait(std::chrono::nanoseconds(std::max<std::int64_t>(until - now, 0)), ready_);
    }
    for (const std::size_t i : ready_) ran += drain(*subscriptions_[wait_index_[i]]);
    if (!timers_.empty() && ran == 0) run_due_timers(mono_now_ns(), ran);
  }
  reset_wakes();
  // OnException::kStop: rethrown here too; the node's own stop() is left
  // for the caller's `while (node.ok())` to see.
  if (fatal_pending()) {
    stop_requested_.store(false, std::memory_order_release);
    stop_guard_.reset();
    rethrow_fatal();
  }
  return ran;
}

bool Executor::fatal_pending() const noexcept { return has_fatal_.load(std::memory_order_acquire); }

void Executor::rethrow_fatal() {
  if (!fatal_pending()) return;
  std::exception_ptr fatal;
  {
    const std::lock_guard lock(error_mutex_);
    std::swap(fatal, fatal_);
    has_fatal_.store(false, std::memory_order_release);
  }
  if (fatal) std::rethrow_exception(fatal);
}

void Executor::spin_single() {
  while (!stopping()) {
    refresh();
    std::int64_t next_timer = kNever;
    std::size_t ran = 0;
    if (!timers_.empty()) next_timer = run_due_timers(mono_now_ns(), ran);
    if (stopping()) break;
    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max();
    if (next_timer != kNever) timeout = std::chrono::nanoseconds(std::max<std::int64_t>(next_timer - mono_now_ns(), 0));
    wait_set_.wait(timeout, ready_);
    reset_wakes();
    for (const std::size_t i : ready_) drain(*subscriptions_[wait_index_[i]]);
  }
}

/// Multi-threaded: claims one unit of free work (a due timer or a pending
/// subscription whose group lets it run), round robin.
bool Executor::next_work(Work& w) {
  const std::int64_t now = mono_now_ns();
  for (Timer* t : timers_) {
    if (t->cancelled() || t->next_ns_.load(std::memory_order_relaxed) > now) continue;
    if (!enter(*t->group_, t->group_->busy_, t->in_flight_)) continue;
    w = Work{nullptr, t, now};
    return true;
  }
  const std::size_t n = subscriptions_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_start_ + k) % n;
    Subscription& s = *subscriptions_[i];
    // Claimed first: the subscriber's read position belongs to whoever holds
    // the claim (a worker may be draining it right now).
    if (s.cancelled_.load(std::memory_order_relaxed) || !enter(*s.group_, s.group_->busy_, s.in_flight_)) continue;
    if (!s.subscriber_.pending()) {
      leave(*s.group_, s.group_->busy_, s.in_flight_);
      continue;
    }
    next_start_ = i + 1;
    w = Work{&s, nullptr, 0};
    return true;
  }
  return false;
}

/// Multi-threaded: sleeps until a free subscription is pending, a free
/// timer is due, a worker finishes, or a stop. `ready` is scratch.
void Executor::wait_for_work(std::vector<std::size_t>& ready) {
  WaitSet ws;
  for (Subscription* s : subscriptions_) {
    const bool group_busy =
        s->group_->kind() == CallbackGroupKind::kMutuallyExclusive && s->group_->busy_.load(std::memory_order_acquire);
    if (s->cancelled_.load(std::memory_order_relaxed) || s->in_flight_.load(std::memory_order_acquire) || group_busy) {
      continue;  // a worker finishing it triggers work_done_
    }
    ws.attach(s->subscriber_);
  }
  std::int64_t deadline = kNever;
  for (Timer* t : timers_) {
    if (t->cancelled() || t->in_flight_.load(std::memory_order_acquire)) continue;
    deadline = std::min(deadline, t->next_ns_.load(std::memory_order_relaxed));
  }
  ws.attach(stop_guard_);
  ws.attach(work_done_);
  if (signals_) ws.attach(stop_signal_guard());
  for (Node* n : nodes_) ws.attach(n->wake_);
  const auto timeout = deadline == kNever
                           ? std::chrono::nanoseconds::max()
                           : std::chrono::nanoseconds(std::max<std::int64_t>(deadline - mono_now_ns(), 0));
  ws.wait(timeout, ready);
}

/// Multi-threaded: runs claimed work and gives the claim back.
void Executor::run(Work& w) {
  std::atomic<bool>* in_flight = nullptr;
  CallbackGroup* group = nullptr;
  if (w.timer != nullptr) {
    fire(*w.timer, mono_now_ns());
    in_flight = &w.timer->in_flight_;
    group = w.timer->group_;
  } else {
    drain(*w.subscription);
    in_flight = &w.subscription->in_flight_;
    group = w.subscription->group_;
  }
  leave(*group, group->busy_, *in_flight);
}

void Executor::worker() {
  std::vector<std::size_t> ready;
  for (;;) {
    Work w;
    {
      const std::lock_guard lock(wait_mutex_);
      for (;;) {
        if (stopping()) {
          stop_guard_.trigger();  // the others leave too
          return;
        }
        work_done_.reset();
        reset_wakes();
        refresh();
        if (next_work(w)) break;
        wait_for_work(ready);
      }
    }
    run(w);
    work_done_.trigger();
  }
}

void Executor::spin() {
  refresh();
  if (threads_ == 1) {
    spin_single();
  } else {
    std::vector<std::thread> extra;
    for (std::size_t i = 1; i < threads_; ++i) extra.emplace_back([this] { worker(); });
    worker();
    for (auto& t : extra) t.join();
  }
  // A stop is consumed by the spin it ended.
  stop_requested_.store(false, std::memory_order_release);
  stop_guard_.reset();
  for (Node* n : nodes_) n->stop_requested_.store(false, std::memory_order_release);
  rethrow_fatal();
}

}  // namespace shmbus
