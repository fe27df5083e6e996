// How the ranks of `mpirun ... analyze` of a .snail trace share their work and output
// (docs/PERFORMANCE.md, "Across processes"): each rank analyzes a share of the windows;
// what it renders reaches the output either through rank 0 (records in its stream to rank
// 0) or, when the output is a regular file, written by the rank itself at its offset,
// which the rank before it passes on in a hand-over message once it knows where its own
// part ends.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mpi/rank_group.hpp"
#include "summary/analysis.hpp"
#include "summary/streamed.hpp"

namespace snailtrail::cli {

// A window as one rank sends it to rank 0: kind (0 window, 1 run of windows without
// events), index, start, end, empty_run, text length, summary length, the text (if
// `with_text`), and the window's summary (summary/summary_wire.hpp) if `with_summary`.
void append_record(std::string& out, const RenderedWindow& r, bool with_text, bool with_summary);

// Replays the complete records at the front of `in` into `consume`; returns the bytes
// they took (a record cut at the end of `in` is left).
size_t replay_records(std::string_view in, const std::function<void(RenderedWindow&)>& consume);

// Replays rank `from`'s whole stream of records, piece by piece as it arrives.
void replay_rank(mpi::RankGroup& group, int from,
                 const std::function<void(RenderedWindow&)>& consume);

// Runs a command's `run` once per process: with the group of ranks when launched by
// mpirun with more than one process (else nullptr). An error on any rank ends the whole
// job (the other ranks would wait for it), with the rank named in the message.
int run_on_ranks(const std::function<int(mpi::RankGroup*)>& run);

// What rank 0 does beside analyzing its own windows, which makes its share smaller.
enum class RootDuty {
  writes_every_part,  // it writes what every other rank analyzed (stdout, devices)
  writes_own_part,    // the ranks write their own parts; rank 0 ends the run alone
  builds_report,      // `report`: it adds the other ranks' windows to the page
};

// Rank 0's weight against the other ranks' 1 (measured: docs/PERFORMANCE.md, "Scaling over
// ranks"); SNAILTRAIL_ROOT_WEIGHT overrides it, for such measurements.
double root_weight(RootDuty duty, int ranks);

// This rank's share of the plan's windows (first, last; last < first: none): consecutive
// shares in rank order with numbers of events (the block index's counts) proportional to
// the ranks' weights, rank 0's from root_weight(duty, ...) and the others' 1.
std::pair<int64_t, int64_t> rank_share(const mpi::RankGroup& group, const SnailIndex& index,
                                       const StreamedPlan& plan, RootDuty duty);

// Rank > 0: `analyze` feeds its windows, in order, to the callback it gets; each goes to
// rank 0 as a record (its text; its summary too if `with_summary`), in pieces of 4 MiB sent
// in the background while the analysis goes on. Rank 0 takes them with replay_rank.
void send_windows_to_root(
    mpi::RankGroup& group, bool with_summary,
    const std::function<void(const std::function<void(RenderedWindow&)>&)>& analyze);

// What a rank hands to the next one (the last rank: to rank 0) once its part of the output
// is written: where the output goes on, the runs of windows without events written so far,
// and the run at the end of its windows, not yet written (the next rank's first windows
// may continue it).
struct Handover {
  uint64_t offset = 0;
  uint64_t empty_runs = 0, empty_windows = 0;
  WindowSummary pending;  // window.empty_run == 0: none
  std::string encode() const;
  static Handover decode(std::string_view bytes);  // throws on a malformed message
};

// Messages between ranks besides hand-overs: rank 0, done with its own share before the
// last rank (its share is the smaller), asks the last rank for windows from the end of its
// share; the last rank answers with a grant of the later half of the windows it has not
// started yet (by events), or of none when fewer than kMinStolenWindows are left. Rank 0
// asks again after each grant of some windows, so the last grant is always of none.
inline constexpr int64_t kMinStolenWindows = 4;
std::string steal_request();
bool is_steal_request(std::string_view message);
// Windows first..last (last < first: none).
std::string grant_message(int64_t first, int64_t last);
std::pair<int64_t, int64_t> decode_grant(std::string_view message);  // throws if malformed
// The first window the last rank gives away of first_left..last (last + 1: none).
int64_t first_window_given(const SnailIndex& index, const StreamedPlan& plan, int64_t first_left,
                           int64_t last);

// True if ranks other than 0 may write their parts of the output themselves: `path` names
// a regular file, or nothing yet (stdout and devices go through rank 0).
bool ranks_write_output(const std::string& path);

// One rank's part of the output file: kept in memory until its offset is known, then
// written there with pwrite (the file is created by rank 0 before the offset is passed on).
// What was kept is written by a thread of its own, so that the analysis goes on meanwhile
// (on the core the rank before, done by then, has left).
class RankOutput {
 public:
  explicit RankOutput(std::string path) : path_(std::move(path)) {}
  RankOutput(const RankOutput&) = delete;
  RankOutput& operator=(const RankOutput&) = delete;
  ~RankOutput();
  bool started() const { return fd_ >= 0; }
  void append(std::string_view bytes);
  // Opens the file and writes `prefix` at `offset`, then what was appended so far.
  void start(uint64_t offset, std::string_view prefix);
  // Writes the rest; returns the offset after this rank's part.
  uint64_t finish();

 private:
  void write_out(std::string_view bytes);
  static void write_at(int fd, const std::string& path, uint64_t& offset, std::string_view bytes);
  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::thread writer_;  // writes what was kept (held_)
  std::exception_ptr writer_error_;
  std::vector<std::string> held_;  // pieces of 4 MiB: growing them would copy
  std::string pending_;            // after start: written in pieces of 1 MiB
};

}  // namespace snailtrail::cli
