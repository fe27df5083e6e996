#include "mpi/rank_group.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace snailtrail::mpi {
namespace {

constexpr int kTag = 2020;
constexpr size_t kPiece = size_t{1} << 28;  // MPI counts are int: send in pieces

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

}  // namespace

std::unique_ptr<RankGroup> RankGroup::join_if_launched() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!size || std::atoi(size) <= 1) return nullptr;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  int rank = 0, n = 1;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
  return std::unique_ptr<RankGroup>(new RankGroup(rank, n));
}

RankGroup::~RankGroup() {
  MPI_Finalize();
}

void RankGroup::send_to_root(std::string_view bytes) {
  uint64_t n = bytes.size();
  check(MPI_Send(&n, 1, MPI_UINT64_T, 0, kTag, MPI_COMM_WORLD), "MPI_Send");
  for (size_t off = 0; off < bytes.size(); off += kPiece) {
    const int len = static_cast<int>(std::min(kPiece, bytes.size() - off));
    check(MPI_Send(bytes.data() + off, len, MPI_BYTE, 0, kTag, MPI_COMM_WORLD), "MPI_Send");
  }
}

std::string RankGroup::receive_from(int from) {
  uint64_t n = 0;
  check(MPI_Recv(&n, 1, MPI_UINT64_T, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  std::string bytes(n, '\0');
  for (size_t off = 0; off < n; off += kPiece) {
    const int len = static_cast<int>(std::min<uint64_t>(kPiece, n - off));
    check(
        MPI_Recv(bytes.data() + off, len, MPI_BYTE, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Recv");
  }
  return bytes;
}

void RankGroup::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace snailtrail::mpi
