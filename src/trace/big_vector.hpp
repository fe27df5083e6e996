// Vectors for the large flat arrays of the analysis (millions of elements): resize()
// default-initializes instead of zeroing, so memory that is about to be written is
// not first cleared (that memset, and its page faults, cost as much as the writes).
//
// Measured and rejected: madvise(MADV_HUGEPAGE) on these arrays. With the common
// kernel setting defrag=madvise the faults compact memory synchronously and building
// the PAG of 7.7 M events took 3x longer.
#pragma once

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace snailtrail {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using BigVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace snailtrail
