// Readers of foreign stack-sample formats into a SampleSet (docs/FLAME.md):
// folded stacks ("root;child;leaf 42", Brendan Gregg's stackcollapse output) and the
// text of `perf script` (header line with comm, tid, time and event, then one frame
// per line, leaf first, a blank line after each sample).
#pragma once

#include <string>
#include <string_view>

#include "flame/samples.hpp"

namespace snailtrail::flame {

// Folded stacks: one stack per line, frames separated by ';', root first, then
// whitespace and a non-negative integer count. Empty lines are skipped. A malformed
// line is an error (TraceError "SOURCE: line N: ..."): folded files are written by
// tools, so a bad line means a wrong file. Samples have no time, thread or operator.
void parse_folded(std::string_view text, const std::string& source, SampleSet& out);

struct PerfOptions {
  // Keep only samples of this event; "cpu-clock" also matches "cpu-clock:pppH" (the
  // event with modifiers). Empty: all (or the first, with first_event_only).
  std::string event;
  // Weigh each sample by its period (the number before the event: "250000 cycles:u:")
  // instead of 1; a sample without one counts 1 and is counted as perf.no_period.
  bool weight_period = false;
  // Suffix "_[k]" on kernel frames (DSO [kernel.kallsyms], [module], .../vmlinux), as
  // stackcollapse-perf.pl --kernel.
  bool annotate_kernel = false;
  // Names tidied as stackcollapse-perf.pl does: ';' as ':', everything from the first
  // '(' on cut (but "(anonymous namespace)" and Go's "pkg.(*T).f" kept), quotes dropped.
  bool tidy_names = false;
  // With an empty `event`: keep the first event met, count the others as
  // perf.other_events (stackcollapse-perf.pl's default: mixed events mislead).
  bool first_event_only = false;
};

// `perf script` output: headers "COMM [PID/]TID [[CPU]] [SECS.FRAC:] [PERIOD] EVENT:"
// (old perf prints no time: those samples get ts = kNoTime), frame lines indented or
// not. Each sample keeps the comm of its own header. Never throws on content: lines it cannot read
// are counted in out.diagnostics (with the first line of each kind in out.first_line):
//   perf.bad_headers        a sample header without comm, tid and time ("comm tid [cpu]
//   secs.frac:") perf.bad_frames         a frame line that is not "ADDR [SYMBOL[+0xOFF]] [(DSO)]"
//   perf.unknown_symbols    frames without a symbol ("[unknown]"): named by their DSO
//   perf.empty_stacks       samples without any frame line (skipped)
//   perf.other_events       samples of an event other than PerfOptions::event (skipped)
//   perf.no_period          samples without a period under weight_period (count 1)
void parse_perf_script(std::string_view text, const std::string& source, SampleSet& out,
                       const PerfOptions& options = {});

// The same, read from the file at `path` in chunks: memory holds the samples, not the
// file. Errors name the file.
void parse_folded_file(const std::string& path, SampleSet& out);
void parse_perf_script_file(const std::string& path, SampleSet& out,
                            const PerfOptions& options = {});

// At most `max_bytes` from the start of a file (for sniff_sample_format and check_text).
std::string read_file_head(const std::string& path, size_t max_bytes);

// Throws TraceError ("SOURCE: byte N: ...", binary bytes escaped) when `head` is not text:
// a perf.data file, or NUL bytes.
void check_text(std::string_view head, const std::string& source);

// Why `set` read from a text of `format` ("perf", "folded") holds no sample: its
// problems with their first lines, or "(empty input)".
std::string no_samples_message(const SampleSet& set, const std::string& format);

// Reads a whole file (throws TraceError naming it when it cannot).
std::string read_text_file(const std::string& path);

// True when `line` is a `perf script` sample header.
bool is_perf_header(std::string_view line);

// "perf" when the text looks like `perf script` output, else "folded".
std::string sniff_sample_format(std::string_view text);

}  // namespace snailtrail::flame
