// shmbus._shmbus, recordings and introspection: MCAP recordings read and
// written as the recorder does (shmbus::record, shmbus::lineage), and a
// domain's channels as `shmtool list --json` lists them.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "binding.hpp"
#include "shmbus/config_source.hpp"
#include "shmbus/error.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/monitor/listing.hpp"
#include "shmbus/monitor/settings.hpp"
#include "shmbus/record/export.hpp"
#include "shmbus/record/import.hpp"
#include "shmbus/record/recording.hpp"

namespace shmbus::python {

namespace {

py::object json_to_python(const nlohmann::ordered_json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

/// A recording (one file, or a split series named by its first file), read
/// in log-time order file after file, filtered by channel and time.
class PyReader {
 public:
  PyReader(const std::string& path, std::vector<std::string> channels, std::uint64_t start_ns, std::uint64_t end_ns)
      : path_(path),
        files_(record::recording_files(path)),
        globs_(std::move(channels)),
        start_(start_ns),
        end_(end_ns) {
    for (const std::string& f : files_) {
      const mcap::Reader r(f);
      const mcap::FileInfo& info = r.info();
      std::map<std::uint16_t, std::uint64_t> counts(info.statistics.channel_message_counts.begin(),
                                                    info.statistics.channel_message_counts.end());
      for (const mcap::Channel& c : info.channels) {
        auto [it, fresh] = channels_.try_emplace(c.topic);
        if (fresh) it->second.type = record::recorded_type(info, c);
        it->second.messages += counts[c.id];
      }
    }
  }

  [[nodiscard]] py::list channels() const {
    py::list out;
    for (const auto& [name, c] : channels_) {
      py::dict d;
      d["name"] = name;
      d["type"] = tuple_of(c.type);
      d["messages"] = c.messages;
      out.append(d);
    }
    return out;
  }

  /// The next message: (channel, sequence, log_time, publish_time, bytes),
  /// or None after the last.
  py::object next() {
    for (;;) {
      if (!reader_) {
        if (file_ >= files_.size()) return py::none();
        reader_ = std::make_unique<mcap::Reader>(files_[file_++]);
      }
      mcap::MessageView v;
      if (!reader_->next_message(v)) {
        reader_.reset();
        continue;
      }
      if (v.log_time < start_ || v.log_time >= end_) continue;
      const mcap::Channel* c = reader_->info().channel(v.channel_id);
      if (c == nullptr) continue;
      if (!globs_.empty() && !record::matches_any(globs_, c->topic)) continue;
      return py::make_tuple(c->topic, v.sequence, v.log_time, v.publish_time, copy_bytes(v.data));
    }
  }

  /// Where a recorded message came from: {node, publisher_id, inputs:
  /// [(channel, sequence)], ...}; None when the recording holds no
  /// provenance for it.
  py::object origin(const std::string& channel, std::uint64_t sequence) {
    if (!lineage_) {
      try {
        lineage_ = std::make_unique<lineage::Lineage>(path_);
      } catch (const Error& e) {
        if (e.code() != Errc::kNotFound) throw;
        return py::none();
      }
    }
    const std::optional<lineage::Origin> o = lineage_->origin({channel, sequence});
    if (!o) return py::none();
    py::dict d;
    d["node"] = o->node;
    d["publisher_id"] = o->publisher_id;
    d["processing_ns"] = o->processing_ns;
    py::list inputs;
    for (const lineage::MessageId& in : o->inputs) inputs.append(py::make_tuple(in.channel, in.sequence));
    d["inputs"] = inputs;
    d["inputs_cut"] = o->inputs_cut;
    return d;
  }

  py::object graph() { return json_to_python(lineage::Lineage(path_).graph().json()); }

  void rewind() {
    reader_.reset();
    file_ = 0;
  }

 private:
  struct Channel {
    TypeInfo type;
    std::uint64_t messages = 0;
  };
  std::string path_;
  std::vector<std::string> files_;
  std::vector<std::string> globs_;
  std::uint64_t start_;
  std::uint64_t end_;
  std::map<std::string, Channel> channels_;
  std::unique_ptr<mcap::Reader> reader_;
  std::size_t file_ = 0;
  std::unique_ptr<lineage::Lineage> lineage_;
};

/// Writes a recording as the recorder lays it out (record::RecordedChannels).
class PyWriter {
 public:
  PyWriter(const std::string& path, const std::string& compression) {
    mcap::WriterOptions o;
    const auto c = mcap::parse_compression(compression);
    if (!c) {
      throw Error(Errc::kInvalidArgument, fmt::format("compression \"{}\" is not one of none, lz4, zstd", compression));
    }
    o.compression = *c;
    writer_ = std::make_unique<mcap::Writer>(path, o);
    forms_.emplace(*writer_);
  }

  void write(const std::string& channel, const TypeTuple& type, std::uint64_t sequence, std::uint64_t log_time,
             std::uint64_t publish_time, const py::buffer& data) {
    mcap::Writer& w = get();
    auto it = channels_.find(channel);
    if (it == channels_.end()) {
      it = channels_.emplace(channel, forms_->add(channel, type_of(type))).first;
    }
    const py::buffer_info b = data.request();
    mcap::Message m;
    m.channel_id = it->second;
    m.sequence = static_cast<std::uint32_t>(sequence);
    m.log_time = log_time;
    m.publish_time = publish_time;
    m.data = {static_cast<const std::byte*>(b.ptr), static_cast<std::size_t>(b.size * b.itemsize)};
    w.write(m);
  }

  void close() {
    if (writer_) writer_->close();
    writer_.reset();
  }

 private:
  mcap::Writer& get() {
    if (!writer_) throw Error(Errc::kInvalidArgument, "the writer is closed");
    return *writer_;
  }
  std::unique_ptr<mcap::Writer> writer_;
  std::optional<record::RecordedChannels> forms_;
  std::map<std::string, std::uint16_t> channels_;
};

/// What an export or an import wrote and left out, as Python data.
py::dict report_dict(const record::ConversionReport& r) {
  py::list left;
  for (const record::UndecodedChannel& c : r.left_out) {
    py::dict d;
    d["channel"] = c.topic;
    d["type"] = c.type;
    d["messages"] = c.messages;
    d["why"] = c.why;
    left.append(d);
  }
  py::dict d;
  d["messages"] = r.messages;
  d["channels"] = r.channels;
  d["bytes"] = r.bytes;
  d["left_out"] = left;
  return d;
}

/// `convert` run without the GIL (it reads and writes whole files).
template <typename F>
py::dict converted(F convert) {
  const record::ConversionReport r = [&] {
    const py::gil_scoped_release unlocked;
    return convert();
  }();
  return report_dict(r);
}

}  // namespace

void register_recording(py::module_& m) {
  py::class_<PyReader>(m, "_Reader")
      .def(py::init<const std::string&, std::vector<std::string>, std::uint64_t, std::uint64_t>())
      .def("channels", &PyReader::channels)
      .def("next", &PyReader::next)
      .def("origin", &PyReader::origin)
      .def("graph", &PyReader::graph)
      .def("rewind", &PyReader::rewind);
  py::class_<PyWriter>(m, "_Writer")
      .def(py::init<const std::string&, const std::string&>())
      .def("write", &PyWriter::write)
      .def("close", &PyWriter::close);
  m.def(
      "channels",
      [](const std::optional<std::string>& domain, const std::string& config) {
        const monitor::MonitorConfig loaded = monitor::load_monitor_config(ConfigSource{config, domain});
        monitor::Monitor mon(loaded.config, loaded.monitor, monitor::Monitor::Role::kObserver);
        return json_to_python(monitor::list_domain(mon).json());
      },
      py::arg("domain") = py::none(), py::arg("config") = "");
  m.def(
      "export_recording",
      [](const std::string& input, const std::string& output, const std::string& encoding, bool strict) {
        record::ExportOptions o;
        o.encoding = record::parse_export_encoding(encoding);
        o.strict = strict;
        return converted([&] { return record::export_recording(input, output, o); });
      },
      py::arg("input"), py::arg("output"), py::arg("encoding"), py::arg("strict"));
  m.def(
      "import_ros2",
      [](const std::string& input, const std::string& output, const std::vector<std::string>& msg_path, bool strict) {
        record::ImportOptions o;
        o.msg_paths = msg_path;
        o.strict = strict;
        return converted([&] { return record::import_ros2(input, output, o); });
      },
      py::arg("input"), py::arg("output"), py::arg("msg_path"), py::arg("strict"));
}

}  // namespace shmbus::python
