// shmtool service list | info NAME | call NAME JSON: the domain's services.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <thread>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/service.hpp"

namespace shmbus::tool {
namespace {

using schema::Json;

std::string server_text(const introspect::ServiceView& v) {
  return v.server ? fmt::format("pid {} ({})", v.server->pid, v.server->node) : "none";
}

Json endpoint_json(const introspect::EndpointView& e) { return Json{{"pid", e.pid}, {"node", e.node}, {"id", e.id}}; }

/// Requests the server lost (overwritten before it took them) and the
/// responses the server could not publish.
std::uint64_t requests_lost(const introspect::ServiceView& v) {
  std::uint64_t n = 0;
  for (const auto& s : v.requests.subscribers) {
    if (v.server && s.pid == v.server->pid) n += s.lost;
  }
  return n;
}

Json service_json(const introspect::ServiceView& v) {
  Json clients = Json::array();
  for (const auto& c : v.clients) clients.push_back(endpoint_json(c));
  return Json{{"name", v.name},
              {"type", v.service_type},
              {"request_type", v.requests.type_name},
              {"response_type", v.responses ? v.responses->type_name : ""},
              {"request_channel", service_request_channel(v.name)},
              {"response_channel", service_response_channel(v.name)},
              {"server", v.server ? endpoint_json(*v.server) : Json(nullptr)},
              {"clients", clients},
              {"requests", v.requests.messages},
              {"responses", v.responses_sent},
              {"requests_lost", requests_lost(v)},
              {"client_response_channels", v.client_channels},
              {"late_responses", v.late_responses}};
}

introspect::ServiceView open_service(const Config& config, std::string_view name) {
  validate_channel_name(name);
  try {
    return introspect::service_view(config.domain, name, config.access());
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
    throw Error(Errc::kNotFound,
                fmt::format("service {} not found in domain \"{}\"; `shmtool service list --domain {}` shows its "
                            "services",
                            name, config.domain, config.domain));
  }
}

/// The service's view once both its channels exist, waiting up to
/// `deadline_ns`; nullopt when they did not appear (or Ctrl-C came).
std::optional<introspect::ServiceView> await_service(const Config& config, std::string_view name,
                                                     std::int64_t deadline_ns) {
  for (;;) {
    try {
      introspect::ServiceView v = introspect::service_view(config.domain, name, config.access());
      if (v.responses) return v;
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
    }
    if (mono_now_ns() >= deadline_ns || !sleep_until(std::min(deadline_ns, mono_now_ns() + 10'000'000))) {
      return std::nullopt;
    }
  }
}

}  // namespace

int run_service_list(const Globals& g) {
  const Config config = load_config(g);
  std::vector<introspect::ServiceView> services;
  try {
    const introspect::DomainView domain(config.domain, config.access());
    for (const std::string& name : introspect::service_names(domain)) {
      try {
        services.push_back(introspect::service_view(config.domain, name, config.access()));
      } catch (const Error& e) {
        if (e.code() != Errc::kNotFound) throw;  // removed meanwhile
      }
    }
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;  // no domain yet: no services
  }
  if (g.json) {
    Json out = Json::array();
    for (const auto& v : services) out.push_back(service_json(v));
    print_json(out);
    return 0;
  }
  if (services.empty()) {
    print(fmt::format("no services in domain \"{}\"\n", config.domain));
    return 0;
  }
  Table t({"SERVICE", "TYPE", "SERVER", "CLIENTS>", "REQUESTS>", "RESPONSES>", "LOST>", "LATE>"});
  for (const auto& v : services) {
    t.add({v.name, v.service_type.empty() ? v.requests.type_name : v.service_type, server_text(v),
           std::to_string(v.clients.size()), std::to_string(v.requests.messages), std::to_string(v.responses_sent),
           std::to_string(requests_lost(v)), std::to_string(v.late_responses)});
  }
  print(t.render());
  return 0;
}

int run_service_info(const Globals& g, const std::string& name) {
  const Config config = load_config(g);
  const introspect::ServiceView v = open_service(config, name);
  if (g.json) {
    Json out = service_json(v);
    out["request_schema"] = v.requests.schema;
    out["response_schema"] = v.responses ? v.responses->schema : "";
    print_json(out);
    return 0;
  }
  std::string out = fmt::format("service:   {}\ntype:      {}\nrequests:  {} ({}), {} sent, {} lost by the server\n",
                                v.name, v.service_type, service_request_channel(v.name), v.requests.type_name,
                                v.requests.messages, requests_lost(v));
  out += fmt::format("responses: {} ({}), {} sent, {} late (discarded by their client)\n",
                     service_response_channel(v.name), v.responses ? v.responses->type_name : "-", v.responses_sent,
                     v.late_responses);
  if (!v.client_channels.empty()) {
    out += fmt::format("           and the clients' own: {}\n", fmt::join(v.client_channels, ", "));
  }
  out += fmt::format("server:    {}\nclients ({}):\n", server_text(v), v.clients.size());
  if (!v.clients.empty()) {
    Table t({"PID>", "NODE", "REQUESTS>"});
    for (const auto& c : v.clients) t.add({std::to_string(c.pid), c.node, std::to_string(c.messages)});
    out += t.render(2);
  }
  const auto field_lines = [&out](const char* title, const std::optional<schema::Schema>& s) {
    out += title;
    if (s) {
      for (const auto& f : s->root().fields) out += fmt::format("  {}\n", f.name);
    }
  };
  field_lines("request:\n", schema_of(v.requests));
  field_lines("response:\n", v.responses ? schema_of(*v.responses) : std::nullopt);
  print(out);
  return 0;
}

int run_service_call(const Globals& g, const ServiceCallOptions& o) {
  const Config config = load_config(g);
  validate_channel_name(o.name);
  install_stop_handlers();
  const auto timeout = std::chrono::nanoseconds(static_cast<std::int64_t>(o.timeout_s * 1e9));
  const std::int64_t deadline = mono_now_ns() + timeout.count();
  const auto no_server = [&] {
    return Error(Errc::kNotFound, fmt::format("no server for service {} in domain \"{}\" within {}; start one "
                                              "(`shmtool service list` shows the services)",
                                              o.name, config.domain, seconds_text(o.timeout_s)));
  };
  const std::optional<introspect::ServiceView> v = await_service(config, o.name, deadline);
  if (!v) {
    if (stop_requested()) return 1;
    throw no_server();
  }
  const auto request_schema = schema_of(v->requests);
  const auto response_schema = schema_of(*v->responses);
  if (!request_schema || !response_schema) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("service {} has no stored schema ({} / {}); shmtool can only call typed services", o.name,
                            v->requests.type_name, v->responses->type_name));
  }
  const std::vector<std::byte> request =
      request_schema->encode(message_from_json_text(*request_schema, o.request, "REQUEST"));
  Context ctx = make_context(config);
  const ServiceTypes types{v->service_type, v->requests.type(), v->responses->type()};
  ServiceClient client(o.name, types, ctx);
  std::vector<std::byte> response(client.max_response_size());
  const std::int64_t start = mono_now_ns();
  const CallResult r =
      client.call(request, response, std::chrono::nanoseconds(std::max<std::int64_t>(deadline - start, 0)));
  const std::int64_t round_trip = mono_now_ns() - start;
  switch (r.status) {
    case CallStatus::kOk:
      break;
    case CallStatus::kNoServer:
      throw no_server();
    case CallStatus::kTimeout:
      throw Error(Errc::kResource, fmt::format("service {} did not answer within {} (server {}); raise --timeout or "
                                               "look at the server",
                                               o.name, seconds_text(o.timeout_s), server_text(*v)));
    case CallStatus::kServerError:
      throw Error(Errc::kResource,
                  fmt::format("the server of {} failed on this request (its handler threw; see its log)", o.name));
    case CallStatus::kServerDied:
      throw Error(Errc::kResource,
                  fmt::format("the server of {} ({}) died before it answered; restart it", o.name, server_text(*v)));
    case CallStatus::kLost:
      throw Error(Errc::kResource,
                  fmt::format("the request to {} or its response was lost in a ring (overwritten or stalled; "
                              "`shmtool service info {}` counts it); call again, or raise the capacity of {}",
                              o.name, o.name, service_request_channel(o.name)));
    case CallStatus::kTooLarge:
      throw Error(Errc::kInvalidArgument, fmt::format("{}: {}", o.name, client.request_too_large(request.size())));
    default:
      throw Error(Errc::kResource, fmt::format("call to {} failed: {}", o.name, to_string(r.status)));
  }
  const Json decoded = response_schema->decode(std::span{response.data(), r.size});
  if (g.json) {
    print_json(Json{{"service", o.name},
                    {"type", v->service_type},
                    {"sequence", r.info.inputs().empty() ? 0 : r.info.inputs()[0].sequence},
                    {"round_trip_ns", round_trip},
                    {"response", decoded}});
  } else {
    print(to_yaml(decoded));
  }
  return 0;
}

}  // namespace shmbus::tool
