// `analyze`'s output under mpirun (analyze_ranks.hpp): each rank appends its part of the
// output at its offset of the file, from a writer thread, in pieces.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "cli/analyze_ranks.hpp"

namespace snailtrail::cli {

namespace {

constexpr size_t kHeldPiece = size_t{4} << 20;
constexpr size_t kWritePiece = size_t{1} << 20;

}  // namespace

bool ranks_write_output(const std::string& path) {
  if (path.empty() || path == "-") return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT;
  return S_ISREG(st.st_mode);
}

RankOutput::~RankOutput() {
  if (writer_.joinable()) writer_.join();
  if (fd_ >= 0) ::close(fd_);
}

void RankOutput::append(std::string_view bytes) {
  if (started()) {
    pending_.append(bytes);
    if (pending_.size() >= kWritePiece) {
      write_out(pending_);
      pending_.clear();
    }
    return;
  }
  if (held_.empty() || held_.back().size() + bytes.size() > kHeldPiece) {
    held_.emplace_back();
    held_.back().reserve(std::max(kHeldPiece, bytes.size()));
    // One call faults the piece in, not a trap per page as it fills.
    big_memory::prefault(held_.back().data(), held_.back().capacity());
  }
  held_.back().append(bytes);
}

void RankOutput::start(uint64_t offset, std::string_view prefix) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error(fmt::format(
        "cannot write {}: {} (under mpirun every rank writes its part of -o: it must be on a "
        "file system all ranks share, or write to stdout)",
        path_, std::strerror(errno)));
  uint64_t held_bytes = prefix.size();
  for (const std::string& piece : held_) held_bytes += piece.size();
  offset_ = offset + held_bytes;  // what comes next goes after what was kept
  writer_ = std::thread([this, offset, prefix = std::string(prefix)]() mutable {
    try {
      write_at(fd_, path_, offset, prefix);
      for (std::string& piece : held_) {
        write_at(fd_, path_, offset, piece);
        std::string().swap(piece);
      }
    } catch (...) {
      writer_error_ = std::current_exception();
    }
  });
  pending_.reserve(kWritePiece + (kWritePiece >> 2));
}

uint64_t RankOutput::finish() {
  write_out(pending_);
  pending_.clear();
  if (writer_.joinable()) writer_.join();
  held_.clear();
  if (writer_error_) std::rethrow_exception(writer_error_);
  return offset_;
}

void RankOutput::write_out(std::string_view bytes) {
  write_at(fd_, path_, offset_, bytes);
}

void RankOutput::write_at(int fd, const std::string& path, uint64_t& offset,
                          std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error(fmt::format("cannot write {} at byte {}: {}", path, offset,
                                           n < 0 ? std::strerror(errno) : "nothing written"));
    offset += static_cast<uint64_t>(n);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace snailtrail::cli
