// Values as bytes between the ranks of one mpirun job (the same build on machines of one
// kind: native byte order, no versioning): window summaries, timelines, window records and
// the output's hand-over. ByteWriter appends; ByteReader checks every read and every
// length against what is left, so a cut or corrupt message throws instead of reading past
// its end or allocating what a corrupt length says.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace snailtrail {

class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  // A length, then the elements.
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod(static_cast<uint64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void str(std::string_view s) {
    pod(static_cast<uint64_t>(s.size()));
    out_.append(s);
  }
  // The offset of a uint64_t written now as 0, to patch once its value is known.
  size_t placeholder() {
    const size_t at = out_.size();
    pod(uint64_t{0});
    return at;
  }
  void patch(size_t at, uint64_t v) { std::memcpy(out_.data() + at, &v, sizeof v); }
  size_t size() const { return out_.size(); }

 private:
  std::string& out_;
};

class ByteReader {
 public:
  // Reads `in` from `pos` on, advancing `pos`; `what` names the message in errors.
  ByteReader(std::string_view in, size_t& pos, const char* what)
      : in_(in), pos_(pos), what_(what) {}
  template <typename T>
  void pod(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof v);
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint64_t n = length(sizeof(T));
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
  }
  void str(std::string& s) {
    const uint64_t n = length(1);
    s.assign(in_.data() + pos_, n);
    pos_ += n;
  }
  // A length of elements of `element` bytes each, checked against what is left.
  uint64_t length(size_t element) {
    uint64_t n = 0;
    pod(n);
    if (n > left() / element) fail();
    return n;
  }
  size_t left() const { return in_.size() - pos_; }
  void need(size_t n) const {
    if (left() < n) fail();
  }
  [[noreturn]] void fail() const { throw std::runtime_error(std::string(what_) + ": truncated"); }

 private:
  std::string_view in_;
  size_t& pos_;
  const char* what_;
};

}  // namespace snailtrail
