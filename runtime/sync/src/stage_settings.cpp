#include "shmbus/sync/stage_settings.hpp"

namespace shmbus::sync {

namespace {

StageSettings read_stage(const TomlReader& r, const toml::table& t) {
  StageSettings s;
  s.where = r.position(t);
  for (const auto& [k, val] : t) {
    const std::string_view key = k.str();
    if (key == "name") {
      s.name = r.string_of(val, key);
    } else if (key == "inputs") {
      if (val.as_array() == nullptr) r.fail(val, "inputs must be an array of channel names");
      s.inputs = r.strings_of(val, key);
    } else if (key == "output") {
      s.output = r.string_of(val, key);
    } else if (key == "policy") {
      s.policy = r.string_of(val, key);
      if (s.policy != "bounded" && s.policy != "exact" && s.policy != "approximate" && s.policy != "latest") {
        r.fail(val, "policy = \"" + s.policy + "\" is unknown; use bounded, exact, approximate or latest");
      }
    } else if (key == "threshold") {
      s.threshold = r.duration_of(val, key);
    } else if (key == "stamp_field") {
      s.stamp_field = r.string_of(val, key);
    } else if (key == "queue_size") {
      s.queue_size = r.bounded(val, key, 1, 1'000'000);
    } else if (key == "master") {
      s.master = r.string_of(val, key);
    } else {
      r.fail(k.source(), "unknown key sync." + std::string{key});
    }
  }
  return s;
}

}  // namespace

std::vector<StageSettings> read_stage_settings(const TomlReader& reader, const toml::node* section) {
  std::vector<StageSettings> out;
  if (section == nullptr) return out;
  for (const toml::table* e : reader.entries_of(*section, "sync")) {
    StageSettings s = read_stage(reader, *e);
    if (s.name.empty()) reader.fail(*e, "a [[sync]] entry needs name = \"...\" (shmtool sync NAME runs it)");
    if (s.inputs.size() < 2) reader.fail(*e, "sync " + s.name + " needs inputs = [\"/a\", \"/b\", ...], at least 2");
    if (s.output.empty()) reader.fail(*e, "sync " + s.name + " needs output = \"/channel\" for its sets");
    for (const auto& other : out) {
      if (other.name == s.name) reader.fail(*e, "sync " + s.name + " is defined twice (first at " + other.where + ")");
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace shmbus::sync
