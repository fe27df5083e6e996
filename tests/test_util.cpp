// The shared utilities (trace/json_text.hpp, trace/little_endian.hpp, trace/random.hpp,
// importers/common/path.hpp, pag/snapshot.hpp's window arithmetic, trace/environment.hpp),
// each against an independent oracle.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include "importers/common/path.hpp"
#include "kernel/kernel_event.hpp"
#include "pag/snapshot.hpp"
#include "trace/environment.hpp"
#include "trace/json_text.hpp"
#include "trace/little_endian.hpp"
#include "trace/random.hpp"

namespace snailtrail::test_util {
namespace {

std::string esc(std::string_view s, const JsonEscape& style) {
  std::string out;
  append_json_string(out, s, style);
  return out;
}

TEST(JsonText, QuotesAndBackslashes) {
  for (const JsonEscape* st : {&kJsonTrace, &kJsonOutput, &kJsonLogText, &kJsonPlain})
    EXPECT_EQ(esc("a\"b\\c", *st), R"("a\"b\\c")");
}

TEST(JsonText, ControlCharacters) {
  const std::string all_controls = [] {
    std::string s;
    for (int c = 0; c < 0x20; ++c) s.push_back(static_cast<char>(c));
    return s;
  }();
  // Oracle: every control character as \u00xx, built by hand.
  std::string long_form = "\"";
  for (int c = 0; c < 0x20; ++c) long_form += fmt::format("\\u{:04x}", c);
  long_form += "\"";
  EXPECT_EQ(esc(all_controls, kJsonTrace), long_form);
  EXPECT_EQ(esc(all_controls, kJsonPlain), long_form);
  std::string short_form = long_form;
  for (auto [from, to] : {std::pair{"\\u0009", "\\t"}, {"\\u000a", "\\n"}, {"\\u000d", "\\r"}})
    short_form.replace(short_form.find(from), 6, to);
  EXPECT_EQ(esc(all_controls, kJsonOutput), short_form);
  EXPECT_EQ(esc(all_controls, kJsonLogText), short_form);
  // DEL is escaped only in log text.
  EXPECT_EQ(esc("\x7f", kJsonOutput), "\"\x7f\"");
  EXPECT_EQ(esc("\x7f", kJsonLogText), "\"\\u007f\"");
}

TEST(JsonText, Utf8PassesThroughAndInvalidBytesAreReplaced) {
  const std::string valid = "h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";  // é € 😀
  for (const JsonEscape* st : {&kJsonTrace, &kJsonOutput, &kJsonLogText, &kJsonPlain})
    EXPECT_EQ(esc(valid, *st), "\"" + valid + "\"");
  // A stray continuation byte, an overlong "/", a surrogate, a truncated sequence,
  // a code point beyond U+10FFFF: each invalid lead byte is replaced, the rest follow.
  const std::string bad[] = {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xE2\x82", "\xF4\x90\x80\x80"};
  for (const std::string& b : bad) {
    EXPECT_EQ(esc(b, kJsonOutput), "\"" + b + "\"");  // copied as is
    const std::string t = esc(b, kJsonTrace), l = esc(b, kJsonLogText);
    EXPECT_EQ(t.substr(0, 4), "\"\xEF\xBF\xBD") << b;
    EXPECT_EQ(l.substr(0, 7), "\"\\ufffd") << b;
    // No byte >= 0x80 survives outside a replacement: all of them started no sequence.
    for (char c : l) EXPECT_LT(static_cast<unsigned char>(c), 0x80) << b;
  }
  // Valid sequences next to an invalid byte stay whole.
  EXPECT_EQ(esc("\xC3\xA9\xFF\xC3\xA9", kJsonTrace), "\"\xC3\xA9\xEF\xBF\xBD\xC3\xA9\"");
  // Both output buffer types give the same bytes.
  fmt::memory_buffer buf;
  append_json_string(buf, "x\n\xFF", kJsonLogText);
  EXPECT_EQ(fmt::to_string(buf), esc("x\n\xFF", kJsonLogText));
}

TEST(JsonText, Utf8SequenceLengthAgreesWithADecoder) {
  // Oracle: decode every 1- to 4-byte prefix by the definition (RFC 3629).
  auto oracle = [](const unsigned char* p, size_t n) -> size_t {
    const unsigned c = p[0];
    size_t len = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
    if (len <= 1 || len > n) return len == 1 ? 1 : 0;
    uint32_t cp = c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((p[k] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (p[k] & 0x3F);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
  };
  unsigned char p[4];
  for (unsigned a = 0; a < 256; ++a)
    for (unsigned b : {0x00u, 0x80u, 0x8Fu, 0x90u, 0x9Fu, 0xA0u, 0xBFu, 0xC0u})
      for (unsigned c : {0x80u, 0xBFu, 0x41u}) {
        p[0] = static_cast<unsigned char>(a), p[1] = static_cast<unsigned char>(b);
        p[2] = static_cast<unsigned char>(c), p[3] = 0x80;
        for (size_t n = 1; n <= 4; ++n)
          ASSERT_EQ(utf8_sequence_length(p, n), oracle(p, n))
              << a << " " << b << " " << c << " " << n;
      }
}

TEST(JsonText, Numbers) {
  auto num = [](double v, int sig = 0) {
    std::string out;
    append_json_number(out, v, sig);
    return out;
  };
  EXPECT_EQ(num(NAN), "null");
  EXPECT_EQ(num(INFINITY), "null");
  EXPECT_EQ(num(-INFINITY, 6), "null");
  EXPECT_EQ(num(-0.0), "0");
  EXPECT_EQ(num(-0.0, 6), "0");
  EXPECT_EQ(num(0.1), "0.1");
  EXPECT_EQ(num(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(num(1.0 / 3, 6), "0.333333");
  EXPECT_EQ(num(123456789.0, 6), "1.23457e+08");
  EXPECT_EQ(num(2.5), "2.5");
  // Shortest round trip: reads back as the same double.
  for (double v : {1e-300, 6.02214076e23, 0.1 + 0.2, -1.5e-7, 4.9e-324}) {
    const std::string s = num(v);
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;  // stod rejects subnormals
  }
  EXPECT_EQ(num(-DBL_MAX), fmt::format("{}", -DBL_MAX));
}

TEST(LittleEndian, RoundTripsAndByteOrder) {
  std::string out;
  le::put<uint32_t>(out, 0x01020304u);
  le::put<int64_t>(out, -2);
  le::put<uint8_t>(out, 0xAB);
  le::store_u32(out, 0xDEADBEEFu);
  ASSERT_EQ(out.size(), 4u + 8 + 1 + 4);
  // Byte order written by hand: least significant byte first.
  EXPECT_EQ(out.substr(0, 4), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(out.substr(4, 8), std::string("\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 8));
  EXPECT_EQ(le::get<uint32_t>(out.data()), 0x01020304u);
  EXPECT_EQ(le::get<int64_t>(out.data() + 4), -2);
  EXPECT_EQ(le::get<uint8_t>(out.data() + 12), 0xAB);
  EXPECT_EQ(le::load_u32(reinterpret_cast<const uint8_t*>(out.data()) + 13), 0xDEADBEEFu);
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{0x8000000000000000}}) {
    std::string b;
    le::put(b, v);
    uint64_t byhand = 0;
    for (int i = 7; i >= 0; --i) byhand = byhand << 8 | static_cast<unsigned char>(b[i]);
    EXPECT_EQ(byhand, v);
    EXPECT_EQ(le::get<uint64_t>(b.data()), v);
  }
}

TEST(Random, Splitmix64KnownValues) {
  // Computed independently (Python, arithmetic modulo 2^64); seed 0 gives the reference
  // implementation's published first output 0xe220a8397b1dcdaf.
  uint64_t s = 0;
  EXPECT_EQ(splitmix64(s), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(s), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64(s), 0x06c45d188009454fULL);
  EXPECT_EQ(s, 0xdaa66d2c7ddf743fULL);
  s = 1234567;
  EXPECT_EQ(splitmix64(s), 0x599ed017fb08fc85ULL);
  EXPECT_EQ(splitmix64(s), 0x2c73f08458540fa5ULL);
  EXPECT_EQ(splitmix64(s), 0x883ebce5a3f27c77ULL);
  s = 0;
  EXPECT_DOUBLE_EQ(splitmix64_uniform(s), 0.8833108082136426);
}

TEST(Paths, HasExtension) {
  const struct {
    const char* path;
    const char* ext;
    bool expected;
  } cases[] = {{"a/trace.json", ".json", true}, {"TRACE.JSON", ".json", true},
               {".json", ".json", true},        {"trace.jsonl", ".json", false},
               {"json", ".json", false},        {"", ".json", false},
               {"x.Snail", ".snail", true}};
  for (const auto& c : cases) EXPECT_EQ(has_extension(c.path, c.ext), c.expected) << c.path;
}

TEST(Windowing, AgainstWideArithmetic) {
  using namespace windowing;
  // Oracle: floor division in __int128 by comparison, saturation by hand.
  auto floor128 = [](__int128 a, __int128 b) {
    __int128 q = a / b;
    if (q * b > a) --q;  // b > 0 here
    return q;
  };
  const int64_t mx = std::numeric_limits<int64_t>::max(), mn = std::numeric_limits<int64_t>::min();
  for (int64_t a :
       {int64_t{-7}, int64_t{-6}, int64_t{-1}, int64_t{0}, int64_t{5}, int64_t{6}, mn, mx, mn + 1})
    for (int64_t b : {int64_t{1}, int64_t{3}, int64_t{6}, mx}) {
      EXPECT_EQ(floor_div(a, b), static_cast<int64_t>(floor128(a, b))) << a << "/" << b;
      for (int64_t origin : {int64_t{0}, int64_t{-5}, int64_t{100}, mn, mx}) {
        const __int128 k = floor128(static_cast<__int128>(a) - origin, b);
        if (k > mx || k < mn) continue;  // no window number: t is that far from origin
        EXPECT_EQ(window_of(a, origin, b), static_cast<int64_t>(k))
            << a << " " << origin << " " << b;
        for (__int128 kk : {k, k + 1}) {
          if (kk > mx) continue;
          const __int128 start = static_cast<__int128>(origin) + kk * b;
          EXPECT_EQ(border(origin, static_cast<int64_t>(kk), b), start > mx ? mx
                                                                 : start < mn
                                                                     ? mn
                                                                     : static_cast<int64_t>(start));
        }
      }
    }
  EXPECT_EQ(border(mx, 2, mx), mx);
  EXPECT_EQ(border(mn, -2, mx), mn);
  EXPECT_EQ(floor_div(-7, -2), 3);
}

TEST(Kernel, TracepointNamesPerTracer) {
  using kernel::KType;
  using kernel::tracepoint_type;
  auto type = [](std::string_view name, bool lttng) -> int {
    const KType* t = tracepoint_type(name, lttng);
    return t ? static_cast<int>(*t) : -1;
  };
  // Written by hand from perf's and LTTng's tracepoint names.
  EXPECT_EQ(type("sched_switch", false), static_cast<int>(KType::sched_switch));
  EXPECT_EQ(type("sched_switch", true), static_cast<int>(KType::sched_switch));
  EXPECT_EQ(type("softirq_entry", false), static_cast<int>(KType::softirq_entry));
  EXPECT_EQ(type("softirq_entry", true), -1);
  EXPECT_EQ(type("irq_softirq_exit", true), static_cast<int>(KType::softirq_exit));
  EXPECT_EQ(type("irq_softirq_exit", false), -1);
  EXPECT_EQ(type("timer_hrtimer_expire_entry", true), static_cast<int>(KType::hrtimer_entry));
  EXPECT_EQ(type("hrtimer_expire_exit", false), static_cast<int>(KType::hrtimer_exit));
  EXPECT_EQ(type("net_if_receive_skb", true), static_cast<int>(KType::net_receive));
  EXPECT_EQ(type("net_if_receive_skb", false), -1);
  EXPECT_EQ(type("netif_receive_skb", false), static_cast<int>(KType::net_receive));
  EXPECT_EQ(type("lttng_statedump_process_state", true), static_cast<int>(KType::statedump));
  EXPECT_EQ(type("lttng_statedump_process_state", false), -1);
  EXPECT_EQ(type("sched_stat_runtime", false), -1);
  EXPECT_EQ(type("", true), -1);
}

// Before the freeze, reads are live (tests set variables between runs); after it, they
// come from the copy, whatever is set since, while another thread writes the environment
// (as Open MPI's threads do): in a child process, as the freeze lasts for the process.
TEST(Environment, LiveUntilFrozenThenTheCopyWhileAnotherThreadWrites) {
  EXPECT_EXIT(
      {
        ::setenv("SNAILTRAIL_TEST_ENV_A", "before", 1);
        ::unsetenv("SNAILTRAIL_TEST_ENV_B");
        const char* live = environment_value("SNAILTRAIL_TEST_ENV_A");
        int wrong = live && std::string(live) == "before" ? 0 : 1;
        ::setenv("SNAILTRAIL_TEST_ENV_A", "frozen", 1);
        freeze_environment();
        std::thread writer([] {
          for (int i = 0; i < 2000; ++i) {
            const std::string name = "SNAILTRAIL_TEST_ENV_W" + std::to_string(i % 300);
            ::setenv(name.c_str(), "x", 1);
            ::setenv("SNAILTRAIL_TEST_ENV_A", i % 2 ? "changed" : "again", 1);
            ::setenv("SNAILTRAIL_TEST_ENV_B", "set", 1);
          }
        });
        for (int i = 0; i < 20000; ++i) {
          const char* a = environment_value("SNAILTRAIL_TEST_ENV_A");
          if (!a || std::string(a) != "frozen") wrong |= 2;
          if (environment_value("SNAILTRAIL_TEST_ENV_B")) wrong |= 4;
          // A name that is a prefix of a set one is not that one.
          if (environment_value("SNAILTRAIL_TEST_ENV_")) wrong |= 8;
        }
        writer.join();
        freeze_environment();  // idempotent: the first copy stays
        const char* a = environment_value("SNAILTRAIL_TEST_ENV_A");
        if (!a || std::string(a) != "frozen") wrong |= 16;
        std::exit(wrong);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace snailtrail::test_util
