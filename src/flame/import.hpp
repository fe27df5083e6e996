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
  // event with modifiers). Empty: all.
  std::string event;
};

// `perf script` output. Never throws on content: lines it cannot read are counted in
// out.diagnostics (with the first line of each kind in out.first_line):
//   perf.bad_headers        a sample header without comm, tid and time ("comm tid [cpu]
//   secs.frac:") perf.bad_frames         a frame line that is not "ADDR [SYMBOL[+0xOFF]] [(DSO)]"
//   perf.unknown_symbols    frames without a symbol ("[unknown]"): named by their DSO
//   perf.empty_stacks       samples without any frame line (skipped)
//   perf.other_events       samples of an event other than PerfOptions::event (skipped)
// Frames of the kernel ("[kernel.kallsyms]") get the suffix "_[k]", as flamegraph.pl's.
void parse_perf_script(std::string_view text, const std::string& source, SampleSet& out,
                       const PerfOptions& options = {});

// Reads a whole file (throws TraceError naming it when it cannot).
std::string read_text_file(const std::string& path);

// "perf" when the text looks like `perf script` output, else "folded".
std::string sniff_sample_format(std::string_view text);

}  // namespace snailtrail::flame
