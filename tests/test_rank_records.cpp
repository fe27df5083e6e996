// What the ranks of `mpirun analyze` pass each other (cli/analyze_ranks.hpp over
// trace/byte_wire.hpp): window records cross unchanged whatever pieces the stream is cut
// into, the output's hand-over round-trips, and a cut or corrupt message is an error.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/analyze_ranks.hpp"
#include "trace/byte_wire.hpp"

namespace snailtrail::cli::test_rank_records {
namespace {

RenderedWindow window(size_t index, int64_t start, uint64_t empty_run, std::string text) {
  RenderedWindow r;
  r.summary.index = index;
  r.summary.window = {start, start + 1000, false, empty_run};
  r.summary.events = empty_run > 0 ? 0 : 10 + index;
  r.summary.cp_ns = empty_run > 0 ? 0 : 700 + static_cast<int64_t>(index);
  r.summary.has_paths = empty_run == 0;
  r.summary.cp.worker = {0.25, 0.75};
  r.summary.diagnostics.add_input("chrome.unmatched_end", index);
  r.text = std::move(text);
  return r;
}

std::vector<RenderedWindow> sample() {
  return {window(0, 0, 0, "{\"window\":0}\n"), window(1, 1000, 0, ""),
          window(2, 2000, 5, "ignored: runs are rendered by whoever writes them"),
          window(7, 7000, 0, std::string(3000, 'x') + "\n")};
}

std::string encode(const std::vector<RenderedWindow>& ws, bool with_text, bool with_summary) {
  std::string out;
  for (const RenderedWindow& w : ws) append_record(out, w, with_text, with_summary);
  return out;
}

void expect_same(const RenderedWindow& got, const RenderedWindow& want, bool with_text,
                 bool with_summary) {
  const bool run = want.summary.window.empty_run > 0;
  EXPECT_EQ(got.summary.index, want.summary.index);
  EXPECT_EQ(got.summary.window.start, want.summary.window.start);
  EXPECT_EQ(got.summary.window.end, want.summary.window.end);
  EXPECT_EQ(got.summary.window.empty_run, want.summary.window.empty_run);
  EXPECT_EQ(got.text, run || !with_text ? "" : want.text);
  if (with_summary && !run) {
    EXPECT_EQ(got.summary.events, want.summary.events);
    EXPECT_EQ(got.summary.cp_ns, want.summary.cp_ns);
    EXPECT_EQ(got.summary.cp.worker, want.summary.cp.worker);
    EXPECT_EQ(got.summary.diagnostics.input, want.summary.diagnostics.input);
  }
}

TEST(RankRecords, EveryCutOfTheStreamReplaysTheSameWindows) {
  const std::vector<RenderedWindow> ws = sample();
  for (const bool with_text : {false, true})
    for (const bool with_summary : {false, true}) {
      const std::string bytes = encode(ws, with_text, with_summary);
      // The stream in two pieces cut at every byte, as replay_rank gets it.
      for (size_t cut = 0; cut <= bytes.size(); ++cut) {
        std::vector<RenderedWindow> got;
        auto keep = [&](RenderedWindow& r) { got.push_back(r); };
        std::string carry(bytes.substr(0, cut));
        carry.erase(0, replay_records(carry, keep));
        carry += bytes.substr(cut);
        EXPECT_EQ(replay_records(carry, keep), carry.size()) << "cut at " << cut;
        ASSERT_EQ(got.size(), ws.size()) << "cut at " << cut;
        for (size_t i = 0; i < ws.size(); ++i) expect_same(got[i], ws[i], with_text, with_summary);
      }
    }
}

TEST(RankRecords, ACorruptSummaryIsAnError) {
  std::string bytes = encode({window(3, 3000, 0, "t\n")}, true, true);
  // The summary's first length field (after the record's head, its text and the
  // summary's fixed fields) is somewhere past the head: make every length huge in turn
  // and check each attempt either replays the same window or throws, never crashes.
  constexpr size_t kHead = 1 + 2 * sizeof(uint64_t) + sizeof(Window) + sizeof(uint64_t);
  const uint64_t huge = uint64_t{1} << 62;
  size_t errors = 0;
  for (size_t at = kHead + 2; at + sizeof huge <= bytes.size(); ++at) {
    std::string bad = bytes;
    std::memcpy(bad.data() + at, &huge, sizeof huge);
    try {
      replay_records(bad, [](RenderedWindow&) {});
    } catch (const std::runtime_error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0u);
}

TEST(RankRecords, TheHandOverRoundTrips) {
  Handover h;
  h.offset = 123456789012;
  h.empty_runs = 3;
  h.empty_windows = 44;
  h.pending.index = 17;
  h.pending.window = {17000, 25000, false, 8};
  const std::string bytes = h.encode();
  const Handover back = Handover::decode(bytes);
  EXPECT_EQ(back.offset, h.offset);
  EXPECT_EQ(back.empty_runs, h.empty_runs);
  EXPECT_EQ(back.empty_windows, h.empty_windows);
  EXPECT_EQ(back.pending.index, h.pending.index);
  EXPECT_EQ(back.pending.window.start, h.pending.window.start);
  EXPECT_EQ(back.pending.window.end, h.pending.window.end);
  EXPECT_EQ(back.pending.window.empty_run, h.pending.window.empty_run);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(Handover::decode(bytes.substr(0, n)), std::runtime_error) << "cut at " << n;
  EXPECT_THROW(Handover::decode(bytes + "x"), std::runtime_error);
}

TEST(ByteWire, LengthsAreCheckedBeforeAnyAllocation) {
  std::string out;
  ByteWriter w(out);
  w.vec(std::vector<uint32_t>{1, 2, 3});
  w.str("name");
  const size_t at = w.placeholder();
  w.patch(at, 99);
  {
    size_t pos = 0;
    ByteReader r(out, pos, "test");
    std::vector<uint32_t> v;
    std::string s;
    uint64_t n = 0;
    r.vec(v);
    r.str(s);
    r.pod(n);
    EXPECT_EQ(v, (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_EQ(s, "name");
    EXPECT_EQ(n, 99u);
    EXPECT_EQ(pos, out.size());
  }
  for (size_t n = 0; n < out.size(); ++n) {
    size_t pos = 0;
    ByteReader r(std::string_view(out).substr(0, n), pos, "test");
    std::vector<uint32_t> v;
    std::string s;
    uint64_t x = 0;
    EXPECT_THROW((r.vec(v), r.str(s), r.pod(x)), std::runtime_error) << "cut at " << n;
  }
  const uint64_t huge = uint64_t{1} << 62;
  std::memcpy(out.data(), &huge, sizeof huge);
  size_t pos = 0;
  ByteReader r(out, pos, "test");
  std::vector<uint32_t> v;
  EXPECT_THROW(r.vec(v), std::runtime_error);
  EXPECT_TRUE(v.empty());
}

}  // namespace
}  // namespace snailtrail::cli::test_rank_records
