// Services: calls in one process (threads), and real processes killed with
// real signals (the example adder as the server, shmtool as a client).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "example_srvs/srv/add_two_ints.hpp"
#include "multiprocess/child_process.hpp"
#include "ros2_test_msgs/Outer.hpp"
#include "ros2_test_msgs/srv/query.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/node.hpp"
#include "shmbus/service.hpp"
#include "support/sanitizers.hpp"
#include "support/stalling_page.hpp"
#include "support/test_domain.hpp"
#include "tools/shmtool_harness.hpp"

namespace shmbus::test {
namespace {

using namespace std::chrono_literals;
using AddTwoInts = example_srvs::srv::AddTwoInts;
using Client = TypedServiceClient<AddTwoInts>;
using Server = TypedServiceServer<AddTwoInts>;

const std::string kAdder = SHMBUS_EXAMPLE_ADDER;
constexpr const char* kService = "/example/add";

/// A standalone server spinning in a thread until destroyed.
class ServerThread {
 public:
  ServerThread(Context& context, Server::Handler handler) : server_(kService, std::move(handler), context) {
    thread_ = std::thread([this] {
      while (!stop_.load()) server_.spin_once(5ms);
    });
  }
  ~ServerThread() {
    stop_.store(true);
    thread_.join();
  }
  ServiceServer& server() { return server_.untyped(); }

 private:
  Server server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void add(const AddTwoInts::Request& req, AddTwoInts::Response& rsp) { rsp.sum = req.a + req.b; }

std::int64_t ms_since(std::int64_t start_ns) { return (mono_now_ns() - start_ns) / 1'000'000; }

/// The adder example as a real process on `domain`, serving once it says so.
std::unique_ptr<ChildProcess> start_adder(const std::string& domain, const std::string& delay = "0ms") {
  auto p = std::make_unique<ChildProcess>(std::vector<std::string>{kAdder, "--delay", delay}, true,
                                          std::vector<std::string>{"SHMBUS_DOMAIN=" + domain});
  EXPECT_TRUE(p->wait_for_output("serving /example/add", 10s)) << p->output();
  return p;
}

/// Waits until the server has taken n requests. Not the write cursor: that
/// counts a request once it is claimed, and a client killed between its claim
/// and its commit never sent it (under TSan that window is wide).
bool wait_for_requests(const std::string& domain, std::uint64_t n) {
  const std::int64_t deadline = mono_now_ns() + 10'000'000'000;
  while (mono_now_ns() < deadline) {
    try {
      if (introspect::ChannelReader(domain, service_request_channel(kService)).view().received >= n) return true;
    } catch (const Error&) {
    }
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST(ServiceTest, TypedCallReturnsTheResponseThatCitesItsRequestAndStampsTimeLists) {
  TestDomain d;
  ServerThread server(d.context(), add);
  Client client(kService, d.context());
  ASSERT_TRUE(client.wait_for_server(5s));
  AddTwoInts::Response rsp{};
  const CallResult r = client.call({.a = 2, .b = 3}, rsp, 5s);
  ASSERT_EQ(r.status, CallStatus::kOk) << to_string(r.status);
  EXPECT_EQ(rsp.sum, 5);
  EXPECT_EQ(r.size, sizeof(AddTwoInts::Response));
  ASSERT_EQ(r.info.inputs().size(), 1U);
  // The first request of the channel, unless this client was descheduled
  // mid-publish and sent it again (each sending is a request).
  const std::uint64_t resent_first = client.untyped().resent();
  EXPECT_EQ(r.info.inputs()[0].sequence, resent_first);
  const CallResult second = client.call({.a = -7, .b = 4}, rsp, std::chrono::nanoseconds::max());  // no overflow
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(rsp.sum, -3);
  const std::uint64_t resent = client.untyped().resent();
  EXPECT_EQ(second.info.inputs()[0].sequence, resent + 1);
  EXPECT_EQ(server.server().served(), 2U);
  EXPECT_EQ(client.untyped().calls(), 2U);
  // Requests and responses stamp their time lists: shmbusd and hz see them.
  EXPECT_EQ(introspect::ChannelReader(d.domain(), service_request_channel(kService)).view().stamps, 2U + resent);
  const introspect::ServiceView v = introspect::service_view(d.domain(), kService);
  EXPECT_EQ(v.service_type, "example_srvs/AddTwoInts");
  ASSERT_TRUE(v.server.has_value());
  EXPECT_EQ(v.server->pid, ::getpid());
  ASSERT_EQ(v.clients.size(), 1U);
  // The answers came on the client's own channel, named by its slot.
  const std::string own = service_client_response_channel(kService, v.clients[0].slot);
  EXPECT_EQ(v.client_channels, std::vector<std::string>{own});
  EXPECT_EQ(introspect::ChannelReader(d.domain(), own).view().stamps, 2U);
  // NAME/_response carried only the server's notices of requests it passed over.
  EXPECT_EQ(introspect::ChannelReader(d.domain(), service_response_channel(kService)).view().messages, resent);
  EXPECT_EQ(v.responses_sent, 2U + resent);
}

// A client descheduled between claiming its request's slot and committing
// it, for longer than stall_timeout: the server's reader gives up on the
// slot and counts it lost. The server tells at once (no request follows to
// carry the loss), and the client, seeing its slot never overwritten, sends
// the request again: answered once, nothing lost to the caller. The stall
// is a real page fault in the request's copy, held until the server has
// passed over the slot.
TEST(ServiceTest, ARequestPassedOverWhileItsClientStalledMidPublishIsSentAgainAndAnsweredOnce) {
  if (const char* e = emulated()) GTEST_SKIP() << "page faults under " << e << " are the emulator's";
  TestDomain d;
  ServerThread server(d.context(), add);
  Client client(kService, d.context());
  ASSERT_TRUE(client.wait_for_server(5s));
  const AddTwoInts::Request request{.a = 2, .b = 3};
  StallingPage page(std::as_bytes(std::span{&request, 1}));
  if (!page.available()) GTEST_SKIP() << "userfaultfd is not available here";
  AddTwoInts::Response rsp{};
  CallResult r;
  std::thread caller([&] {
    r = client.untyped().call(std::span{page.data(), sizeof request}, std::as_writable_bytes(std::span{&rsp, 1}), 30s);
  });
  const auto request_lost = [&] {
    return introspect::ChannelReader(d.domain(), service_request_channel(kService)).view().lost;
  };
  const bool touched = page.wait_for_touch(10s);
  const std::int64_t give_up = mono_now_ns() + 10'000'000'000;
  while (touched && request_lost() == 0 && mono_now_ns() < give_up) std::this_thread::sleep_for(1ms);
  const std::uint64_t lost_while_stalled = request_lost();
  page.release();
  caller.join();
  ASSERT_TRUE(touched) << "the call never copied its request";
  EXPECT_EQ(lost_while_stalled, 1U);  // the server passed over the stalled slot
  ASSERT_EQ(r.status, CallStatus::kOk) << to_string(r.status);
  EXPECT_EQ(rsp.sum, 5);
  // Sent again (once, unless the machine descheduled that publish too).
  const std::uint64_t resent = client.untyped().resent();
  EXPECT_GE(resent, 1U);
  EXPECT_EQ(r.info.inputs()[0].sequence, resent);
  EXPECT_EQ(client.untyped().lost(), 0U);
  EXPECT_EQ(server.server().served(), 1U);
  EXPECT_EQ(request_lost(), resent);
}

// Types with strings and sequences (generated from ROS 2 definitions): a
// service answers a ros2_test_msgs/Query, and a Node receives Outer messages
// as views in place, as views of a copy and as owning values, published
// both as owning values and built in a loan.
TEST(ServiceTest, Ros2TypesWithStringsAndSequencesAreCalledAndAnswered) {
  using Query = ros2_test_msgs::srv::Query;
  TestDomain d;
  TypedServiceServer<Query> server(
      "/ask",
      [](const Query::Request& req, Query::Response& rsp) {
        rsp.ok = true;
        for (const std::int32_t h : req.hints) rsp.answers.push_back(req.question + std::to_string(h));
        rsp.detail.label = std::string(1000 * req.hints.size(), 'z');
      },
      d.context());
  std::atomic<bool> stop{false};
  std::thread serve([&] {
    while (!stop.load()) server.spin_once(5ms);
  });
  TypedServiceClient<Query> client("/ask", d.context());
  Query::Request req;
  req.question = "why ";
  req.hints = {1, -2, 3};
  Query::Response rsp;
  const CallResult r = client.call(req, rsp, 10s);
  EXPECT_EQ(r.status, CallStatus::kOk) << to_string(r.status);
  EXPECT_TRUE(rsp.ok);
  EXPECT_EQ(rsp.answers, (std::vector<std::string>{"why 1", "why -2", "why 3"}));
  EXPECT_EQ(rsp.detail.label.size(), 3000U);
  EXPECT_EQ(rsp.detail.short_name.view(), "in") << "the definition's default";
  // A response larger than the response channel's slots: the channel grows,
  // and the client's buffer holds what it may grow to.
  req.hints.resize(5);
  EXPECT_EQ(client.call(req, rsp, 10s).status, CallStatus::kOk);
  EXPECT_EQ(rsp.answers.size(), 5U);
  req.hints.resize(1);
  EXPECT_EQ(client.call(req, rsp, 10s).status, CallStatus::kOk);
  EXPECT_EQ(rsp.answers, (std::vector<std::string>{"why 1"}));
  stop.store(true);
  serve.join();
}

TEST(NodeRos2Test, ANodeTakesViewsInPlaceViewsAndOwningValuesOfAType) {
  using ros2_test_msgs::Outer;
  TestDomain d;
  Node node("ros2", d.context());
  std::vector<std::string> in_place;
  std::vector<std::string> copied;
  std::vector<Outer> owned;
  SubscriptionOptions o;
  o.in_place = true;
  const auto done = [&] {
    if (in_place.size() == 2 && copied.size() == 2 && owned.size() == 2) node.stop();
  };
  node.subscribe<Outer>(
      "/outer",
      [&](const Outer::View& v, const MessageInfo&) {
        in_place.emplace_back(v.middles().empty() ? "" : v.middles()[0].names()[0]);
        done();
      },
      o);
  node.subscribe<Outer>("/outer", [&](const Outer::View& v, const MessageInfo&) {
    copied.emplace_back(v.one().inner().label());
    done();
  });
  node.subscribe<Outer>("/outer", [&](const Outer& m, const MessageInfo&) {
    owned.push_back(m);
    done();
  });
  auto& pub = node.publisher<Outer>("/outer");
  Outer m;
  m.middles.resize(2);
  m.middles[0].names = {"first", "second"};
  m.one.inner.label = "one's label";
  m.one.inner.values = {1.5F, 2.5F};
  m.bits = {true, false};
  ASSERT_EQ(pub.publish(m), PublishResult::kOk);
  // The second built straight into a loan, with fields set in another order
  // than the codecs' (any order makes a valid message).
  Loan loan = pub.loan(4096);
  ASSERT_TRUE(loan);
  msg::Writer w(loan.data());
  Outer::Builder b(w);
  b.set_last(-1.0);
  b.one().inner().set_label("built");
  b.resize_middles(1);
  b.middles(0).resize_names(1);
  b.middles(0).set_names(0, "in the loan");
  ASSERT_EQ(pub.commit(loan, w.size()), PublishResult::kOk);
  node.spin_once(0s);
  const std::int64_t deadline = mono_now_ns() + 10'000'000'000;
  while (node.ok() && mono_now_ns() < deadline) node.spin_once(100ms);
  EXPECT_EQ(in_place, (std::vector<std::string>{"first", "in the loan"}));
  EXPECT_EQ(copied, (std::vector<std::string>{"one's label", "built"}));
  ASSERT_EQ(owned.size(), 2U);
  EXPECT_EQ(owned[0].one.inner.values, (std::vector<float>{1.5F, 2.5F}));
  EXPECT_EQ(owned[0].bits, (std::vector<bool>{true, false}));
  EXPECT_EQ(owned[0].fixed, (std::array<std::int64_t, 2>{7, -7})) << "the default, as published";
  EXPECT_EQ(owned[1].last, -1.0);
  EXPECT_EQ(owned[1].fixed, (std::array<std::int64_t, 2>{0, 0})) << "a builder starts from zeros";
  ASSERT_EQ(owned[1].middles.size(), 1U);
  EXPECT_EQ(owned[1].middles[0].names, (std::vector<std::string>{"in the loan"}));
}

// A service whose name leaves no room for `/_response/<slot>` still works:
// its clients are answered on NAME/_response, which they all read.
TEST(ServiceTest, AClientWithoutAChannelOfItsOwnIsAnsweredOnTheSharedOne) {
  TestDomain d;
  const std::string service = "/" + std::string(89, 'n');  // NAME/_response fits; NAME/_response/0 does not
  ASSERT_EQ(service_response_channel(service).size(), kMaxChannelName);
  TypedServiceServer<AddTwoInts> server(service, add, d.context());
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load()) server.spin_once(5ms);
  });
  Client first(service, d.context());
  Client second(service, d.context());
  AddTwoInts::Response rsp{};
  for (int i = 0; i < 20; ++i) {
    Client& c = i % 2 == 0 ? first : second;
    const CallResult r = c.call({.a = i, .b = 100}, rsp, 10s);
    if (!r.ok()) {  // what the service saw, then stop (the spinner joined)
      const introspect::ServiceView v = introspect::service_view(d.domain(), service);
      ADD_FAILURE() << "call " << i << ": " << to_string(r.status) << "; served " << server.untyped().served()
                    << ", responses sent " << v.responses_sent << ", lost " << c.untyped().lost() << ", late "
                    << c.untyped().late_responses();
      break;
    }
    EXPECT_EQ(rsp.sum, i + 100);
  }
  stop.store(true);
  spinner.join();
  const introspect::ServiceView v = introspect::service_view(d.domain(), service);
  EXPECT_TRUE(v.client_channels.empty());
  EXPECT_EQ(server.untyped().served(), 20U);
  // Twenty answers, and a notice for each request passed over while its
  // client was descheduled mid-publish (sent again).
  EXPECT_GE(v.responses_sent, 20U);
  EXPECT_LE(v.responses_sent, 20U + first.untyped().resent() + second.untyped().resent());
  EXPECT_EQ(first.untyped().lost() + second.untyped().lost(), 0U);
}

// A trigger: an empty request, an empty response (std_srvs/Trigger's
// request is empty). The client's request span and its response buffer are
// empty spans, whose data() is null: nothing is copied from or to them (a
// memcpy of them is undefined behaviour, which the UBSan build reports).
TEST(ServiceTest, AnEmptyRequestIsCalledAndAnsweredWithAnEmptyResponse) {
  TestDomain d;
  const ServiceTypes types{"test_srvs/Trigger", TypeInfo::bytes(), TypeInfo::bytes()};
  std::vector<std::size_t> request_sizes;
  ServiceServer server(
      "/test/trigger", types,
      [&request_sizes](std::span<const std::byte> request, const MessageInfo&, std::span<std::byte>) {
        request_sizes.push_back(request.size());
        return std::size_t{0};
      },
      d.context());
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load()) server.spin_once(5ms);
  });
  ServiceClient client("/test/trigger", types, d.context());
  const CallResult r = client.call(std::span<const std::byte>{}, std::span<std::byte>{}, 10s);
  stop.store(true);
  spinner.join();
  ASSERT_TRUE(r.ok()) << static_cast<int>(r.status);
  EXPECT_EQ(r.size, 0U);
  EXPECT_EQ(request_sizes, std::vector<std::size_t>{0});
  EXPECT_EQ(server.served(), 1U);
}

TEST(ServiceTest, ConcurrentClientsEachGetOnlyTheirOwnResponsesInArrivalOrder) {
  // Six threads on two cores: a client descheduled while others make more
  // calls than the response ring holds loses its response, and a writer
  // descheduled mid-copy is judged stalled; both are counted and answered
  // kLost (the README says to size the ring for the calls in flight). This
  // test is about correlation and order: a ring larger than all its calls.
  Config config;
  config.defaults.stall_timeout = 200ms;
  config.defaults.capacity = 2048;
  TestDomain d(config);
  std::vector<std::uint64_t> order;  // request sequences in the order served (server thread only)
  ServiceServer server(
      "/example/order",
      ServiceTypes{AddTwoInts::kServiceType, type_info_of<AddTwoInts::Request>(), type_info_of<AddTwoInts::Response>()},
      [&order](std::span<const std::byte> request, const MessageInfo& info, std::span<std::byte> response) {
        order.push_back(info.sequence);
        AddTwoInts::Request req;
        std::memcpy(&req, request.data(), sizeof(req));
        const AddTwoInts::Response rsp{.sum = req.a + req.b};
        std::memcpy(response.data(), &rsp, sizeof(rsp));
        return sizeof(rsp);
      },
      d.context());
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load()) server.spin_once(5ms);
  });
  constexpr int kClients = 4;
  constexpr int kCalls = 300;
  std::atomic<int> wrong{0};
  std::atomic<int> failed{0};
  std::atomic<std::uint64_t> resent{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      ServiceClient client("/example/order",
                           ServiceTypes{AddTwoInts::kServiceType, type_info_of<AddTwoInts::Request>(),
                                        type_info_of<AddTwoInts::Response>()},
                           d.context());
      for (int i = 0; i < kCalls; ++i) {
        const AddTwoInts::Request req{.a = c * 1'000'000, .b = i};
        AddTwoInts::Response rsp{};
        const CallResult r =
            client.call(std::as_bytes(std::span{&req, 1}), std::as_writable_bytes(std::span{&rsp, 1}), 10s);
        if (!r.ok()) {
          failed.fetch_add(1);
        } else if (rsp.sum != req.a + req.b) {
          wrong.fetch_add(1);
        }
      }
      EXPECT_EQ(client.late_responses(), 0U);
      EXPECT_EQ(client.lost(), 0U);
      resent.fetch_add(client.resent());
    });
  }
  for (auto& t : clients) t.join();
  stop.store(true);
  spinner.join();
  // Each client was answered on its own channel, none on the shared one,
  // which carried only notices of requests passed over while their client
  // was descheduled mid-publish (each sent again).
  const introspect::ServiceView v = introspect::service_view(d.domain(), "/example/order");
  EXPECT_EQ(v.client_channels.size(), static_cast<std::size_t>(kClients));
  ASSERT_TRUE(v.responses.has_value());
  EXPECT_EQ(v.responses_sent - v.responses->messages, static_cast<std::uint64_t>(kClients * kCalls));
  EXPECT_LE(v.responses->messages, resent.load());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);  // no client ever took another client's response
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kClients * kCalls));
  for (std::size_t i = 1; i < order.size(); ++i) ASSERT_LT(order[i - 1], order[i]) << "served out of order at " << i;
  EXPECT_EQ(server.served(), static_cast<std::uint64_t>(kClients * kCalls));
}

TEST(ServiceTest, ALateResponseIsCountedAndDiscardedNotTakenForTheNextCall) {
  TestDomain d;
  std::atomic<int> calls{0};
  ServerThread server(d.context(), [&](const AddTwoInts::Request& req, AddTwoInts::Response& rsp) {
    if (calls.fetch_add(1) == 0) std::this_thread::sleep_for(300ms);  // slower than the first call's timeout
    rsp.sum = req.a + req.b;
  });
  Client client(kService, d.context());
  ASSERT_TRUE(client.wait_for_server(5s));
  AddTwoInts::Response rsp{};
  EXPECT_EQ(client.call({.a = 1, .b = 1}, rsp, 50ms).status, CallStatus::kTimeout);
  std::this_thread::sleep_for(400ms);  // the late response is in the ring now
  const CallResult r = client.call({.a = 10, .b = 20}, rsp, 5s);
  ASSERT_TRUE(r.ok()) << to_string(r.status);
  EXPECT_EQ(rsp.sum, 30);  // not the late 2
  EXPECT_EQ(client.untyped().timeouts(), 1U);
  EXPECT_EQ(client.untyped().late_responses(), 1U);
  // shmtool sees it: the client's DISCARDED on the response channel.
  EXPECT_EQ(introspect::service_view(d.domain(), kService).late_responses, 1U);
}

TEST(ServiceTest, NoServerFailsWithinTheTimeoutAndSendsNothing) {
  TestDomain d;
  Client client(kService, d.context());
  EXPECT_FALSE(client.untyped().server_ready());
  AddTwoInts::Response rsp{};
  const std::int64_t start = mono_now_ns();
  EXPECT_EQ(client.call({.a = 1, .b = 2}, rsp, 200ms).status, CallStatus::kNoServer);
  const std::int64_t took = ms_since(start);
  EXPECT_GE(took, 190);
  EXPECT_LT(took, 3000);
  EXPECT_EQ(introspect::ChannelReader(d.domain(), service_request_channel(kService)).view().messages, 0U);
}

TEST(ServiceTest, AHandlerThatThrowsAnswersServerErrorAndTheServerGoesOn) {
  TestDomain d;
  ServerThread server(d.context(), [](const AddTwoInts::Request& req, AddTwoInts::Response& rsp) {
    if (req.a < 0) throw std::invalid_argument("negative a");
    rsp.sum = req.a + req.b;
  });
  Client client(kService, d.context());
  ASSERT_TRUE(client.wait_for_server(5s));
  AddTwoInts::Response rsp{};
  EXPECT_EQ(client.call({.a = -1, .b = 2}, rsp, 5s).status, CallStatus::kServerError);
  ASSERT_TRUE(client.call({.a = 1, .b = 2}, rsp, 5s).ok());
  EXPECT_EQ(rsp.sum, 3);
  EXPECT_EQ(server.server().failed(), 1U);
  EXPECT_EQ(server.server().served(), 1U);
}

TEST(ServiceTest, ASecondServerIsRefusedNamingTheFirst) {
  TestDomain d;
  Server first(kService, add, d.context());
  try {
    Server second(kService, add, d.context());
    FAIL() << "a second server was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kResource);
    EXPECT_NE(std::string{e.what()}.find("already served by pid " + std::to_string(::getpid())), std::string::npos)
        << e.what();
  }
}

TEST(ServiceProcessTest, AServerKilledDuringACallGivesServerDiedNotAHang) {
  TestDomain d;
  auto adder = start_adder(d.domain(), "20s");
  Client client(kService, d.context());
  ASSERT_TRUE(client.wait_for_server(10s));
  std::thread killer([&] {
    if (wait_for_requests(d.domain(), 1)) std::this_thread::sleep_for(50ms);
    adder->signal(SIGKILL);
  });
  AddTwoInts::Response rsp{};
  const std::int64_t start = mono_now_ns();
  const CallResult r = client.call({.a = 1, .b = 2}, rsp, 30s);
  const std::int64_t took = ms_since(start);
  killer.join();
  EXPECT_EQ(r.status, CallStatus::kServerDied) << to_string(r.status);
  EXPECT_LT(took, 5000) << "the call noticed the dead server only after " << took << " ms";
  EXPECT_FALSE(client.untyped().server_ready());
}

TEST(ServiceProcessTest, AClientKilledBeforeItsResponseLeavesNothingBehind) {
  TestDomain d;
  auto adder = start_adder(d.domain(), "300ms");
  // shmtool is the client that dies: SIGKILLed once its request is out.
  auto doomed = tool::start_tool({"service", "call", kService, R"({"a": 40, "b": 2})", "--timeout", "20s"}, d.domain());
  ASSERT_TRUE(wait_for_requests(d.domain(), 1));
  const pid_t doomed_pid = doomed->pid();
  doomed->signal(SIGKILL);
  doomed->wait(5s);
  // The server answers it anyway, then serves the others as before.
  Client client(kService, d.context());
  AddTwoInts::Response rsp{};
  const CallResult r = client.call({.a = 5, .b = 6}, rsp, 10s);
  ASSERT_TRUE(r.ok()) << to_string(r.status);
  EXPECT_EQ(rsp.sum, 11);
  // The answer to our request, not the dead client's (ours was sent again if
  // we were descheduled mid-publish, after a notice that it was passed over).
  EXPECT_EQ(r.info.inputs()[0].sequence, 1U + client.untyped().resent());
  EXPECT_EQ(client.untyped().late_responses(), 0U);
  // Reclaiming the dead client's entries leaves no trace of it.
  introspect::clean_domain(d.domain(), false);
  const introspect::ServiceView v = introspect::service_view(d.domain(), kService);
  ASSERT_TRUE(v.responses.has_value());
  EXPECT_EQ(v.responses_sent, 2U + client.untyped().resent());  // both requests were answered
  for (const auto* list :
       {&v.requests.publishers, &v.requests.subscribers, &v.responses->publishers, &v.responses->subscribers}) {
    for (const auto& e : *list) EXPECT_NE(e.pid, doomed_pid) << "an entry of the dead client is left";
  }
  for (const std::string& own : v.client_channels) {
    const introspect::ChannelView c = introspect::ChannelReader(d.domain(), own).view();
    for (const auto& e : c.subscribers) EXPECT_NE(e.pid, doomed_pid) << "an entry of the dead client is left";
  }
  ASSERT_TRUE(v.server.has_value());
  EXPECT_EQ(v.server->pid, adder->pid());
}

/// Writes a configuration file for the adder and its clients; removed with
/// the object.
struct TempConfig {
  explicit TempConfig(const std::string& text)
      : path(::testing::TempDir() + "/svc_" + std::to_string(::getpid()) + "_" + std::to_string(mono_now_ns()) +
             ".toml") {
    std::ofstream(path) << text;
  }
  ~TempConfig() { std::filesystem::remove(path); }
  std::string path;
};

/// The adder as a real process with a configuration file.
std::unique_ptr<ChildProcess> start_configured_adder(const std::string& domain, const std::string& config,
                                                     const std::string& delay) {
  auto p =
      std::make_unique<ChildProcess>(std::vector<std::string>{kAdder, "--delay", delay}, true,
                                     std::vector<std::string>{"SHMBUS_DOMAIN=" + domain, "SHMBUS_CONFIG=" + config});
  EXPECT_TRUE(p->wait_for_output("serving /example/add", 10s)) << p->output();
  return p;
}

/// SIGCONTs `stopped`, then waits for `caller` (a `shmtool service call`
/// with a 30 s timeout) to exit: its exit code, or -1. It must end in well
/// under its timeout.
int continue_and_exit_code(ChildProcess& stopped, ChildProcess& caller) {
  const std::int64_t start = mono_now_ns();
  stopped.signal(SIGCONT);
  const int status = caller.wait(10s);
  EXPECT_LT(ms_since(start), 5000) << "the caller waited for its whole timeout";
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ServiceProcessTest, AClientStoppedWhileOthersCallIsAnsweredWhenItResumes) {
  TestDomain d;
  // Response rings of 4 slots; the adder answers each request after 100 ms.
  const TempConfig config("[[channel]]\nname = \"/example/add/*\"\ncapacity = 4\n");
  auto adder = start_configured_adder(d.domain(), config.path, "100ms");
  // shmtool calls, and is SIGSTOPped once its request is out; others then
  // make more calls than a response ring holds. Its answer waits in its own
  // channel (one shared ring would have overwritten it).
  auto stopped =
      tool::start_tool({"service", "call", kService, R"({"a": 1, "b": 1})", "--timeout", "30s"}, d.domain(), true);
  ASSERT_TRUE(wait_for_requests(d.domain(), 1));
  stopped->signal(SIGSTOP);
  Client client(kService, d.context());
  AddTwoInts::Response rsp{};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client.call({.a = i, .b = 1}, rsp, 10s).ok());
  EXPECT_EQ(continue_and_exit_code(*stopped, *stopped), 0) << stopped->output();
  EXPECT_NE(stopped->output().find("sum: 2"), std::string::npos) << stopped->output();
  EXPECT_EQ(client.untyped().lost(), 0U);
}

TEST(ServiceProcessTest, ARequestOverwrittenBeforeTheServerTookItIsToldItWasLost) {
  TestDomain d;
  // A request ring of 4 slots.
  const TempConfig config("[[channel]]\nname = \"/example/add/*\"\ncapacity = 4\n");
  auto adder = start_configured_adder(d.domain(), config.path, "0ms");
  adder->signal(SIGSTOP);  // alive (the clients see a server), taking nothing
  auto waiting =
      tool::start_tool({"service", "call", kService, R"({"a": 1, "b": 1})", "--timeout", "30s"}, d.domain(), true);
  // Its request is out once its publisher has published it.
  const auto published = [&] {
    for (const auto& p : introspect::ChannelReader(d.domain(), service_request_channel(kService)).view().publishers) {
      if (p.pid == waiting->pid() && p.messages >= 1) return true;
    }
    return false;
  };
  const std::int64_t give_up = mono_now_ns() + 10'000'000'000;
  while (!published() && mono_now_ns() < give_up) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(published()) << waiting->output();
  // Six more requests, each timed out, overrun the ring: the first is gone
  // before the server takes it.
  Client client(kService, d.context());
  AddTwoInts::Response rsp{};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(client.call({.a = i, .b = 1}, rsp, 20ms).status, CallStatus::kTimeout);
  EXPECT_EQ(continue_and_exit_code(*adder, *waiting), 1) << waiting->output();
  EXPECT_NE(waiting->output().find("or its response was lost"), std::string::npos) << waiting->output();
  // Counted where shmtool shows it: the server's LOST on the request channel.
  const introspect::ServiceView v = introspect::service_view(d.domain(), kService);
  ASSERT_TRUE(v.server.has_value());
  std::uint64_t server_lost = 0;
  for (const auto& s : v.requests.subscribers) {
    if (s.pid == adder->pid()) server_lost += s.lost;
  }
  EXPECT_GE(server_lost, 1U);
}

// Requests lost before the server took them are noticed from the first
// lost sequence on. The notice used to cover [sequence - lost_before,
// sequence), right only when the lost ones are contiguous: a discarded loan
// among them (not lost, not counted) shifted it past the earliest lost
// request, whose caller then waited out its whole timeout.
TEST(ServiceTest, EveryRequestLostBeforeTheServerTookItIsNoticedWithADiscardedLoanAmongThem) {
  Config config;
  config.defaults.capacity = 4;
  TestDomain d{config};
  Server server(kService, add, d.context());  // takes nothing until spun
  Client waiting(kService, d.context());
  ASSERT_TRUE(waiting.wait_for_server(5s));
  CallResult first;
  std::thread caller([&] {
    AddTwoInts::Response rsp{};
    first = waiting.call({.a = 1, .b = 1}, rsp, 5s);
  });
  const std::string requests = service_request_channel(kService);
  const std::int64_t give_up = mono_now_ns() + 10'000'000'000;
  while (introspect::ChannelReader(d.domain(), requests).view().stamps < 1 && mono_now_ns() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  // Sequence 1: a loan given back. Then three requests that time out: the
  // fifth message overwrites the first request in the ring of four.
  Publisher raw(requests, type_info_of<AddTwoInts::Request>(), d.context(), PublisherOptions{.create = false});
  {
    const Loan loan = raw.loan(sizeof(AddTwoInts::Request));
    ASSERT_TRUE(loan.valid());
  }  // given back uncommitted: a discarded slot
  Client other(kService, d.context());
  AddTwoInts::Response rsp{};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(other.call({.a = i, .b = 1}, rsp, 20ms).status, CallStatus::kTimeout);
  const std::int64_t start = mono_now_ns();
  for (int i = 0; i < 20; ++i) server.spin_once(10ms);
  caller.join();
  EXPECT_EQ(first.status, CallStatus::kLost) << to_string(first.status) << " after " << ms_since(start) << " ms";
}

TEST(ServiceToolTest, CallPrintsTheDecodedResponse) {
  TestDomain d;
  auto adder = start_adder(d.domain());
  const tool::ToolRun text =
      tool::shmtool(tool::tool_args({"service", "call", kService, R"({"a": 2, "b": 3})"}, d.domain()));
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out, "sum: 5\n");
  const tool::ToolRun json =
      tool::shmtool(tool::tool_args({"service", "call", kService, R"({"a": 2, "b": 3})", "--json"}, d.domain()));
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["response"]["sum"], 5);
  EXPECT_EQ(j["type"], "example_srvs/AddTwoInts");
  // An overflow makes the adder's handler throw: one line, exit 1.
  const tool::ToolRun failed = tool::shmtool(
      tool::tool_args({"service", "call", kService, R"({"a": 9223372036854775807, "b": 1})"}, d.domain()));
  EXPECT_EQ(failed.code, 1);
  EXPECT_EQ(failed.err_lines(), 1U) << failed.err;
  EXPECT_NE(failed.err.find("failed on this request"), std::string::npos) << failed.err;
  // A request that is not JSON shmtool can take (a number past double's
  // range; nesting past 64 levels): exit 2 and one line, nothing sent.
  for (const std::string& request :
       {std::string{R"({"a": 1e400})"}, "{\"a\": " + std::string(100, '[') + std::string(100, ']') + "}"}) {
    const tool::ToolRun bad = tool::shmtool(tool::tool_args({"service", "call", kService, request}, d.domain()));
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_EQ(bad.err_lines(), 1U) << bad.err;
    EXPECT_NE(bad.err.find("REQUEST is not JSON"), std::string::npos) << bad.err;
  }
  // list and info show the server and the counts: three calls, and each
  // request the server passed over while shmtool was descheduled mid-publish
  // (counted lost, noticed on NAME/_response, sent again).
  const std::uint64_t passed_over =
      introspect::ChannelReader(d.domain(), service_request_channel(kService)).view().lost;
  const tool::ToolRun list = tool::shmtool(tool::tool_args({"service", "list", "--json"}, d.domain()));
  ASSERT_EQ(list.code, 0) << list.err;
  const auto l = nlohmann::json::parse(list.out);
  ASSERT_EQ(l.size(), 1U);
  EXPECT_EQ(l[0]["name"], kService);
  EXPECT_EQ(l[0]["server"]["pid"], adder->pid());
  EXPECT_EQ(l[0]["requests"], 3 + passed_over);
  EXPECT_EQ(l[0]["responses"], 3 + passed_over);
  const tool::ToolRun info = tool::shmtool(tool::tool_args({"service", "info", kService}, d.domain()));
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("type:      example_srvs/AddTwoInts"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("server:    pid " + std::to_string(adder->pid()) + " (adder)"), std::string::npos)
      << info.out;
  // The request channel's rate is a channel's rate: hz reads its time list.
  const tool::ToolRun hz = tool::shmtool(
      tool::tool_args({"hz", service_request_channel(kService), "-n", "1", "--window", "100", "--json"}, d.domain()));
  ASSERT_EQ(hz.code, 0) << hz.err;
  EXPECT_EQ(nlohmann::json::parse(hz.out)["window"], 3 + passed_over);  // the requests' stamps
}

TEST(ServiceToolTest, CallWithoutAServerExits3WithinItsTimeoutWithOneLine) {
  TestDomain d;
  const std::int64_t start = mono_now_ns();
  const tool::ToolRun r = tool::shmtool(
      tool::tool_args({"service", "call", kService, R"({"a": 2, "b": 3})", "--timeout", "500ms"}, d.domain()));
  const std::int64_t took = ms_since(start);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err_lines(), 1U) << r.err;
  EXPECT_NE(r.err.find("no server for service /example/add"), std::string::npos) << r.err;
  EXPECT_GE(took, 450);
  EXPECT_LT(took, 5000);
  const tool::ToolRun info = tool::shmtool(tool::tool_args({"service", "info", "/nothing/here"}, d.domain()));
  EXPECT_EQ(info.code, 3);
  EXPECT_EQ(info.err_lines(), 1U) << info.err;
}

}  // namespace
}  // namespace shmbus::test
