#include "files.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <zstd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "shmbus/error.hpp"

namespace shmbus::rosbag2 {

namespace {

/// errno's text (std::error_code's, which is thread-safe, not strerror's).
std::string errno_text() { return std::error_code(errno, std::generic_category()).message(); }

}  // namespace

TempFile::TempFile(const std::string& dir, const std::string& suffix) {
  std::string name = fmt::format("{}/shmbus-rosbag2-XXXXXX{}", dir, suffix);
  const int fd = ::mkstemps(name.data(), static_cast<int>(suffix.size()));
  if (fd < 0) {
    throw Error(Errc::kResource,
                fmt::format("cannot create a file in {}: {}; set TMPDIR to a writable folder", dir, errno_text()));
  }
  ::close(fd);
  path_ = std::move(name);
}

TempFile::~TempFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

TempFile::TempFile(TempFile&& other) noexcept : path_(other.release()) {}

std::string TempFile::release() noexcept {
  std::string out;
  out.swap(path_);
  return out;
}

FileKind sniff(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 16> head{};
  in.read(head.data(), head.size());
  const std::string_view h(head.data(), static_cast<std::size_t>(in.gcount()));
  if (h.starts_with(std::string_view("SQLite format 3\0", 16))) return FileKind::kSqlite;
  if (h.starts_with("\x28\xB5\x2F\xFD")) return FileKind::kZstd;
  if (h.starts_with("\x89MCAP0\r\n")) return FileKind::kMcap;
  return FileKind::kOther;
}

namespace {

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const noexcept { ZSTD_freeDCtx(c); }
};
struct FileClose {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

}  // namespace

void unzstd_file(const std::string& in, const std::string& out) {
  const std::unique_ptr<std::FILE, FileClose> src(std::fopen(in.c_str(), "rb"));
  const std::unique_ptr<std::FILE, FileClose> dst(std::fopen(out.c_str(), "wb"));
  if (!src || !dst) {
    throw Error(Errc::kResource, fmt::format("cannot decompress {} to {}: {}", in, out, errno_text()));
  }
  std::error_code ec;
  const std::uintmax_t room = std::filesystem::space(std::filesystem::path(out).parent_path(), ec).available;
  const std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  std::vector<char> ibuf(ZSTD_DStreamInSize());
  std::vector<char> obuf(ZSTD_DStreamOutSize());
  std::uintmax_t written = 0;
  std::size_t last = 0;
  for (std::size_t n; (n = std::fread(ibuf.data(), 1, ibuf.size(), src.get())) > 0;) {
    ZSTD_inBuffer input{ibuf.data(), n, 0};
    while (input.pos < input.size) {
      ZSTD_outBuffer output{obuf.data(), obuf.size(), 0};
      last = ZSTD_decompressStream(ctx.get(), &output, &input);
      if (ZSTD_isError(last) != 0U) {
        throw Error(Errc::kConfig,
                    fmt::format("{}: not a zstd file rosbag2 compressed: {}", in, ZSTD_getErrorName(last)));
      }
      written += output.pos;
      if (!ec && written > room) {
        throw Error(Errc::kResource, fmt::format("{} decompresses to more than the {} bytes free beside {}; set "
                                                 "TMPDIR to a folder with room",
                                                 in, room, out));
      }
      if (std::fwrite(obuf.data(), 1, output.pos, dst.get()) != output.pos) {
        throw Error(Errc::kResource, fmt::format("cannot write {}: {}", out, errno_text()));
      }
    }
  }
  if (last != 0) throw Error(Errc::kConfig, fmt::format("{}: its zstd stream is cut short", in));
  if (std::fflush(dst.get()) != 0) {
    throw Error(Errc::kResource, fmt::format("cannot write {}: {}", out, errno_text()));
  }
}

std::vector<std::byte> unzstd(std::span<const std::byte> in, std::uint64_t max_bytes) {
  const unsigned long long size = ZSTD_getFrameContentSize(in.data(), in.size());
  if (size == ZSTD_CONTENTSIZE_ERROR) throw std::runtime_error("not a zstd frame");
  std::vector<std::byte> out;
  if (size != ZSTD_CONTENTSIZE_UNKNOWN) {
    if (size > max_bytes) {
      throw std::runtime_error(fmt::format("it says it holds {} bytes, more than {}", size, max_bytes));
    }
    out.resize(static_cast<std::size_t>(size));
    const std::size_t r = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(r) != 0U) throw std::runtime_error(ZSTD_getErrorName(r));
    if (r != size) throw std::runtime_error(fmt::format("it holds {} bytes, not the {} it says", r, size));
    return out;
  }
  // No size in the frame: streamed, within the bound.
  const std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::size_t last = 1;
  while (last != 0) {
    const std::size_t at = out.size();
    if (at >= max_bytes) throw std::runtime_error(fmt::format("it holds more than {} bytes", max_bytes));
    out.resize(std::min<std::uint64_t>(max_bytes, std::max<std::size_t>(at * 2, ZSTD_DStreamOutSize())));
    ZSTD_outBuffer output{out.data() + at, out.size() - at, 0};
    last = ZSTD_decompressStream(ctx.get(), &output, &input);
    if (ZSTD_isError(last) != 0U) throw std::runtime_error(ZSTD_getErrorName(last));
    out.resize(at + output.pos);
    if (last != 0 && input.pos == input.size && output.pos == 0) throw std::runtime_error("cut short");
  }
  return out;
}

}  // namespace shmbus::rosbag2
