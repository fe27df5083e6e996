// Vectors for the large flat arrays of the analysis (millions of elements).
//
// - resize() leaves new trivially copyable elements uninitialized instead of zeroing
//   them: memory that is about to be written is not first cleared.
// - Blocks of 1 MiB and more come from a process-wide cache of mapped memory: a freed
//   block is kept, already faulted in, and handed out again (split if much larger). On
//   fresh memory the kernel maps and zeroes 4 KiB per page fault; for a 256 s window
//   that was 265,000 faults and 45 % of the run (docs/PERFORMANCE.md).
//
// Measured and rejected: madvise(MADV_HUGEPAGE) on these arrays. With the common kernel
// setting defrag=madvise the faults compact memory synchronously and building the PAG
// of 7.7 M events took 3x longer.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace snailtrail {

template <typename T>
struct BigAllocator;

namespace big_memory {
constexpr size_t kMinBytes = size_t{1} << 20;
// Returns at least `bytes` of page-aligned memory (bytes >= kMinBytes).
void* allocate(size_t bytes);
void deallocate(void* p, size_t bytes) noexcept;
// Bytes currently cached (free, faulted in); for tests and diagnostics.
size_t cached_bytes();

// Asks the kernel to back [p, p + bytes) with pages now, in one call, instead of taking a
// page fault per 4 KiB while the memory is filled. Purely a speed hint; no-op if
// unsupported.
void prefault(const void* p, size_t bytes);

// Gives the whole pages inside [p, p + bytes) back to the kernel (madvise MADV_DONTNEED):
// they stop counting in the resident set, and read as zero if touched again. Only for
// memory of allocate() (private anonymous mappings) that holds nothing needed any more.
void release_pages(void* p, size_t bytes) noexcept;

// Gives back the pages of a large vector's capacity beyond its size (elements
// [size, capacity) become unspecified; the vector stays valid and may grow into them).
// For arrays sized for the worst case, filled, then cut to what they hold (the PAG's
// node arrays: one slot per event, about half of them used).
template <typename T>
void release_spare_capacity(std::vector<T, BigAllocator<T>>& v) noexcept {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  if (v.capacity() * sizeof(T) < kMinBytes) return;  // not from allocate()
  release_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

// Reserves room for `n` more elements of `v` and pre-faults it (for large reservations).
template <typename T, typename A>
void reserve_prefaulted(std::vector<T, A>& v, size_t n) {
  v.reserve(n);
  if (v.capacity() * sizeof(T) >= (size_t{1} << 20))
    prefault(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}
}  // namespace big_memory

template <typename T>
struct BigAllocator {
  using value_type = T;
  BigAllocator() = default;
  template <typename U>
  BigAllocator(const BigAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= big_memory::kMinBytes) return static_cast<T*>(big_memory::allocate(bytes));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes >= big_memory::kMinBytes)
      big_memory::deallocate(p, bytes);
    else
      std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  void construct(U* p) noexcept {
    // Types that memcpy may create (trivially copyable and destructible, e.g. Event) are
    // left as they are even if they have default member initializers: the caller fills
    // them. Others are default-initialized.
    if constexpr (!(std::is_trivially_copyable_v<U> && std::is_trivially_destructible_v<U>))
      ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const BigAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using BigVector = std::vector<T, BigAllocator<T>>;

}  // namespace snailtrail
