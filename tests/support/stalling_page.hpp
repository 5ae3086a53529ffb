#pragma once
// A page whose first touch stalls the touching thread until the test lets
// it go: a real page fault (userfaultfd) at a chosen instruction, e.g. a
// publisher's copy between its claim of a slot and its commit, held for as
// long as the test needs, whatever the machine's load.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <span>
#include <thread>

namespace shmbus::test {

class StallingPage {
 public:
  /// `contents` (at most a page) is what the page holds once let go.
  explicit StallingPage(std::span<const std::byte> contents) {
    page_size_ = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    // UFFD_USER_MODE_ONLY: unprivileged, and only user-mode touches fault
    // (a memcpy does; a system call reading the page would fail instead).
    uffd_ = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (uffd_ < 0) return;
    void* page = ::mmap(nullptr, page_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return;
    page_ = static_cast<std::byte*>(page);  // unmapped by the destructor from here on
    uffdio_api api{};
    api.api = UFFD_API;
    if (::ioctl(uffd_, UFFDIO_API, &api) != 0) return;
    uffdio_register reg{};
    reg.range = {reinterpret_cast<std::uintptr_t>(page_), page_size_};
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (::ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) return;
    source_ = static_cast<std::byte*>(
        ::mmap(nullptr, page_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (source_ == MAP_FAILED) {
      source_ = nullptr;
      return;
    }
    std::memcpy(source_, contents.data(), std::min(contents.size(), page_size_));
    handler_ = std::thread([this] { serve(); });
  }
  StallingPage(const StallingPage&) = delete;
  StallingPage& operator=(const StallingPage&) = delete;
  ~StallingPage() {
    release();
    if (handler_.joinable()) handler_.join();
    if (page_ != nullptr) ::munmap(page_, page_size_);
    if (source_ != nullptr) ::munmap(source_, page_size_);
    if (uffd_ >= 0) ::close(uffd_);
  }

  /// False when userfaultfd cannot be used here (the test skips).
  [[nodiscard]] bool available() const noexcept { return handler_.joinable(); }
  /// The page: its first touch stalls.
  [[nodiscard]] std::byte* data() const noexcept { return page_; }

  /// Waits up to `timeout` for the first touch (a thread is stalled on it).
  bool wait_for_touch(std::chrono::milliseconds timeout) const {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!touched_.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  /// Fills the page with its contents: the stalled thread goes on.
  void release() noexcept { released_.store(true, std::memory_order_release); }

 private:
  /// Notes the fault, and fills the page once released (which wakes the
  /// stalled thread; untouched, the page is simply filled).
  void serve() {
    while (!released_.load(std::memory_order_acquire)) {
      pollfd p{uffd_, POLLIN, 0};
      uffd_msg msg{};
      if (::poll(&p, 1, 1) == 1 && ::read(uffd_, &msg, sizeof msg) == static_cast<ssize_t>(sizeof msg) &&
          msg.event == UFFD_EVENT_PAGEFAULT) {
        touched_.store(true, std::memory_order_release);
      }
    }
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<std::uintptr_t>(page_);
    copy.src = reinterpret_cast<std::uintptr_t>(source_);
    copy.len = page_size_;
    ::ioctl(uffd_, UFFDIO_COPY, &copy);
  }

  std::size_t page_size_ = 0;
  int uffd_ = -1;
  std::byte* page_ = nullptr;
  std::byte* source_ = nullptr;
  /// Set by serve() (release) once the fault is read; wait_for_touch()
  /// loads it (acquire). Only the flag passes: no data is published by it.
  std::atomic<bool> touched_{false};
  /// Set by release() (release); serve() loads it (acquire) and then fills
  /// the page from source_, which was written before the handler started.
  std::atomic<bool> released_{false};
  std::thread handler_;
};

}  // namespace shmbus::test
