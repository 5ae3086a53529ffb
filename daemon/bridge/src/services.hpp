#pragma once
// Calls into shmbus services for the bridge's clients, off the network
// thread: one worker thread per service (a slow service delays only its own
// callers), each with a bounded queue of calls.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/service.hpp"

namespace shmbus::bridge {

class ServiceCaller {
 public:
  /// What a call ended with: the response as JSON, or why there is none.
  // NOLINTNEXTLINE(bugprone-exception-escape): json's implicit members only may throw (allocation)
  struct Result {
    CallStatus status = CallStatus::kOk;
    schema::Json response;
    std::string error;  ///< when status is not kOk
  };
  /// Runs on the service's worker thread.
  using Done = std::function<void(Result)>;

  static constexpr std::size_t kMaxQueued = 64;

  explicit ServiceCaller(Context& context) : context_(context) {}
  ~ServiceCaller();
  ServiceCaller(const ServiceCaller&) = delete;
  ServiceCaller& operator=(const ServiceCaller&) = delete;

  /// Queues a call of `service` (of `types`) with the encoded `request`;
  /// `done` gets the response decoded with `response_schema` (64-bit
  /// integers as strings when `int64_as_string`). False when kMaxQueued
  /// calls of this service are already waiting.
  bool call(const std::string& service, const ServiceTypes& types, std::vector<std::byte> request,
            std::shared_ptr<const schema::Schema> response_schema, std::chrono::nanoseconds timeout,
            bool int64_as_string, Done done);

 private:
  struct Job {
    ServiceTypes types;
    std::vector<std::byte> request;
    std::shared_ptr<const schema::Schema> response_schema;
    std::chrono::nanoseconds timeout;
    bool int64_as_string = false;
    Done done;
  };
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Job> jobs;
    bool stop = false;
    std::thread thread;
  };
  void run(const std::string& service, Worker& worker);

  Context& context_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Worker>> workers_;
};

}  // namespace shmbus::bridge

namespace shmbus::bridge {

/// A shmbus service served by a WebSocket client (rosbridge
/// `advertise_service`): a ServiceServer on its own thread whose handler
/// hands each request to the client and waits for its `service_response`.
class ClientService {
 public:
  /// The client's answer: true with the response fields, or false with a
  /// reason. May be called from any thread, once.
  using Answer = std::function<void(bool ok, schema::Json values)>;
  /// Hands a request (as JSON) to the client; runs on the server thread.
  using Ask = std::function<void(schema::Json request, Answer answer)>;

  /// Serves `service` until destroyed. Throws Error like ServiceServer
  /// (kResource: already served; kTypeMismatch: the channels differ).
  /// `ask` gets each request decoded (64-bit integers as strings when
  /// `int64_as_string`).
  ClientService(Context& context, const std::string& service, const ServiceTypes& types,
                std::shared_ptr<const schema::Schema> request_schema,
                std::shared_ptr<const schema::Schema> response_schema, std::chrono::nanoseconds timeout,
                bool int64_as_string, Ask ask);
  ~ClientService();
  ClientService(const ClientService&) = delete;
  ClientService& operator=(const ClientService&) = delete;

 private:
  std::unique_ptr<ServiceServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace shmbus::bridge
