// Vectors for the large flat arrays of the analysis (millions of elements): resize()
// leaves new trivially copyable elements uninitialized instead of zeroing them, so
// memory that is about to be written is not first cleared (that memset, and its page
// faults, cost as much as the writes). Only resize() to sizes you then fill.
//
// Measured and rejected: madvise(MADV_HUGEPAGE) on these arrays. With the common
// kernel setting defrag=madvise the faults compact memory synchronously and building
// the PAG of 7.7 M events took 3x longer.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
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
};

template <typename T>
using BigVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace snailtrail
