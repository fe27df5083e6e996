#include "cli/analyze_ranks.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "summary/summary_wire.hpp"
#include "trace/big_vector.hpp"
#include "trace/byte_wire.hpp"
#include "trace/environment.hpp"

namespace snailtrail::cli {

void append_record(std::string& out, const RenderedWindow& r, bool with_text, bool with_summary) {
  const bool run = r.summary.window.empty_run > 0;
  ByteWriter w(out);
  w.pod(static_cast<uint8_t>(run));
  w.pod(static_cast<uint64_t>(r.summary.index));
  w.pod(r.summary.window);
  w.pod(static_cast<uint64_t>(run || !with_text ? 0 : r.text.size()));
  const size_t summary_length = w.placeholder();
  if (run) return;
  if (with_text) out.append(r.text);
  if (!with_summary) return;
  const size_t before = out.size();
  append_summary(out, r.summary);
  w.patch(summary_length, out.size() - before);
}

size_t replay_records(std::string_view in, const std::function<void(RenderedWindow&)>& consume) {
  constexpr size_t kHead = 1 + 2 * sizeof(uint64_t) + sizeof(Window) + sizeof(uint64_t);
  size_t pos = 0;
  RenderedWindow r;
  while (in.size() - pos >= kHead) {
    const size_t begin = pos;
    uint8_t run = 0;
    uint64_t index = 0, len = 0, summary_len = 0;
    Window window;
    ByteReader head(in, pos, "MPI: window record");
    head.pod(run);
    head.pod(index);
    head.pod(window);
    head.pod(len);
    head.pod(summary_len);
    if (head.left() < len || head.left() - len < summary_len) return begin;
    r.text.assign(in.data() + pos, len);
    pos += len;
    if (summary_len > 0) {
      size_t at = 0;
      read_summary(in.substr(pos, summary_len), at, r.summary);
      if (at != summary_len) throw std::runtime_error("MPI: malformed window summary");
      pos += summary_len;
    }
    r.summary.index = static_cast<size_t>(index);
    r.summary.window = window;
    consume(r);
  }
  return pos;
}

void replay_rank(mpi::RankGroup& group, int from,
                 const std::function<void(RenderedWindow&)>& consume) {
  std::string carry;  // a record cut between two pieces
  while (std::optional<std::string> piece = group.receive_from(from)) {
    if (carry.empty()) {
      const size_t used = replay_records(*piece, consume);
      carry.assign(piece->data() + used, piece->size() - used);
    } else {
      carry += *piece;
      carry.erase(0, replay_records(carry, consume));
    }
    group.give_buffer(std::move(*piece));
  }
  if (!carry.empty()) throw std::runtime_error("MPI: truncated window record");
}

int run_on_ranks(const std::function<int(mpi::RankGroup*)>& run) {
  const std::unique_ptr<mpi::RankGroup> group = mpi::RankGroup::join_if_launched();
  if (!group) return run(nullptr);
  try {
    return run(group.get());
  } catch (const std::exception& e) {
    fmt::print(stderr, "snailtrail: error (rank {} of {}): {}\n", group->rank(), group->size(),
               e.what());
    std::fflush(stderr);
    group->abort(1);
  }
}

// Rank 0's share is smaller by the work it does at the end: writing what the other ranks
// analyzed, about 15 % of the analysis per other rank; adding the other ranks' windows and
// timelines to a report, 5 %. When the ranks write their own parts, rank 0 is to be done
// first, whatever the run-to-run variation, so that it takes windows from the last rank
// (steal_windows) instead of waiting for it: 0.7 of a share (median walls at two ranks
// of 1.76 / 1.84 / 1.80 s for 0.7 / 0.8 / 0.9, docs/PERFORMANCE.md).
double root_weight(RootDuty duty, int ranks) {
  if (const char* w = environment_value("SNAILTRAIL_ROOT_WEIGHT"); w && std::atof(w) > 0)
    return std::atof(w);
  if (duty == RootDuty::writes_own_part) return 0.7;
  const double per_rank = duty == RootDuty::writes_every_part ? 0.15 : 0.05;
  return std::max(0.1, 1.0 - per_rank * static_cast<double>(ranks - 1));
}

std::pair<int64_t, int64_t> rank_share(const mpi::RankGroup& group, const SnailIndex& index,
                                       const StreamedPlan& plan, RootDuty duty) {
  std::vector<double> weights(static_cast<size_t>(group.size()), 1.0);
  weights[0] = root_weight(duty, group.size());
  const std::vector<int64_t> b = split_windows_by_events(index, plan, weights);
  const auto r = static_cast<size_t>(group.rank());
  return {b[r], b[r + 1] - 1};
}

void send_windows_to_root(
    mpi::RankGroup& group, bool with_summary,
    const std::function<void(const std::function<void(RenderedWindow&)>&)>& analyze) {
  constexpr size_t kSendPiece = size_t{4} << 20;
  std::string records;
  records.reserve(kSendPiece + (kSendPiece >> 2));
  analyze([&](RenderedWindow& r) {
    append_record(records, r, true, with_summary);
    if (records.size() >= kSendPiece) {
      group.send_to_root(std::move(records));
      records = group.take_buffer();
      records.reserve(kSendPiece + (kSendPiece >> 2));
    }
  });
  group.send_to_root(std::move(records));
  group.end_stream();  // rank 0 need not wait for this rank's teardown
}

namespace {
// The first byte of a message between ranks: what it is.
constexpr char kHandOver = 'H', kSteal = 'S', kGrant = 'G';

void expect_kind(std::string_view message, char kind, const char* what) {
  if (message.empty() || message[0] != kind)
    throw std::runtime_error(fmt::format("MPI: a message other than the {} expected", what));
}
}  // namespace

std::string steal_request() {
  return std::string(1, kSteal);
}

bool is_steal_request(std::string_view message) {
  return message == steal_request();
}

std::string grant_message(int64_t first, int64_t last) {
  std::string out(1, kGrant);
  ByteWriter w(out);
  w.pod(first);
  w.pod(last);
  return out;
}

std::pair<int64_t, int64_t> decode_grant(std::string_view message) {
  expect_kind(message, kGrant, "grant of windows");
  size_t pos = 1;
  ByteReader r(message, pos, "MPI: grant of windows");
  int64_t first = 0, last = 0;
  r.pod(first);
  r.pod(last);
  if (pos != message.size()) throw std::runtime_error("MPI: malformed grant of windows");
  return {first, last};
}

int64_t first_window_given(const SnailIndex& index, const StreamedPlan& plan, int64_t first_left,
                           int64_t last) {
  if (last - first_left + 1 < kMinStolenWindows) return last + 1;
  StreamedPlan left = plan;
  left.k0 = first_left;
  left.k1 = last;
  return split_windows_by_events(index, left, {1.0, 1.0})[1];
}

std::string Handover::encode() const {
  std::string out(1, kHandOver);
  ByteWriter w(out);
  w.pod(offset);
  w.pod(empty_runs);
  w.pod(empty_windows);
  w.pod(static_cast<uint64_t>(pending.index));
  w.pod(pending.window);
  return out;
}

Handover Handover::decode(std::string_view bytes) {
  expect_kind(bytes, kHandOver, "hand-over");
  Handover h;
  size_t pos = 1;
  uint64_t index = 0;
  ByteReader r(bytes, pos, "MPI: hand-over message");
  r.pod(h.offset);
  r.pod(h.empty_runs);
  r.pod(h.empty_windows);
  r.pod(index);
  r.pod(h.pending.window);
  if (pos != bytes.size())
    throw std::runtime_error(fmt::format("MPI: hand-over message of {} bytes", bytes.size()));
  h.pending.index = static_cast<size_t>(index);
  return h;
}

}  // namespace snailtrail::cli
