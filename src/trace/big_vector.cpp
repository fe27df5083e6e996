#include "trace/big_vector.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

namespace snailtrail::big_memory {
namespace {

constexpr size_t kMaxCachedBytes = size_t{16} << 30;

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
size_t round_up(size_t bytes) {
  return (bytes + page_size() - 1) & ~(page_size() - 1);
}

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // size -> block
  size_t free_bytes = 0;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: blocks may be freed during exit
  return *c;
}

}  // namespace

void* allocate(size_t bytes) {
  const size_t need = round_up(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mu);
    auto it = c.free_blocks.lower_bound(need);
    if (it != c.free_blocks.end()) {
      const size_t size = it->first;
      char* block = static_cast<char*>(it->second);
      c.free_blocks.erase(it);
      c.free_bytes -= size;
      if (size - need >= kMinBytes) {  // keep the rest for later requests
        c.free_blocks.emplace(size - need, block + need);
        c.free_bytes += size - need;
      } else if (size > need) {
        munmap(block + need, size - need);
      }
      return block;
    }
  }
  void* p = mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void deallocate(void* p, size_t bytes) noexcept {
  const size_t size = round_up(bytes);
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  if (c.free_bytes + size > kMaxCachedBytes) {
    munmap(p, size);
    return;
  }
  c.free_blocks.emplace(size, p);
  c.free_bytes += size;
}

size_t cached_bytes() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  return c.free_bytes;
}

void release_pages(void* p, size_t bytes) noexcept {
  const auto page = static_cast<uintptr_t>(page_size());
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void prefault(const void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return;
  const auto page = static_cast<uintptr_t>(page_size);
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  // Only whole pages inside the range; errors (old kernels) are harmless.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace snailtrail::big_memory
