#include "services.hpp"

#include "bus.hpp"

#include <fmt/format.h>

#include <optional>

namespace shmbus::bridge {

ServiceCaller::~ServiceCaller() {
  const std::lock_guard lock(mutex_);
  for (auto& [name, w] : workers_) {
    {
      const std::lock_guard wl(w->mutex);
      w->stop = true;
    }
    w->wake.notify_all();
  }
  for (auto& [name, w] : workers_) w->thread.join();
}

bool ServiceCaller::call(const std::string& service, const ServiceTypes& types, std::vector<std::byte> request,
                         std::shared_ptr<const schema::Schema> response_schema, std::chrono::nanoseconds timeout,
                         bool int64_as_string, Done done) {
  Worker* w = nullptr;
  {
    const std::lock_guard lock(mutex_);
    auto& slot = workers_[service];
    if (!slot) {
      slot = std::make_unique<Worker>();
      Worker* raw = slot.get();
      raw->thread = std::thread([this, service, raw] { run(service, *raw); });
    }
    w = slot.get();
  }
  {
    const std::lock_guard lock(w->mutex);
    if (w->jobs.size() >= kMaxQueued) return false;
    w->jobs.push_back(
        Job{types, std::move(request), std::move(response_schema), timeout, int64_as_string, std::move(done)});
  }
  w->wake.notify_one();
  return true;
}

void ServiceCaller::run(const std::string& service, Worker& w) {
  std::optional<ServiceClient> client;
  std::uint64_t client_request_hash = 0;
  std::vector<std::byte> response;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(w.mutex);
      w.wake.wait(lock, [&] { return w.stop || !w.jobs.empty(); });
      if (w.stop) return;
      job = std::move(w.jobs.front());
      w.jobs.pop_front();
    }
    Result result;
    try {
      if (!client || client_request_hash != job.types.request.hash) {
        client.reset();
        client.emplace(service, job.types, context_);
        client_request_hash = job.types.request.hash;
      }
      response.resize(client->max_response_size());
      const CallResult r = client->call(job.request, response, job.timeout);
      result.status = r.status;
      if (r.ok()) {
        result.response =
            job.response_schema->decode(std::span<const std::byte>{response.data(), r.size}, job.int64_as_string);
      } else {
        result.error = fmt::format("service {}: {}", service, to_string(r.status));
      }
    } catch (const std::exception& e) {
      result.status = CallStatus::kServerError;
      result.error = fmt::format("service {}: {}", service, e.what());
    }
    job.done(std::move(result));
  }
}

}  // namespace shmbus::bridge

namespace shmbus::bridge {

ClientService::ClientService(Context& context, const std::string& service, const ServiceTypes& types,
                             std::shared_ptr<const schema::Schema> request_schema,
                             std::shared_ptr<const schema::Schema> response_schema, std::chrono::nanoseconds timeout,
                             bool int64_as_string, Ask ask) {
  auto handler = [service, request_schema = std::move(request_schema), response_schema = std::move(response_schema),
                  timeout, int64_as_string, ask = std::move(ask)](std::span<const std::byte> request,
                                                                  const MessageInfo&, std::span<std::byte> out) {
    // NOLINTNEXTLINE(bugprone-exception-escape): json's implicit members only may throw (allocation)
    struct Reply {
      std::mutex mutex;
      std::condition_variable done;
      bool answered = false;
      bool ok = false;
      schema::Json values;
    };
    auto reply = std::make_shared<Reply>();
    ask(request_schema->decode(request, int64_as_string), [reply](bool ok, schema::Json values) {
      const std::lock_guard lock(reply->mutex);
      if (reply->answered) return;
      reply->answered = true;
      reply->ok = ok;
      reply->values = std::move(values);
      reply->done.notify_all();
    });
    std::unique_lock lock(reply->mutex);
    if (!reply->done.wait_for(lock, timeout, [&] { return reply->answered; })) {
      throw Error(Errc::kResource, fmt::format("service {}: its WebSocket client did not answer in time", service));
    }
    if (!reply->ok) {
      throw Error(Errc::kResource,
                  fmt::format("service {}: its WebSocket client failed the call: {}", service,
                              reply->values.is_string() ? reply->values.get<std::string>() : dump_json(reply->values)));
    }
    const std::vector<std::byte> bytes = response_schema->encode(response_schema->with_defaults(reply->values));
    if (bytes.size() > out.size()) {
      throw Error(Errc::kResource, fmt::format("service {}: the response is {} bytes, over the channel's {}", service,
                                               bytes.size(), out.size()));
    }
    std::copy(bytes.begin(), bytes.end(), out.begin());
    return bytes.size();
  };
  server_ = std::make_unique<ServiceServer>(service, types, std::move(handler), context,
                                            ServiceOptions{.node = "shmbus-bridge"});
  thread_ = std::thread([this] {
    while (!stop_.load(std::memory_order_relaxed)) server_->spin_once(std::chrono::milliseconds(20));
  });
}

ClientService::~ClientService() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

}  // namespace shmbus::bridge
