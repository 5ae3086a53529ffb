#include "services.hpp"

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
                         Done done) {
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
    w->jobs.push_back(Job{types, std::move(request), std::move(response_schema), timeout, std::move(done)});
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
        result.response = job.response_schema->decode(std::span<const std::byte>{response.data(), r.size});
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
