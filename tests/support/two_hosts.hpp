#pragma once
// Two "hosts" on one machine: two network namespaces joined by a veth pair,
// 10.213.0.1 and 10.213.0.2/24 (addresses that exist only inside them), for
// the gateway's tests and benchmark. Needs root; removed on destruction.

#include <unistd.h>

#include <array>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "multiprocess/child_process.hpp"

namespace shmbus::test {

class TwoHosts {
 public:
  /// Creates both namespaces and the link; error() says why not.
  TwoHosts() {
    if (::geteuid() != 0) {
      error_ = "two hosts need root to create network namespaces (CI runs as root)";
      return;
    }
    const std::string tag = std::to_string(::getpid());
    ns_ = {"shmbus_a" + tag, "shmbus_b" + tag};
    veth_ = {"sbva" + tag, "sbvb" + tag};
    if (const auto [rc, out] = ip({"netns", "add", ns_[0]}); rc != 0) {
      error_ = "cannot create a network namespace here (" + out + "); run as root with iproute2";
      return;
    }
    created_ = true;
    const std::vector<std::vector<std::string>> steps{
        {"netns", "add", ns_[1]},
        {"link", "add", veth_[0], "type", "veth", "peer", "name", veth_[1]},
        {"link", "set", veth_[0], "netns", ns_[0]},
        {"link", "set", veth_[1], "netns", ns_[1]},
        {"-n", ns_[0], "addr", "add", address_[0] + "/24", "dev", veth_[0]},
        {"-n", ns_[1], "addr", "add", address_[1] + "/24", "dev", veth_[1]},
        {"-n", ns_[0], "link", "set", veth_[0], "up"},
        {"-n", ns_[1], "link", "set", veth_[1], "up"},
        {"-n", ns_[0], "link", "set", "lo", "up"},
        {"-n", ns_[1], "link", "set", "lo", "up"},
    };
    for (const auto& step : steps) {
      if (const auto [rc, out] = ip(step); rc != 0) {
        error_ = "ip " + step[0] + " ... failed: " + out;
        return;
      }
    }
  }
  ~TwoHosts() {
    if (created_) {
      for (const auto& ns : ns_) ip({"netns", "del", ns});  // the veth pair goes with them
    }
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  /// Empty when both hosts are up.
  [[nodiscard]] const std::string& error() const { return error_; }

  /// `args` run inside host `i` (0 or 1).
  [[nodiscard]] std::vector<std::string> on(int i, const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"/usr/bin/env", "ip", "netns", "exec", ns_[static_cast<std::size_t>(i)]};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  /// CYCLONEDDS_URI for host `i`: its veth only, the other host as unicast peer.
  [[nodiscard]] std::string dds_config(int i) const {
    const auto self = static_cast<std::size_t>(i), other = static_cast<std::size_t>(1 - i);
    return "<CycloneDDS><Domain id=\"any\"><General><Interfaces><NetworkInterface name=\"" + veth_[self] +
           "\"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Internal><SocketReceiveBufferSize "
           "min=\"4MB\"/></Internal><Discovery>"
           "<ParticipantIndex>auto</ParticipantIndex><Peers><Peer address=\"" +
           address_[other] + "\"/></Peers></Discovery></Domain></CycloneDDS>";
  }

 private:
  static std::pair<int, std::string> ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/env", "ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, true);
    const int status = p.wait(std::chrono::seconds(10));
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, p.output()};
  }

  std::string error_;
  bool created_ = false;
  std::array<std::string, 2> ns_;
  std::array<std::string, 2> veth_;
  const std::array<std::string, 2> address_{"10.213.0.1", "10.213.0.2"};
};

}  // namespace shmbus::test
