// Megaphone's state codecs: how a bin's State becomes bytes when the bin migrates
// (docs/MEGAPHONE.md). Trivially copyable types, strings, pairs, and the standard
// containers of those (vector, deque, map, set, unordered_map and flow::FlatMap of trivially
// copyable keys and values) are provided; specialize Codec<State> for other types.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flow/flat_map.hpp"

namespace snailtrail::megaphone {

template <class S, class Enable = void>
struct Codec {
  static_assert(std::is_trivially_copyable_v<S>,
                "specialize megaphone::Codec<State> for this state type");
  static void encode(const S& s, std::vector<char>& out) {
    const auto* p = reinterpret_cast<const char*>(&s);
    out.insert(out.end(), p, p + sizeof(S));
  }
  static void decode(const char*& p, const char* end, S& s) {
    if (static_cast<size_t>(end - p) < sizeof(S))
      throw std::runtime_error("megaphone: truncated state");
    std::memcpy(static_cast<void*>(&s), p, sizeof(S));
    p += sizeof(S);
  }
};

namespace detail {
inline void put_u64(std::vector<char>& out, uint64_t v) {
  const auto* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + 8);
}
inline uint64_t get_u64(const char*& p, const char* end) {
  if (end - p < 8) throw std::runtime_error("megaphone: truncated state");
  uint64_t v;
  std::memcpy(&v, p, 8);
  p += 8;
  return v;
}
}  // namespace detail

template <class P>
struct Codec<std::vector<P>, std::enable_if_t<std::is_trivially_copyable_v<P>>> {
  static void encode(const std::vector<P>& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    const auto* p = reinterpret_cast<const char*>(s.data());
    out.insert(out.end(), p, p + s.size() * sizeof(P));
  }
  static void decode(const char*& p, const char* end, std::vector<P>& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) / sizeof(P) < n)
      throw std::runtime_error("megaphone: truncated state");
    s.resize(n);
    if (n) std::memcpy(static_cast<void*>(s.data()), p, n * sizeof(P));
    p += n * sizeof(P);
  }
};

template <class K, class V>
struct Codec<std::unordered_map<K, V>,
             std::enable_if_t<std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V>>> {
  static void encode(const std::unordered_map<K, V>& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    const size_t at = out.size();
    out.resize(at + s.size() * (sizeof(K) + sizeof(V)));
    char* p = out.data() + at;
    for (const auto& [k, v] : s) {
      std::memcpy(p, &k, sizeof(K));
      std::memcpy(p + sizeof(K), &v, sizeof(V));
      p += sizeof(K) + sizeof(V);
    }
  }
  static void decode(const char*& p, const char* end, std::unordered_map<K, V>& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) / (sizeof(K) + sizeof(V)) < n)
      throw std::runtime_error("megaphone: truncated state");
    s.clear();
    s.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      K k;
      V v;
      std::memcpy(static_cast<void*>(&k), p, sizeof(K));
      std::memcpy(static_cast<void*>(&v), p + sizeof(K), sizeof(V));
      p += sizeof(K) + sizeof(V);
      s.emplace(k, v);
    }
  }
};

// The flat per-key table of the counts (flow/flat_map.hpp): the same bytes as an
// unordered_map's, so a bin's size on the wire does not change.
template <class V>
struct Codec<flow::FlatMap<V>, std::enable_if_t<std::is_trivially_copyable_v<V>>> {
  static void encode(const flow::FlatMap<V>& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    const size_t at = out.size();
    out.resize(at + s.size() * (8 + sizeof(V)));
    char* p = out.data() + at;
    for (const auto& [k, v] : s) {
      std::memcpy(p, &k, 8);
      std::memcpy(p + 8, &v, sizeof(V));
      p += 8 + sizeof(V);
    }
  }
  static void decode(const char*& p, const char* end, flow::FlatMap<V>& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) / (8 + sizeof(V)) < n)
      throw std::runtime_error("megaphone: truncated state");
    s.clear();
    s.reserve(n);  // one allocation; inserted in the sender's slot order (no pile-up)
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t k;
      std::memcpy(&k, p, 8);
      std::memcpy(static_cast<void*>(&s[k]), p + 8, sizeof(V));
      p += 8 + sizeof(V);
    }
  }
};

// ---- more codecs: ordered containers, deques, pairs and vectors of non-trivial types ----

template <class K, class V>
struct Codec<std::pair<K, V>, std::enable_if_t<!std::is_trivially_copyable_v<std::pair<K, V>>>> {
  static void encode(const std::pair<K, V>& s, std::vector<char>& out) {
    Codec<K>::encode(s.first, out);
    Codec<V>::encode(s.second, out);
  }
  static void decode(const char*& p, const char* end, std::pair<K, V>& s) {
    Codec<K>::decode(p, end, s.first);
    Codec<V>::decode(p, end, s.second);
  }
};

namespace detail {
// A sequence container (element by element through Codec<P>): count, then the elements.
template <class C>
struct SeqCodec {
  static void encode(const C& s, std::vector<char>& out) {
    put_u64(out, s.size());
    for (const auto& x : s) Codec<typename C::value_type>::encode(x, out);
  }
  static void decode(const char*& p, const char* end, C& s) {
    const uint64_t n = get_u64(p, end);
    if (static_cast<uint64_t>(end - p) < n)  // every element takes at least one byte
      throw std::runtime_error("megaphone: truncated state");
    s.clear();
    for (uint64_t i = 0; i < n; ++i) {
      typename C::value_type x{};
      Codec<typename C::value_type>::decode(p, end, x);
      s.insert(s.end(), std::move(x));
    }
  }
};
// An ordered map or set, element by element (inserted in order: hinted, linear).
template <class C, class Elem>
struct TreeCodec {
  static void encode(const C& s, std::vector<char>& out) {
    put_u64(out, s.size());
    for (const auto& x : s) Codec<Elem>::encode(Elem(x), out);
  }
  static void decode(const char*& p, const char* end, C& s) {
    const uint64_t n = get_u64(p, end);
    if (static_cast<uint64_t>(end - p) < n) throw std::runtime_error("megaphone: truncated state");
    s.clear();
    for (uint64_t i = 0; i < n; ++i) {
      Elem x{};
      Codec<Elem>::decode(p, end, x);
      s.insert(s.end(), std::move(x));
    }
  }
};
}  // namespace detail

template <class P>
struct Codec<std::vector<P>, std::enable_if_t<!std::is_trivially_copyable_v<P>>>
    : detail::SeqCodec<std::vector<P>> {};
template <class P>
struct Codec<std::deque<P>> : detail::SeqCodec<std::deque<P>> {};
template <>
struct Codec<std::string> {
  static void encode(const std::string& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  static void decode(const char*& p, const char* end, std::string& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) < n) throw std::runtime_error("megaphone: truncated state");
    s.assign(p, n);
    p += n;
  }
};
template <class K, class V>
struct Codec<std::map<K, V>> : detail::TreeCodec<std::map<K, V>, std::pair<K, V>> {};
template <class K>
struct Codec<std::set<K>> : detail::TreeCodec<std::set<K>, K> {};

}  // namespace snailtrail::megaphone
