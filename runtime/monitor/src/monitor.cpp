#include "shmbus/monitor/monitor.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "shmbus/error.hpp"

namespace shmbus::monitor {

std::string_view to_string(Level l) noexcept {
  switch (l) {
    case Level::kNominal:
      return "nominal";
    case Level::kDegraded:
      return "degraded";
    case Level::kCritical:
      return "critical";
    default:
      return "unmonitored";
  }
}

namespace {
/// An endpoint's cumulative age (or transit) sums at the previous refresh.
struct AgeBase {
  std::uint64_t samples = 0;
  std::uint64_t sum_ns = 0;
  double sum_sq_s2 = 0;
};
}  // namespace

/// The stamps inside a channel's window, ascending, in one vector whose
/// front is consumed by an index: nothing allocated while the window is
/// empty (most of 10,000 idle channels), and the storage shrinks again
/// after a burst.
class StampWindow {
 public:
  /// Several publishers stamp after their commits: a new stamp may be a
  /// little older than the newest one kept; it goes in order.
  void add(std::int64_t s) {
    if (empty() || s >= stamps_.back()) {
      stamps_.push_back(s);
    } else {
      stamps_.insert(std::upper_bound(begin(), end(), s), s);
    }
  }
  /// Drops the stamps at or before `start`.
  void drop_through(std::int64_t start) {
    while (head_ < stamps_.size() && stamps_[head_] <= start) ++head_;
    if (head_ == stamps_.size()) {
      stamps_.clear();
      head_ = 0;
    } else if (head_ != 0 && head_ >= stamps_.size() / 2) {
      stamps_.erase(stamps_.begin(), begin());
      head_ = 0;
    }
    // A window that held a burst gives the memory back once it is small.
    constexpr std::size_t kKeep = 64;
    if (stamps_.capacity() > kKeep && stamps_.capacity() / 4 > stamps_.size()) {
      std::vector<std::int64_t>(begin(), end()).swap(stamps_);
      head_ = 0;
    }
  }
  [[nodiscard]] bool empty() const noexcept { return head_ == stamps_.size(); }
  [[nodiscard]] std::size_t size() const noexcept { return stamps_.size() - head_; }
  [[nodiscard]] std::int64_t front() const noexcept { return stamps_[head_]; }
  [[nodiscard]] std::int64_t back() const noexcept { return stamps_.back(); }
  [[nodiscard]] std::vector<std::int64_t>::const_iterator begin() const noexcept {
    return stamps_.begin() + static_cast<std::ptrdiff_t>(head_);
  }
  [[nodiscard]] std::vector<std::int64_t>::const_iterator end() const noexcept { return stamps_.end(); }

 private:
  std::vector<std::int64_t> stamps_;
  std::size_t head_ = 0;
};

/// Per channel: the stamps of the current window (a local copy, ascending),
/// the read cursor into the shared time list, and the level state.
struct Monitor::Tracked {
  explicit Tracked(introspect::ChannelReader r) : reader(std::move(r)) {}
  introspect::ChannelReader reader;
  introspect::TimeListCursor cursor;
  StampWindow in_window;
  bool overwritten_in_window = false;
  std::int64_t overwritten_at = 0;  ///< the first stamp after the last stamps lost to overwriting
  Debouncer debouncer;
  bool truncation_reported = false;
  /// Per endpoint id (subscribers' ages, then publishers' transits, ids
  /// being unique per channel), for the differences over one period; a
  /// handful each, so a vector searched in order.
  std::vector<std::pair<std::uint32_t, AgeBase>> age_base;
  ChannelStatus status;
};

namespace {

/// An endpoint's age (or transit) over the statistics period: differences
/// of the cumulative sums since the previous refresh (`base`, updated);
/// min/max since the previous reset.
Summary age_since(const introspect::EndpointView& e, AgeBase& base) {
  Summary out;
  const std::uint64_t n = e.age_samples - std::min(base.samples, e.age_samples);
  out.count = n;
  if (n != 0) {
    const double sum = static_cast<double>(e.age_sum_ns - std::min(base.sum_ns, e.age_sum_ns)) / 1e9;
    const double sq = e.age_sum_sq_s2 - base.sum_sq_s2;
    const double mean = sum / static_cast<double>(n);
    out.mean = mean;
    out.stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(n) - mean * mean));
    // No extremes since the last reset: a sample raced the reset, or (an
    // observer) the owner's window has just begun. Unknown, not 0.
    if (e.age_min_ns != UINT64_MAX) {
      out.min = static_cast<double>(e.age_min_ns) / 1e9;
      out.max = static_cast<double>(e.age_max_ns) / 1e9;
    }
  }
  base = AgeBase{e.age_samples, e.age_sum_ns, e.age_sum_sq_s2};
  return out;
}

}  // namespace

Monitor::Monitor(Config config, MonitorSettings settings, Role role)
    : config_(std::move(config)), settings_(std::move(settings)), role_(role) {}
Monitor::~Monitor() = default;

void Monitor::reload(Config config, MonitorSettings settings) {
  config_ = std::move(config);
  settings_ = std::move(settings);
  for (auto& [name, t] : channels_) {
    const ChannelSettings s = config_.channel(name);
    t->status.thresholds_hz = s.thresholds_hz;
    t->status.window_ns = s.window.count();
    t->debouncer =
        Debouncer(settings_.debounce_scans,
                  s.thresholds_hz ? (t->status.level == Level::kUnmonitored ? Level::kNominal : t->status.level)
                                  : Level::kUnmonitored);
    t->status.level = t->debouncer.believed();
    t->truncation_reported = false;
  }
}

void Monitor::discover() {
  if (!domain_) {
    try {
      domain_ = std::make_unique<introspect::DomainView>(config_.domain, config_.access());
    } catch (const Error& e) {
      if (e.code() == Errc::kNotFound) return;  // nobody used the domain yet
      throw;
    }
  }
  const std::uint64_t generation = domain_->generation();
  if (generation == generation_) return;
  generation_ = generation;
  const std::vector<std::string> names = domain_->channel_names();
  // Gone: unlisted by `shmtool clean`.
  for (auto it = channels_.begin(); it != channels_.end();) {
    it = std::binary_search(names.begin(), names.end(), it->first) ? std::next(it) : channels_.erase(it);
  }
  for (auto it = unreadable_.begin(); it != unreadable_.end();) {
    it = std::binary_search(names.begin(), names.end(), it->first) ? std::next(it) : unreadable_.erase(it);
  }
  for (const std::string& name : names) {
    if (channels_.count(name) != 0) continue;
    std::unique_ptr<Tracked> t;
    try {
      t = std::make_unique<Tracked>(
          introspect::ChannelReader(config_.domain, name, role_ == Role::kOwner, config_.access()));
    } catch (const Error& e) {
      // Listed but its segment is gone, corrupt or foreign: not ours to
      // measure. Said once; the other channels go on being watched.
      if (e.code() != Errc::kNotFound && unreadable_.emplace(name, e.what()).second) {
        unreadable_warnings_.push_back(name);
      }
      continue;
    }
    unreadable_.erase(name);
    const ChannelSettings s = config_.channel(name);
    t->status.name = name;
    t->status.thresholds_hz = s.thresholds_hz;
    t->status.window_ns = s.window.count();
    const introspect::ChannelView v = t->reader.view();
    t->status.type_name = v.type_name;
    t->status.transport = v.transport;
    t->status.time_list_capacity = v.time_list_capacity;
    t->debouncer = Debouncer(settings_.debounce_scans, s.thresholds_hz ? Level::kNominal : Level::kUnmonitored);
    t->status.level = t->debouncer.believed();
    channels_.emplace(name, std::move(t));
  }
}

std::vector<Transition> Monitor::scan(std::int64_t now_ns) {
  discover();
  std::vector<Transition> transitions;
  for (auto& [name, tp] : channels_) {
    Tracked& t = *tp;
    scratch_.clear();
    const std::uint64_t overwritten = t.reader.read_stamps_since(t.cursor, scratch_);
    for (std::int64_t s : scratch_) {
      t.status.last_stamp_ns = std::max(t.status.last_stamp_ns, s);
      t.in_window.add(s);
    }
    if (overwritten != 0) {
      t.overwritten_in_window = true;
      // The lost stamps came just before the first one read now.
      t.overwritten_at = scratch_.empty() ? now_ns : scratch_.front();
    }
    const std::int64_t start = now_ns - t.status.window_ns;
    t.in_window.drop_through(start);
    // The list wrapped past stamps that were still inside the window.
    const bool truncated = t.overwritten_in_window && t.overwritten_at > start;
    if (!truncated) t.overwritten_in_window = false;

    WindowMeasure& m = t.status.measure;
    m.n = t.in_window.size();
    m.truncated = truncated;
    m.first_ns = m.n ? t.in_window.front() : 0;
    m.last_ns = m.n ? t.in_window.back() : 0;
    m.frequency_hz = frequency_hz(m.n, m.first_ns, m.last_ns);
    if (truncated && !t.truncation_reported) {
      t.truncation_reported = true;
      truncation_warnings_.push_back(name);
    }
    t.status.observed = classify(m.frequency_hz, t.status.thresholds_hz);
    const Level before = t.debouncer.believed();
    const Level after = t.debouncer.observe(t.status.observed);
    t.status.level = after;
    if (after != before && t.status.thresholds_hz) {
      transitions.push_back(
          Transition{name, before, after, m.frequency_hz, *t.status.thresholds_hz, t.status.window_ns});
    }
  }
  return transitions;
}

void Monitor::refresh_statistics() {
  for (auto& [name, tp] : channels_) {
    Tracked& t = *tp;
    // Period statistics over the window, with Welford, in constant memory.
    t.status.measure.period = period_statistics(t.in_window.begin(), t.in_window.end());
    const introspect::ChannelView v = t.reader.view();
    t.status.messages = v.messages;
    t.status.lost = v.lost;
    // Live endpoints only: an entry of a dead process not reclaimed yet is
    // not a publisher or subscriber any more.
    const auto live = [](const std::vector<introspect::EndpointView>& es) {
      return static_cast<std::uint32_t>(std::count_if(es.begin(), es.end(), [](const auto& e) { return e.alive; }));
    };
    t.status.publishers = live(v.publishers);
    t.status.subscribers = live(v.subscribers);
    t.status.subscriber_stats.clear();
    decltype(t.age_base) next_base;
    next_base.reserve(v.subscribers.size() + v.publishers.size());
    const auto base_of = [&t](std::uint32_t id) {
      const auto it = std::find_if(t.age_base.begin(), t.age_base.end(), [id](const auto& b) { return b.first == id; });
      return it == t.age_base.end() ? AgeBase{} : it->second;
    };
    for (const introspect::EndpointView& s : v.subscribers) {
      SubscriberStatus st;
      st.node = s.node;
      st.pid = s.pid;
      st.received = s.messages;
      st.lost = s.lost;
      if (v.overflow == Overflow::kBlock && s.read_cursor != UINT64_MAX) {
        st.unread = s.read_cursor < v.messages ? v.messages - s.read_cursor : 0;
      }
      AgeBase base = base_of(s.id);
      st.age = age_since(s, base);
      next_base.emplace_back(s.id, base);
      t.status.subscriber_stats.push_back(std::move(st));
    }
    t.status.publisher_stats.clear();
    for (const introspect::EndpointView& p : v.publishers) {
      PublisherStatus st;
      st.node = p.node;
      st.pid = p.pid;
      st.published = p.messages;
      st.upstream_lost = p.upstream_lost;
      st.blocked_ns = p.blocked_ns;
      st.block_timeouts = p.block_timeouts;
      AgeBase base = base_of(p.id);
      st.transit = age_since(p, base);
      next_base.emplace_back(p.id, base);
      t.status.publisher_stats.push_back(std::move(st));
    }
    t.age_base = std::move(next_base);
    if (role_ == Role::kOwner) t.reader.reset_age_extremes();
  }
}

std::vector<ChannelStatus> Monitor::statuses() const {
  std::vector<ChannelStatus> out;
  out.reserve(channels_.size());
  for (const auto& [name, t] : channels_) out.push_back(t->status);
  return out;
}

std::optional<introspect::ChannelView> Monitor::view(std::string_view name) const {
  const auto it = channels_.find(name);
  if (it == channels_.end()) return std::nullopt;
  return it->second->reader.view();
}

std::size_t Monitor::channel_count() const noexcept { return channels_.size(); }

std::size_t Monitor::alerting_count() const noexcept {
  return static_cast<std::size_t>(std::count_if(channels_.begin(), channels_.end(), [](const auto& c) {
    return c.second->status.level == Level::kDegraded || c.second->status.level == Level::kCritical;
  }));
}

std::vector<std::string> Monitor::take_truncation_warnings() { return std::exchange(truncation_warnings_, {}); }
std::vector<std::string> Monitor::take_unreadable_warnings() { return std::exchange(unreadable_warnings_, {}); }

}  // namespace shmbus::monitor
