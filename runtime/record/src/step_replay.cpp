#include "shmbus/record/step_replay.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/input_scope.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/schema/json_input.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus::record {

namespace {

using lineage::MessageId;

/// One recorded message, held in memory.
struct Recorded {
  std::string channel;
  std::uint64_t sequence = 0;  ///< the MCAP sequence (the channel sequence's low 32 bits)
  std::uint64_t log_time = 0;
  std::uint64_t publish_time = 0;
  std::vector<std::byte> data;
};

/// A message's live identity: its channel's registry index and sequence.
using LiveId = std::pair<std::uint32_t, std::uint64_t>;

/// The recording's identity of a message (sequences as MCAP holds them).
MessageId id_of(const std::string& channel, std::uint64_t sequence) { return {channel, sequence & 0xFFFFFFFFULL}; }

bool asked_to_stop(const std::function<bool()>& stop) { return stop && stop(); }

}  // namespace

class StepReplay::Impl {
 public:
  Impl(const Config& config, StepReplayOptions o) : o_(std::move(o)), config_(config), lineage_(checked(o_).recording) {
    Config c = config;
    c.node = o_.node;
    context_ = std::make_unique<Context>(std::move(c));
    load();
    plan();
  }

  [[nodiscard]] std::size_t frame_count() const noexcept { return frames_.size(); }
  [[nodiscard]] const std::vector<std::string>& live_modules() const noexcept { return live_order_; }
  [[nodiscard]] const std::vector<std::string>& unframed() const noexcept { return unframed_; }

  void await(const std::function<bool()>& stop) {
    if (awaited_) return;
    open_output();
    open_channels();
    await_modules(stop);
    awaited_ = true;
  }

  StepReplaySummary run(const std::function<bool()>& stop) {
    await(stop);
    stop_ = stop;
    StepReplaySummary summary;
    const std::int64_t start = mono_now_ns();
    for (std::size_t f = 0; f < frames_.size() && !asked_to_stop(stop_); ++f) play_frame(f);
    summary.took_s = static_cast<double>(mono_now_ns() - start) / 1e9;
    close_output(summary.took_s);
    summary.frames = played_;
    summary.failed = failed_;
    summary.unmatched = unmatched_;
    summary.stopped = played_ < frames_.size();
    return summary;
  }

 private:
  /// The whole recording into memory, by identity.
  /// The options, refused when they cannot replay.
  static const StepReplayOptions& checked(const StepReplayOptions& o) {
    if (o.recording.empty()) throw Error(Errc::kInvalidArgument, "play --step: give one recording");
    if (o.output.empty()) throw Error(Errc::kInvalidArgument, "play --step: give the file to write with -o OUT.mcap");
    if (o.modules.empty()) {
      throw Error(Errc::kInvalidArgument, "play --step: name the live modules with --modules m1[,m2...]");
    }
    return o;
  }

  void load() {
    reader_ = std::make_unique<mcap::Reader>(o_.recording);
    const mcap::FileInfo& info = reader_->info();
    std::map<std::uint16_t, const mcap::Channel*> channels;
    for (const mcap::Channel& c : info.channels) {
      if (c.topic != kProvenanceChannel) channels[c.id] = &c;
    }
    reader_->read_messages([&](const mcap::MessageView& m) {
      auto it = channels.find(m.channel_id);
      if (it == channels.end()) return true;
      const std::string& name = it->second->topic;
      index_[id_of(name, m.sequence)] = messages_.size();
      messages_.push_back({name, m.sequence, m.log_time, m.publish_time, {m.data.begin(), m.data.end()}});
      return true;
    });
    for (const auto& [id, c] : channels) channel_info_[c->topic] = c;
  }

  /// Which modules are live, the root, the frames and their closures.
  void plan() {
    const lineage::Graph& g = lineage_.graph();
    std::set<std::string> live;
    for (const std::string& m : o_.modules) {
      const auto it =
          std::find_if(g.modules.begin(), g.modules.end(), [&](const lineage::ModuleNode& n) { return n.name == m; });
      if (it == g.modules.end()) {
        std::vector<std::string> names;
        names.reserve(g.modules.size());
        for (const auto& n : g.modules) names.push_back(n.name);
        throw Error(Errc::kNotFound,
                    fmt::format("play --step: the recording has no module '{}'; it has {}", m, fmt::join(names, ", ")));
      }
      if (it->reads.empty()) {
        throw Error(Errc::kInvalidArgument,
                    fmt::format("play --step: module '{}' reads nothing, so nothing can step it; replay its output "
                                "from the recording (leave it out of --modules)",
                                m));
      }
      live.insert(m);
      modules_[m] = &*it;
      for (const auto& c : it->writes) overridden_.insert(c);
    }
    for (const std::string& m : g.order) {
      if (live.count(m) != 0) live_order_.push_back(m);
    }
    root_ = live_order_.front();
    // Recorded outputs of the live modules, and who cites each message.
    std::map<MessageId, std::vector<std::size_t>> cited_by;
    for (std::size_t i = 0; i < messages_.size(); ++i) {
      const Recorded& r = messages_[i];
      if (overridden_.count(r.channel) == 0) continue;
      const auto origin = lineage_.origin({r.channel, r.sequence});
      if (!origin || live.count(origin->node) == 0) continue;
      origins_[i] = *origin;
      for (const MessageId& in : origin->inputs) cited_by[id_of(in.channel, in.sequence)].push_back(i);
    }
    for (std::size_t i = 0; i < messages_.size(); ++i) {
      auto it = origins_.find(i);
      if (it == origins_.end() || it->second.node != root_ || it->second.inputs.empty()) continue;
      Frame f;
      std::vector<std::size_t> todo{i};
      std::set<std::size_t> seen{i};
      while (!todo.empty()) {
        const std::size_t x = todo.back();
        todo.pop_back();
        f.outputs.push_back(x);
        auto c = cited_by.find(id_of(messages_[x].channel, messages_[x].sequence));
        if (c == cited_by.end()) continue;
        for (const std::size_t y : c->second) {
          if (seen.insert(y).second) todo.push_back(y);
        }
      }
      std::sort(f.outputs.begin(), f.outputs.end());  // recorded order
      frames_.push_back(std::move(f));
    }
    find_unframed();
    if (frames_.empty()) {
      throw Error(Errc::kNotFound, fmt::format("play --step: the recording has no output of '{}' with provenance; "
                                               "was it recorded by this version's shmtool record?",
                                               root_));
    }
  }

  /// Recorded outputs of the live modules that no frame reaches: the
  /// replay cannot make them again, so it says which and fails (a
  /// recording that lost a root output, or an output whose provenance was
  /// not recorded, would otherwise replay with a frame silently missing).
  void find_unframed() {
    std::set<std::size_t> framed;
    for (const Frame& f : frames_) framed.insert(f.outputs.begin(), f.outputs.end());
    for (std::size_t i = 0; i < messages_.size(); ++i) {
      const Recorded& r = messages_[i];
      if (overridden_.count(r.channel) == 0 || framed.count(i) != 0) continue;
      const auto origin = lineage_.origin({r.channel, r.sequence});
      std::string why;
      if (!origin) {
        why = "the recording has no provenance for it";
      } else if (origin->inputs.empty()) {
        why = "it cites no input";
      } else if (index_.count(id_of(origin->inputs[0].channel, origin->inputs[0].sequence)) == 0) {
        why = fmt::format("its trigger {}#{} is not in the recording (lost while recording?)",
                          origin->inputs[0].channel, origin->inputs[0].sequence);
      } else if (overridden_.count(origin->inputs[0].channel) != 0) {
        why = fmt::format("its trigger {}#{} is in no frame either", origin->inputs[0].channel,
                          origin->inputs[0].sequence);
      } else {
        why = fmt::format("its trigger {}#{} is no output of {}", origin->inputs[0].channel, origin->inputs[0].sequence,
                          root_);
      }
      unframed_.push_back(fmt::format("{}#{}: {}", r.channel, r.sequence, why));
    }
  }

  /// Publishers for every channel fed, subscribers on every live output.
  void open_channels() {
    for (const Frame& f : frames_) {
      for (const std::size_t y : f.outputs) {
        for (const MessageId& in : origins_.at(y).inputs) {
          if (overridden_.count(in.channel) == 0) (void)publisher(in.channel);
        }
      }
    }
    for (const std::string& c : overridden_) {
      auto sub = std::make_unique<Subscriber>(c, type_of(c), *context_, SubscriberOptions{.node = o_.node});
      wait_set_.attach(*sub);
      outputs_[c] = std::move(sub);
    }
  }

  TypeInfo type_of(const std::string& channel) const {
    auto it = channel_info_.find(channel);
    if (it == channel_info_.end()) {
      throw Error(Errc::kNotFound, fmt::format("play --step: {} is not in the recording", channel));
    }
    return recorded_type(reader_->info(), *it->second);
  }

  Publisher& publisher(const std::string& channel) {
    auto& p = publishers_[channel];
    if (!p) p = std::make_unique<Publisher>(channel, type_of(channel), *context_);
    return *p;
  }

  /// Every live module subscribed to every channel it reads in the
  /// recording, within --timeout: else the user has not started it (exit 3).
  void await_modules(const std::function<bool()>& stop) {
    const std::int64_t deadline = mono_now_ns() + static_cast<std::int64_t>(o_.timeout_s * 1e9);
    for (const std::string& m : live_order_) {
      for (const std::string& c : modules_.at(m)->reads) {
        for (;;) {
          bool subscribed = false;
          try {
            const auto view = introspect::ChannelReader(config_.domain, c, false, config_.access()).view();
            subscribed = std::any_of(view.subscribers.begin(), view.subscribers.end(),
                                     [&](const introspect::EndpointView& e) { return e.alive && e.node == m; });
          } catch (const Error&) {
            // not created yet
          }
          if (subscribed) break;
          if (mono_now_ns() > deadline || asked_to_stop(stop)) {
            throw Error(Errc::kNotFound,
                        fmt::format("play --step: module '{}' does not read {} in domain '{}' after {:g} s; start it "
                                    "first (its node must be named '{}')",
                                    m, c, config_.domain, o_.timeout_s, m));
          }
          sleep_until(mono_now_ns() + 5'000'000);
        }
      }
    }
  }

  struct Frame {
    std::vector<std::size_t> outputs;  ///< recorded outputs of live modules, in recorded order
  };

  /// Publishes recorded message `i` on its live channel (no provenance of
  /// the player's own), remembering its live identity.
  void feed(std::size_t i) {
    if (!fed_.insert(i).second) return;
    const Recorded& r = messages_[i];
    Publisher& p = publisher(r.channel);
    const InputScope none;  // what the player took is not what this message came from
    Loan loan = p.loan(r.data.size());
    if (!loan.valid()) throw Error(Errc::kResource, fmt::format("play --step: cannot publish on {}", r.channel));
    std::copy(r.data.begin(), r.data.end(), loan.data().begin());
    const std::uint64_t seq = loan.sequence();
    if (p.commit(loan) != PublishResult::kOk) {
      throw Error(Errc::kResource, fmt::format("play --step: a publish on {} was dropped", r.channel));
    }
    const LiveId live{p.channel_index(), seq};
    live_of_[i] = live;
    recorded_of_[live] = i;
    write(r, recorded_provenance(i));
  }

  void play_frame(std::size_t f) {
    const Frame& frame = frames_[f];
    // What the frame's outputs cite and no live module makes: side inputs
    // first, then triggers, each group in recorded order.
    std::set<std::size_t> sides;
    std::set<std::size_t> triggers;
    std::vector<MessageId> missing;
    for (const std::size_t y : frame.outputs) {
      const auto& inputs = origins_.at(y).inputs;
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        if (overridden_.count(inputs[k].channel) != 0) continue;
        auto it = index_.find(id_of(inputs[k].channel, inputs[k].sequence));
        if (it == index_.end()) {
          missing.push_back(inputs[k]);
          continue;
        }
        (k == 0 ? triggers : sides).insert(it->second);
      }
    }
    for (const std::size_t t : triggers) sides.erase(t);
    if (!missing.empty() && missing_reported_++ < 3) {
      note(fmt::format("frame {}: {} input(s) not in the recording (first {}#{}); the modules run without them\n", f,
                       missing.size(), missing[0].channel, missing[0].sequence));
    }
    for (const std::size_t i : sides) feed(i);
    for (const std::size_t i : triggers) feed(i);
    // An output already answered in an earlier frame (it cites several
    // root outputs) is not waited for again.
    std::set<std::size_t> waiting;
    for (const std::size_t y : frame.outputs) {
      if (live_of_.count(y) == 0) waiting.insert(y);
    }
    bool failed = false;
    while (!waiting.empty()) {
      if (collect(waiting)) continue;
      // Timed out: the earliest unanswered output's module is named; its
      // recorded output takes its place, and the rest may now answer.
      const std::size_t y = *waiting.begin();
      const lineage::Origin& o = origins_.at(y);
      std::vector<std::string> inputs;
      inputs.reserve(o.inputs.size());
      for (const MessageId& in : o.inputs) inputs.push_back(fmt::format("{}#{}", in.channel, in.sequence));
      note(fmt::format("frame {}: module {} did not answer within {:g} s (inputs {}); recorded {}#{} used instead\n", f,
                       o.node, o_.timeout_s, fmt::join(inputs, ", "), messages_[y].channel, messages_[y].sequence));
      failed = true;
      failed_frames_.push_back(std::to_string(f));
      waiting.erase(y);
      feed(y);
    }
    // What is still held answers nothing of this frame: a late answer to a
    // failed frame, or an output of no frame.
    unmatched_ += held_.size();
    held_.clear();
    ++played_;
    if (failed) ++failed_;
  }

  /// Takes live outputs until every one in `waiting` is answered (true) or
  /// --timeout passes without an answer (false).
  bool collect(std::set<std::size_t>& waiting) {
    const std::int64_t deadline = mono_now_ns() + static_cast<std::int64_t>(o_.timeout_s * 1e9);
    std::vector<std::size_t> ready;
    while (!waiting.empty()) {
      bool took = false;
      for (auto& [channel, sub] : outputs_) {
        std::vector<std::byte> buffer(sub->max_message_size());
        TakeResult r = sub->take(buffer);
        if (r.status == TakeStatus::kBufferTooSmall) {  // the channel grew
          buffer.resize(r.info.size);
          r = sub->take(buffer);
        }
        if (!r.ok()) continue;
        took = true;
        buffer.resize(r.info.size);
        held_.push_back({&channel, sub->channel_index(), r.info, std::move(buffer)});
        // One output may be taken before the output it answers (m2's c5
        // before m1's c3): what matches nothing yet is held and tried again
        // after each match.
        for (bool matched = true; matched;) {
          matched = false;
          for (auto it = held_.begin(); it != held_.end(); ++it) {
            if (answer(*it, waiting)) {
              held_.erase(it);
              matched = true;
              break;
            }
          }
        }
      }
      if (took) continue;
      const std::int64_t left = deadline - mono_now_ns();
      if (left <= 0 || asked_to_stop(stop_)) return false;
      wait_set_.wait(std::chrono::nanoseconds(std::min<std::int64_t>(left, 100'000'000)), ready);
    }
    return true;
  }

  /// A live output not matched yet.
  struct Held {
    const std::string* channel;
    std::uint32_t channel_index;
    MessageInfo info;
    std::vector<std::byte> data;
  };

  /// Matches a live output to the recorded one it answers: same channel,
  /// and its trigger is the live counterpart of the recorded trigger.
  bool answer(Held& h, std::set<std::size_t>& waiting) {
    const std::string& channel = *h.channel;
    const MessageInfo& info = h.info;
    if (info.input_count != 0) {
      const LiveId trigger{info.inputs()[0].channel_index, info.inputs()[0].sequence};
      auto t = recorded_of_.find(trigger);
      for (const std::size_t y : waiting) {
        if (t == recorded_of_.end() || messages_[y].channel != channel) continue;
        const MessageId& want = origins_.at(y).inputs.front();
        const Recorded& got = messages_[t->second];
        if (id_of(want.channel, want.sequence) != id_of(got.channel, got.sequence)) continue;
        const LiveId live{h.channel_index, info.sequence};
        live_of_[y] = live;
        recorded_of_[live] = y;
        fed_.insert(y);
        Recorded out = messages_[y];
        out.data = std::move(h.data);
        out.publish_time = static_cast<std::uint64_t>(info.publish_wall_ns);
        write(out, live_provenance(y, info));
        waiting.erase(y);
        return true;
      }
    }
    return false;
  }

  /// The provenance of recorded message `i`, as the recording has it.
  std::pair<ProvenanceFacts, std::vector<Provenance>> recorded_provenance(std::size_t i) {
    const Recorded& r = messages_[i];
    const auto origin = lineage_.origin({r.channel, r.sequence});
    ProvenanceFacts facts{index_of(r.channel), 0, r.sequence};
    std::vector<Provenance> entries;
    if (origin) {
      facts.publisher_id = origin->publisher_id;
      facts.processing_ns = origin->processing_ns;
      facts.input_count = static_cast<std::uint16_t>(origin->inputs.size());
      for (const MessageId& in : origin->inputs) entries.push_back({index_of(in.channel), 0, in.sequence});
      for (const auto& [via, in] : origin->second_level) {
        entries.push_back({index_of(in.channel), static_cast<std::uint32_t>(via), in.sequence});
      }
    }
    return {facts, entries};
  }

  /// A live output's provenance in the recording's identities: each input
  /// the player fed or a live module answered becomes the recorded message
  /// it stands for (an input the player cannot name is left out).
  std::pair<ProvenanceFacts, std::vector<Provenance>> live_provenance(std::size_t y, const MessageInfo& info) {
    const Recorded& r = messages_[y];
    ProvenanceFacts facts{index_of(r.channel), origins_.at(y).publisher_id, r.sequence, info.processing_ns};
    std::vector<Provenance> entries;
    for (const Provenance& in : info.inputs()) {
      auto it = recorded_of_.find({in.channel_index, in.sequence});
      if (it == recorded_of_.end()) continue;
      entries.push_back({index_of(messages_[it->second].channel), 0, messages_[it->second].sequence});
    }
    facts.input_count = static_cast<std::uint16_t>(entries.size());
    return {facts, entries};
  }

  std::uint32_t index_of(const std::string& channel) {
    auto it = recorded_indexes_.find(channel);
    if (it != recorded_indexes_.end()) return it->second;
    // Not in the recording's index list: numbered after its largest.
    const std::uint32_t next = 1'000'000 + static_cast<std::uint32_t>(recorded_indexes_.size());
    return recorded_indexes_.emplace(channel, next).first->second;
  }

  /// Writes one message (and its provenance record) into OUT.
  void write(const Recorded& r, const std::pair<ProvenanceFacts, std::vector<Provenance>>& provenance) {
    auto it = out_channels_.find(r.channel);
    if (it == out_channels_.end()) {
      const mcap::FileInfo& info = reader_->info();
      const mcap::Channel& c = *channel_info_.at(r.channel);
      const mcap::Schema* s = info.schema(c.schema_id);
      std::uint16_t schema = 0;
      if (s != nullptr) {
        auto sit = out_schemas_.find(s->id);
        if (sit == out_schemas_.end())
          sit = out_schemas_.emplace(s->id, out_->add_schema(s->name, s->encoding, s->data)).first;
        schema = sit->second;
      }
      it = out_channels_.emplace(r.channel, out_->add_channel(schema, c.topic, c.message_encoding, c.metadata)).first;
    }
    out_->write(mcap::Message{it->second, static_cast<std::uint32_t>(r.sequence), r.log_time, r.publish_time, r.data});
    const auto& [facts, entries] = provenance;
    if (entries.empty() && facts.publisher_id == first_publisher(r.channel)) return;
    if (!provenance_channel_) provenance_channel_ = add_provenance_channel(*out_, {});
    const shmbus_msgs::MessageProvenance p = provenance_record(facts, entries);
    out_->write(mcap::Message{*provenance_channel_, static_cast<std::uint32_t>(provenance_written_++), r.log_time,
                              r.publish_time, std::as_bytes(std::span{&p, 1})});
  }

  std::uint32_t first_publisher(const std::string& channel) const {
    auto it = first_publishers_.find(channel);
    return it != first_publishers_.end() ? it->second : 0;
  }

  /// OUT carries the recording's topology and writers, so bag graph and
  /// bag diff read it like any recording.
  void open_output() {
    mcap::WriterOptions w;
    w.library = o_.library;
    out_ = std::make_unique<mcap::Writer>(o_.output, w);
    for (const mcap::Metadata& m : reader_->info().metadata) {
      if (m.name == kChannelIndexesMetadata) {
        for (const auto& [name, index] : m.values)
          recorded_indexes_[name] = static_cast<std::uint32_t>(std::stoul(index));
      } else if (m.name == kWritersMetadata) {
        for (const auto& [name, value] : m.values) {
          first_publishers_[name] = schema::unsigned_value<std::uint32_t>(
              schema::parse_json<nlohmann::json>(value).at("first_publisher"), "first_publisher");
        }
      }
      if (m.name == kModulesMetadata || m.name == kChannelTypesMetadata || m.name == kWritersMetadata ||
          m.name == kChannelIndexesMetadata || m.name == kRecordingMetadata) {
        kept_metadata_.push_back(m);
      }
    }
  }

  void close_output(double took_s) {
    for (const mcap::Metadata& m : kept_metadata_) out_->write_metadata(m);
    out_->write_metadata({kReplayMetadata,
                          {{"source", o_.recording},
                           {"modules", fmt::format("{}", fmt::join(live_order_, ","))},
                           {"frames", std::to_string(played_)},
                           {"failed", std::to_string(failed_)},
                           {"failed_frames", fmt::format("{}", fmt::join(failed_frames_, ","))},
                           {"unframed", std::to_string(unframed_.size())},
                           {"seconds", fmt::format("{:.3f}", took_s)}}});
    out_->close();
  }

  void note(const std::string& line) const {
    if (o_.on_note) o_.on_note(line);
  }

  StepReplayOptions o_;
  std::function<bool()> stop_;
  bool awaited_ = false;
  Config config_;
  lineage::Lineage lineage_;
  std::unique_ptr<Context> context_;
  std::unique_ptr<mcap::Reader> reader_;
  std::vector<Recorded> messages_;
  std::map<MessageId, std::size_t> index_;
  std::map<std::string, const mcap::Channel*> channel_info_;
  std::map<std::string, const lineage::ModuleNode*> modules_;
  std::set<std::string> overridden_;  ///< channels the live modules write
  std::vector<std::string> live_order_;
  std::string root_;
  std::map<std::size_t, lineage::Origin> origins_;  ///< recorded outputs of live modules
  std::vector<Frame> frames_;
  std::map<std::string, std::unique_ptr<Publisher>> publishers_;
  std::map<std::string, std::unique_ptr<Subscriber>> outputs_;
  WaitSet wait_set_;
  std::set<std::size_t> fed_;
  std::vector<Held> held_;
  std::map<std::size_t, LiveId> live_of_;
  std::map<LiveId, std::size_t> recorded_of_;
  std::unique_ptr<mcap::Writer> out_;
  std::map<std::string, std::uint16_t> out_channels_;
  std::map<std::uint16_t, std::uint16_t> out_schemas_;
  std::optional<std::uint16_t> provenance_channel_;
  std::uint64_t provenance_written_ = 0;
  std::map<std::string, std::uint32_t> recorded_indexes_;
  std::map<std::string, std::uint32_t> first_publishers_;
  std::vector<mcap::Metadata> kept_metadata_;
  std::vector<std::string> failed_frames_;
  std::vector<std::string> unframed_;  ///< recorded live outputs no frame reaches, and why
  std::uint64_t played_ = 0;
  std::uint64_t failed_ = 0;
  std::uint64_t unmatched_ = 0;
  int missing_reported_ = 0;
};

StepReplay::StepReplay(const Config& config, StepReplayOptions options)
    : impl_(std::make_unique<Impl>(config, std::move(options))) {}
StepReplay::~StepReplay() = default;
std::size_t StepReplay::frame_count() const noexcept { return impl_->frame_count(); }
const std::vector<std::string>& StepReplay::live_modules() const noexcept { return impl_->live_modules(); }
const std::vector<std::string>& StepReplay::unframed() const noexcept { return impl_->unframed(); }
void StepReplay::await_modules(const std::function<bool()>& stop) { impl_->await(stop); }
StepReplaySummary StepReplay::run(const std::function<bool()>& stop) { return impl_->run(stop); }

}  // namespace shmbus::record
