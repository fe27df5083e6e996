// Streaming span import, the pieces both formats use (docs/IMPORTERS.md, "Streaming"):
// worker threads for units, the chunked file reader, the bracket and string scan, and
// the sink of diagnostics and skipped units. Internal to the span importers.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "importers/otel/jaeger_reader.hpp"
#include "importers/otel/otlp_reader.hpp"

namespace snailtrail::importers::otel_detail {

// Diagnostics summed over units come out in the order one whole-file import counts them.
inline size_t diagnostic_rank(std::string_view key) {
  for (const auto* kinds : {&kJaegerDiagnostics, &kOtlpDiagnostics})
    if (const DiagnosticKind* k = find_kind(*kinds, key))
      return std::min(static_cast<size_t>(k - kinds->data()), kRankedSpanDiagnostics);
  return kRankedSpanDiagnostics;
}

// Units of work handed to worker threads through a bounded queue (at most two units per
// thread wait), so memory holds the units in flight, not the file.
class UnitWorkers {
 public:
  struct Job {
    size_t index = 0;
    uint64_t byte = 0;
    std::string where;
    // The unit is bytes[off, off + len), followed by simdjson::SIMDJSON_PADDING readable bytes.
    std::string bytes;
    size_t off = 0, len = 0;
    std::string_view text() const { return std::string_view(bytes).substr(off, len); }
    bool cut = false;    // the file ends inside this unit
    bool ready = false;  // Jaeger: `set` is the trace, already read span by span
    SpanSet set;         // OTLP: the trace, already read
  };
  using Work = std::function<void(Job&, dom::parser&)>;

  UnitWorkers(unsigned threads, Work work) : work_(std::move(work)) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    capacity_ = 2 * threads;
    if (threads > 1)
      for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { loop(); });
  }
  ~UnitWorkers() { finish(); }

  void push(Job&& job) {
    if (threads_.empty()) {
      run(job, inline_parser_);
      rethrow();
      return;
    }
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return queue_.size() < capacity_ || failed_; });
    if (failed_) {
      lock.unlock();
      finish();
      rethrow();
    }
    queue_.push_back(std::move(job));
    ready_.notify_one();
  }

  void finish() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  void rethrow() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void run(Job& job, dom::parser& parser) {
    try {
      work_(job, parser);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
      room_.notify_all();
    }
  }
  void loop() {
    dom::parser parser;
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        room_.notify_one();
      }
      if (!failed_) run(job, parser);
    }
  }

  Work work_;
  size_t capacity_ = 2;
  std::vector<std::thread> threads_;
  dom::parser inline_parser_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<Job> queue_;
  bool done_ = false;
  std::atomic<bool> failed_ = false;
  std::exception_ptr error_;
};

// Reads a file or stdin in chunks, appending to a buffer.
class ChunkReader {
 public:
  explicit ChunkReader(const std::string& path) : stdin_(path == "-") {
    fd_ = stdin_ ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw TraceError(path, "cannot open", std::strerror(errno));
    source_ = stdin_ ? "<stdin>" : path;
  }
  ~ChunkReader() {
    if (!stdin_ && fd_ >= 0) ::close(fd_);
  }
  ChunkReader(const ChunkReader&) = delete;
  // Bytes left to read in a regular file (0 if unknown).
  size_t remaining() const {
    struct stat st {};
    if (stdin_ || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    const off_t at = ::lseek(fd_, 0, SEEK_CUR);
    return at >= 0 && st.st_size > at ? static_cast<size_t>(st.st_size - at) : 0;
  }
  ChunkReader& operator=(const ChunkReader&) = delete;
  // Appends up to `chunk` bytes; 0 at the end. For a regular file, no more room than
  // what is left of it (and one byte to see the end): the resize zero-fills the room, a
  // 4 MiB chunk for a file of a few kilobytes.
  size_t append(std::string& buf, size_t chunk) {
    if (struct stat st{}; !stdin_ && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
      const off_t at = ::lseek(fd_, 0, SEEK_CUR);
      if (at >= 0 && st.st_size >= at)
        chunk = std::min(chunk, static_cast<size_t>(st.st_size - at) + 1);
    }
    const size_t at = buf.size();
    buf.resize(at + chunk);
    for (;;) {
      const ssize_t n = ::read(fd_, buf.data() + at, chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        buf.resize(at);
        throw TraceError(source_, "cannot read", std::strerror(errno));
      }
      buf.resize(at + static_cast<size_t>(n));
      return static_cast<size_t>(n);
    }
  }
  const std::string& source() const { return source_; }

 private:
  bool stdin_;
  int fd_ = -1;
  std::string source_;
};

inline size_t kChunk = size_t(1) << 22;  // stream_chunk_bytes

// The scans below look at every byte, eight at a time: the first byte of a word that
// is a quote or backslash (in strings), or a quote or bracket (inside a unit).
constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
inline uint64_t zero_bytes(uint64_t v) {
  return (v - kOnes) & ~v & kHighs;
}  // first is exact
inline uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
// Bytes that are '"' or '\\'.
inline uint64_t string_stops(uint64_t v) {
  return zero_bytes(v ^ (kOnes * '"')) | zero_bytes(v ^ (kOnes * '\\'));
}
// Bytes that are '"', '{', '}', '[' or ']' ('[' and ']' are '{' and '}' without 0x20).
inline uint64_t structural_stops(uint64_t v) {
  const uint64_t lower = v | (kOnes * 0x20);
  return zero_bytes(v ^ (kOnes * '"')) | zero_bytes(lower ^ (kOnes * '{')) |
         zero_bytes(lower ^ (kOnes * '}'));
}
template <typename Stops, typename IsStop>
inline const char* find_stop(const char* p, const char* end, Stops stops, IsStop is_stop) {
  for (; end - p >= 8; p += 8)
    if (const uint64_t m = stops(load8(p))) return p + (__builtin_ctzll(m) >> 3);
  while (p < end && !is_stop(*p)) ++p;
  return p;
}
// The closing quote of a string whose content starts at p, or end if it is not in
// [p, end); `escaped`: the previous chunk ended with a backslash (kept across calls).
inline const char* string_end(const char* p, const char* end, bool& escaped) {
  if (escaped) {
    if (p == end) return end;
    ++p;
    escaped = false;
  }
  for (;;) {
    p = find_stop(p, end, string_stops, [](char c) { return c == '"' || c == '\\'; });
    if (p == end || *p == '"') return p;
    if (p + 1 == end) {  // a backslash ends the chunk
      escaped = true;
      return end;
    }
    p += 2;
  }
}
inline const char* skip_plain(const char* p, const char* end) {
  return find_stop(p, end, structural_stops,
                   [](char c) { return c == '"' || c == '{' || c == '}' || c == '[' || c == ']'; });
}

// Inside a unit, from p (not in a string): brackets and strings only, up to the closing
// bracket met at depth `floor` (returned, not consumed) or the end (end returned;
// `in_string`, `escaped` say where it stopped). 64 bytes at a time as bit masks (SSE2):
// quotes, then strings as the prefix XOR of the quotes, then the brackets outside them;
// a block with a backslash, and the last bytes, go byte by byte as before.
#if defined(__SSE2__)
struct BlockMasks {
  uint64_t quote = 0, backslash = 0, open = 0, close = 0;
};
inline BlockMasks block_masks(const char* p) {
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), lower = _mm_set1_epi8(0x20);
  BlockMasks m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i l = _mm_or_si128(v, lower);  // '[' -> '{', ']' -> '}'
    auto bits = [&](__m128i eq) {
      return uint64_t(static_cast<uint16_t>(_mm_movemask_epi8(eq))) << (16 * k);
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    m.open |= bits(_mm_cmpeq_epi8(l, open));
    m.close |= bits(_mm_cmpeq_epi8(l, close));
  }
  return m;
}
inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}
#endif
inline const char* scan_inside(const char* p, const char* end, int& depth, int floor,
                               bool& in_string, bool& escaped) {
  for (;;) {
#if defined(__SSE2__)
    if (end - p >= 64) {
      const BlockMasks m = block_masks(p);
      if (m.backslash == 0) {
        const uint64_t inside = prefix_xor(m.quote);  // from an opening quote to its close
        for (uint64_t st = (m.open | m.close) & ~inside; st; st &= st - 1) {
          const int i = __builtin_ctzll(st);
          if (m.open >> i & 1) {
            ++depth;
          } else {
            if (depth <= floor) return p + i;
            --depth;
          }
        }
        if (inside >> 63) {  // a string goes on past the block
          p = string_end(p + 64, end, escaped);
          if (p == end) {
            in_string = true;
            return end;
          }
          ++p;
        } else {
          p += 64;
        }
        continue;
      }
    }
#endif
    const char* const lim = std::min(end, p + 64);
    while (p < lim) {
      p = skip_plain(p, lim);
      if (p == lim) break;
      const char x = *p;
      if (x == '"') {
        p = string_end(p + 1, end, escaped);
        if (p == end) {
          in_string = true;
          return end;
        }
        ++p;
      } else if (x == '{' || x == '[') {
        ++depth;
        ++p;
      } else if (depth > floor) {
        --depth;
        ++p;
      } else {
        return p;
      }
    }
    if (p >= end) return end;
  }
}

// Collects what the units report: summed diagnostics, skipped units.
struct StreamSink {
  std::mutex mutex;
  std::vector<std::pair<std::string, uint64_t>> diagnostics;
  std::vector<SpanStream::Skipped> skipped;
  std::vector<size_t> skipped_index;
  void add(const std::vector<std::pair<std::string, uint64_t>>& d) {
    std::lock_guard lock(mutex);
    for (const auto& [key_, n] : d) {
      const std::string& key = key_;  // clang 14 cannot capture a structured binding
      auto it = std::find_if(diagnostics.begin(), diagnostics.end(),
                             [&](const auto& e) { return e.first == key; });
      if (it == diagnostics.end())
        diagnostics.emplace_back(key, n);
      else
        it->second += n;
    }
  }
  void add(std::span<const DiagnosticKind> kinds, SpanDiagnostic d, uint64_t n) {
    if (n) add({{std::string(kinds[size_t(d)].name), n}});
  }
  void skip(size_t index, std::string where, uint64_t byte, std::string error) {
    std::lock_guard lock(mutex);
    skipped.push_back({std::move(where), byte, std::move(error)});
    skipped_index.push_back(index);
  }
  void finish(SpanStream& out) {
    std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const auto& a, const auto& b) {
      return diagnostic_rank(a.first) < diagnostic_rank(b.first);
    });
    std::vector<size_t> order(skipped.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return skipped_index[a] < skipped_index[b]; });
    for (size_t i : order) out.skipped.push_back(std::move(skipped[i]));
    if (!out.skipped.empty())
      diagnostics.emplace_back(span_diagnostic(out.format, SpanDiagnostic::skipped_traces).name,
                               out.skipped.size());
    out.diagnostics = std::move(diagnostics);
  }
};

// The two streams (jaeger_stream.cpp, otlp_stream.cpp).
void stream_jaeger(const std::string& path, unsigned threads, const SpanUnitFn& fn,
                   SpanStream& out);
void stream_otlp(const std::string& path, unsigned threads, size_t gap, const SpanUnitFn& fn,
                 SpanStream& out);

}  // namespace snailtrail::importers::otel_detail
