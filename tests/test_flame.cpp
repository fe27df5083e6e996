// Flame graphs (src/flame, docs/FLAME.md): the folded and `perf script` readers, the
// merged tree and its folded/SVG/JSON forms against hand-computed output, and the
// critical weighting against CP computed by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "flame/critical.hpp"
#include "flame/flamegraph.hpp"
#include "flame/import.hpp"
#include "flame/profile_io.hpp"
#include "process_util.hpp"
#include "trace/stream_decoder.hpp"
#include "trace/trace_io.hpp"
#include "trace_builder.hpp"

namespace test_flame {

using namespace snailtrail;
using namespace snailtrail::flame;

namespace {

// One sample of `count` on stack `st` (frames interned in `set`).
void add_sample(SampleSet& set, const std::vector<uint32_t>& st, uint32_t op, SampleKind kind,
                uint64_t count, uint32_t worker, uint32_t thread = kNoId) {
  StackSample s;
  s.stack = set.intern_stack(st);
  s.op = op;
  s.kind = kind;
  s.count = count;
  s.worker = worker;
  s.thread = thread;
  set.samples.push_back(s);
}

std::string folded_of(const SampleSet& set, Mode mode = Mode::on_cpu, TreeOptions to = {}) {
  return to_folded(build_tree(set, mode_weights(set, mode), to));
}

std::string error_of(const std::string& text) {
  SampleSet set;
  try {
    parse_folded(text, "f.folded", set);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

// What `perf record -g` + `perf script` print: a comment header, pid/tid and tid-only
// threads, comm names with spaces and slashes, kernel frames, [unknown] symbols with and
// without a DSO, demangled C++ names with spaces and parentheses, offsets, a trailing
// space after the event.
const char* kPerfScript =
    "# ========\n"
    "# captured on    : Tue Nov 24 04:00:00 2026\n"
    "# ========\n"
    "#\n"
    "snailtrail 41230/41232 [001] 18203.123456:   10101010 cpu-clock:pppH: \n"
    "\t    55d0c1a2b3c4 snailtrail::flow::count_records(unsigned long)+0x24 "
    "(/work/build/bin/snailtrail)\n"
    "\t    55d0c1a2b000 snailtrail::flow::Worker::step()+0x110 (/work/build/bin/snailtrail)\n"
    "\t    7f3a12345678 start_thread+0x2f3 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "Web Content 5123/5130 [000] 18203.133456:   10101010 cpu-clock:pppH: \n"
    "\tffffffff9a0012ab clear_page_erms+0xb ([kernel.kallsyms])\n"
    "\tffffffff9a1234ff handle_mm_fault+0x1df ([kernel.kallsyms])\n"
    "\t    7f3a0000beef [unknown] (/usr/lib/firefox/libxul.so)\n"
    "\t    7f3a0000cafe [unknown] ([unknown])\n"
    "\n"
    "kworker/0:1-eve    17 [000] 18203.143456:   10101010 cpu-clock:pppH: \n"
    "\tffffffff9a0a0a0a worker_thread+0x4a ([kernel.kallsyms])\n"
    "\tffffffff9a0b0b0b kthread+0xe8 ([kernel.kallsyms])\n"
    "\n"
    "snailtrail 41230/41232 [001] 18203.153456:   10101010 cpu-clock:pppH: \n"
    "\t    55d0c1a2b3c4 snailtrail::flow::count_records(unsigned long)+0x30 "
    "(/work/build/bin/snailtrail)\n"
    "\t    55d0c1a2b000 snailtrail::flow::Worker::step()+0x110 (/work/build/bin/snailtrail)\n"
    "\t    7f3a12345678 start_thread+0x2f3 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n";

}  // namespace

TEST(FlameFolded, ParsesMergesAndWritesBack) {
  SampleSet set;
  parse_folded("main;a;b 3\r\n\n  \nmain;a 2\nmain;a;b 4\nmain;c 0\nother 1", "f", set);
  ASSERT_EQ(set.samples.size(), 4u);  // the 0-count line adds no sample
  EXPECT_EQ(set.stack_count(), 3u);   // nor a stack
  EXPECT_EQ(set.samples[0].stack, set.samples[2].stack);
  EXPECT_EQ(set.samples[0].ts, kNoTime);
  // Hand-computed: main;a;b = 3 + 4, main;a self 2, other 1; sorted by stack.
  EXPECT_EQ(folded_of(set), "main;a 2\nmain;a;b 7\nother 1\n");
  FlameTree tree = build_tree(set, mode_weights(set, Mode::on_cpu), {});
  EXPECT_EQ(tree.total(), 10);
  EXPECT_EQ(tree.max_depth, 3u);
}

TEST(FlameFolded, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("a;b 1\n\na;b\n"),
            "f.folded: line 3: expected 'frame;frame;... COUNT', found no count after the stack");
  EXPECT_EQ(error_of("a;b 1\na;b x1\n"),
            "f.folded: line 2: count 'x1' is not a non-negative integer below 2^64");
  EXPECT_EQ(error_of("a;b -1\n"),
            "f.folded: line 1: count '-1' is not a non-negative integer below 2^64");
  EXPECT_EQ(error_of("a;b 1.5\n"),
            "f.folded: line 1: count '1.5' is not a non-negative integer below 2^64");
  EXPECT_EQ(error_of("a;b 99999999999999999999\n"),
            "f.folded: line 1: count '99999999999999999999' is not a non-negative integer below "
            "2^64");
  EXPECT_EQ(error_of("a;;b 1\n"), "f.folded: line 1: empty frame at column 3");
  EXPECT_EQ(error_of("a;b; 1\n"), "f.folded: line 1: empty frame at column 5");
  EXPECT_EQ(error_of("42\n"),
            "f.folded: line 1: expected 'frame;frame;... COUNT', found no count after the stack");
  EXPECT_EQ(error_of("a b c 5\n"), "no error");  // frames may hold spaces
}

TEST(FlamePerf, ReadsWhatPerfScriptPrints) {
  SampleSet set;
  PerfOptions annotated;  // "_[k]" as stackcollapse-perf.pl --kernel
  annotated.annotate_kernel = true;
  parse_perf_script(kPerfScript, "perf.txt", set, annotated);
  ASSERT_EQ(set.samples.size(), 4u);
  EXPECT_EQ(set.samples[0].thread, 41232u);
  EXPECT_EQ(set.samples[0].ts, 18203123456000);
  EXPECT_EQ(set.samples[1].thread, 5130u);
  EXPECT_EQ(set.samples[1].ts, 18203133456000);
  EXPECT_EQ(set.samples[2].thread, 17u);
  EXPECT_EQ(set.thread_names.at(5130), "Web Content");
  EXPECT_EQ(set.thread_names.at(17), "kworker/0:1-eve");
  EXPECT_EQ(set.samples[0].stack, set.samples[3].stack);  // offsets differ, same function
  EXPECT_EQ(folded_of(set),
            "[unknown];[libxul.so];handle_mm_fault_[k];clear_page_erms_[k] 1\n"
            "kthread_[k];worker_thread_[k] 1\n"
            "start_thread;snailtrail::flow::Worker::step();snailtrail::flow::count_records("
            "unsigned long) 2\n");
  TreeOptions to;
  to.thread_root = true;
  EXPECT_EQ(folded_of(set, Mode::on_cpu, to),
            "[thread 17 kworker/0:1-eve];kthread_[k];worker_thread_[k] 1\n"
            "[thread 41232 snailtrail];start_thread;snailtrail::flow::Worker::step();"
            "snailtrail::flow::count_records(unsigned long) 2\n"
            "[thread 5130 Web Content];[unknown];[libxul.so];handle_mm_fault_[k];"
            "clear_page_erms_[k] 1\n");
  ASSERT_EQ(set.diagnostics.size(), 1u);
  EXPECT_EQ(set.diagnostics[0].first, "perf.unknown_symbols");
  EXPECT_EQ(set.diagnostics[0].second, 2u);
  EXPECT_EQ(set.first_line.at("perf.unknown_symbols"), 13u);
  EXPECT_EQ(sniff_sample_format(kPerfScript), "perf");
  EXPECT_EQ(sniff_sample_format("main;a 1\nmain;b 2\n"), "folded");
}

TEST(FlamePerf, CountsBadInputAndFiltersEvents) {
  const std::string text =
      "java 1/2 [000] 1.000001: 1 cycles:u: \n"
      "\t 401000 hot (/bin/java)\n"
      "\tzzzz not-an-address (/bin/java)\n"  // line 3: bad frame
      "\n"
      "garbage without time\n"  // line 5: bad header; its frames are skipped
      "\t 401000 hot (/bin/java)\n"
      "java 1/2 [000] 1.5: sched:sched_switch: prev_comm=java prev_pid=2\n"  // line 7
      "\t 401004 park (/bin/java)\n"
      "\n"
      "java 1/2 [000] 2.000000: 1 cycles:u: \n"  // no frames: empty stack
      "\n"
      "\t 401000 orphan (/bin/java)\n"  // a frame line outside any sample
      "java 1/2 [000] 3.000000: 1 cycles:u: \n"
      "\t 40100";  // truncated, last line without newline: still a frame
  SampleSet all;
  parse_perf_script(text, "p", all);
  ASSERT_EQ(all.samples.size(), 3u);
  EXPECT_EQ(all.samples[1].ts, 1'500'000'000);
  auto count = [](const SampleSet& s, const std::string& k) -> uint64_t {
    for (auto& [kind, n] : s.diagnostics)
      if (kind == k) return n;
    return 0;
  };
  EXPECT_EQ(count(all, "perf.bad_frames"), 2u);  // line 3 and the orphan
  EXPECT_EQ(all.first_line.at("perf.bad_frames"), 3u);
  EXPECT_EQ(count(all, "perf.bad_headers"), 1u);
  EXPECT_EQ(all.first_line.at("perf.bad_headers"), 5u);
  EXPECT_EQ(count(all, "perf.empty_stacks"), 1u);
  EXPECT_EQ(count(all, "perf.unknown_symbols"), 1u);  // "40100" alone: no symbol, no DSO
  SampleSet cycles;
  parse_perf_script(text, "p", cycles, PerfOptions{"cycles"});
  EXPECT_EQ(cycles.samples.size(), 2u);
  EXPECT_EQ(count(cycles, "perf.other_events"), 1u);
  EXPECT_EQ(cycles.first_line.at("perf.other_events"), 7u);
  EXPECT_EQ(folded_of(cycles), "[unknown] 1\nhot 1\n");
}

TEST(FlamePerf, NeverCrashesOnMangledInput) {
  // Every prefix and single-byte corruption of the fixture parses without throwing.
  std::string base = kPerfScript;
  for (size_t n = 0; n <= base.size(); n += 7) {
    SampleSet s;
    EXPECT_NO_THROW(parse_perf_script(std::string_view(base).substr(0, n), "p", s));
  }
  for (size_t i = 0; i < base.size(); i += 5)
    for (char c : {'\0', '\n', ' ', ':', '/', '(', ')', '[', '+', '\xff'}) {
      std::string m = base;
      m[i] = c;
      SampleSet s;
      EXPECT_NO_THROW(parse_perf_script(m, "p", s));
    }
}

TEST(FlameTree, OperatorRootsFiltersAndModes) {
  SampleSet set;
  uint32_t f = set.intern_frame("f"), g = set.intern_frame("g"), h = set.intern_frame("h");
  set.operator_names[1] = "count";
  auto add = [&](std::vector<uint32_t> st, uint32_t op, SampleKind k, uint64_t c, uint32_t w) {
    add_sample(set, st, op, k, c, w);
  };
  add({f, g}, 1, SampleKind::on_cpu, 1, 0);
  add({f, g}, 1, SampleKind::on_cpu, 1, 1);
  add({f, h}, 2, SampleKind::on_cpu, 1, 0);
  add({f}, kNoId, SampleKind::on_cpu, 1, 0);
  add({f, h}, 1, SampleKind::off_cpu, 5000, 0);
  EXPECT_EQ(folded_of(set), "[no operator];f 1\n[op 2];f;h 1\n[op count];f;g 2\n");
  EXPECT_EQ(folded_of(set, Mode::off_cpu), "[op count];f;h 5000\n");
  TreeOptions only;
  only.operator_id = 1;
  only.worker = 0;
  EXPECT_EQ(folded_of(set, Mode::on_cpu, only), "[op count];f;g 1\n");
  EXPECT_THROW(mode_weights(set, Mode::mixed), std::invalid_argument);
  set.period_ns = 10'000'000;  // 100 Hz
  EXPECT_EQ(folded_of(set, Mode::mixed),
            "[no operator];f 10000000\n[op 2];f;h 10000000\n[op count];f;g 20000000\n"
            "[op count];f;h 5000\n");
}

TEST(FlameTree, ShortNames) {
  EXPECT_EQ(short_frame_name("ns::A<int, B<c>>::f(unsigned long) const"), "ns::A<...>::f");
  EXPECT_EQ(short_frame_name("snailtrail::flow::Worker::step()"), "snailtrail::flow::Worker::step");
  EXPECT_EQ(short_frame_name("std::ostream::operator<<(int)"), "std::ostream::operator<<");
  EXPECT_EQ(short_frame_name("f::{lambda(unsigned int)#1}::operator()(unsigned int) const"),
            "f::{lambda(unsigned int)#1}::operator()");
  EXPECT_EQ(short_frame_name("a::operator->() &&"), "a::operator->");
  EXPECT_EQ(short_frame_name("snailtrail::(anonymous namespace)::drive(W&)"),
            "snailtrail::(anonymous namespace)::drive");
  EXPECT_EQ(short_frame_name("clear_page_erms_[k]"), "clear_page_erms_[k]");
  EXPECT_EQ(short_frame_name("[unknown]"), "[unknown]");
  EXPECT_EQ(short_frame_name("a<b"), "a<b");  // unbalanced: unchanged
  EXPECT_EQ(short_frame_name("(x)"), "(x)");
}

TEST(FlameRender, SvgIsSelfContainedAndJsonSumsUp) {
  SampleSet set;
  parse_folded("main;a<b>&\"c\" 3\nmain;d 1\n", "f", set);
  std::vector<double> w = mode_weights(set, Mode::on_cpu);
  FlameTree tree = build_tree(set, w, {});
  std::string svg = to_svg(tree, {});
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);  // nothing loaded from elsewhere
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  size_t frames = 0;
  for (size_t p = svg.find("<g class=\"f\""); p != std::string::npos;
       p = svg.find("<g class=\"f\"", p + 1))
    ++frames;
  EXPECT_EQ(frames, 4u);  // all, main, a<b>&"c", d
  std::string json = to_json(tree, set, w, Mode::on_cpu);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(double(doc["total"]), 4.0);
  EXPECT_EQ(std::string_view(doc["mode"]), "on-cpu");
  simdjson::dom::element main = doc["root"]["children"].at(0);
  EXPECT_EQ(std::string_view(main["name"]), "main");
  EXPECT_EQ(double(main["value"]), 4.0);
  EXPECT_EQ(std::string_view(main["children"].at(0)["name"]), "a<b>&\"c\"");
  EXPECT_EQ(double(main["children"].at(0)["value"]), 3.0);
  EXPECT_EQ(double(main["children"].at(1)["self"]), 1.0);
}

namespace {

// Worker 0: A [0, 200) then D [200, 300); worker 1: B [0, 100), waiting [100, 200), C
// [200, 300); a message from worker 0 at 200 to worker 1 at 200. Operators A=1 D=2 B=3 C=4.
Trace cp_trace() {
  snailtrail::testing::TraceBuilder b;
  b.activity(0, ActivityType::processing, 0, 200, 1)
      .activity(0, ActivityType::processing, 200, 300, 2)
      .activity(1, ActivityType::processing, 0, 100, 3)
      .activity(1, ActivityType::waiting, 100, 200)
      .activity(1, ActivityType::processing, 200, 300, 4)
      .message(0, 200, 1, 200, 7);
  return b.build();
}

void add_sample(SampleSet& set, uint32_t worker, int64_t ts, SampleKind k = SampleKind::on_cpu) {
  StackSample s;
  s.stack = set.intern_stack({set.intern_frame(fmt::format("w{}@{}", worker, ts))});
  s.worker = worker;
  s.ts = ts;
  s.kind = k;
  set.samples.push_back(s);
}

}  // namespace

TEST(FlameCritical, WeightsAreCriticalTimeSplitOverSamplesOneWindow) {
  // By hand, one window [0, 300]: paths from the nodes at 0 to those at 300 avoid the
  // waiting edge: A-D and A-msg-C, N = 2. CP_A = 2*200/(2*300), CP_D = CP_C = 100/600,
  // CP_B = 0 (B leads only into waiting). Critical time = CP x 300: A 200, D 50, C 50.
  SampleSet set;
  add_sample(set, 0, 50);   // A: 200 / 2
  add_sample(set, 0, 150);  // A
  add_sample(set, 0, 250);  // D: 50
  add_sample(set, 1, 50);   // B: 0
  add_sample(set, 1, 150);  // waiting: 0
  add_sample(set, 1, 210);  // C: 50 / 2
  add_sample(set, 1, 220);  // C
  add_sample(set, 0, 300);  // at the last node: no edge
  add_sample(set, 0, 100, SampleKind::off_cpu);
  StackSample nowhere;
  nowhere.ts = 10;
  set.samples.push_back(nowhere);  // no worker
  CriticalResult r = critical_weights(cp_trace(), set, {});
  std::vector<double> expected = {100, 100, 50, 0, 0, 25, 25, 0, 0, 0};
  ASSERT_EQ(r.weight.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(r.weight[i], expected[i], 1e-9) << i;
  EXPECT_NEAR(r.timeline_critical_ns, 300, 1e-9);
  EXPECT_NEAR(r.attributed_ns, 300, 1e-9);
  EXPECT_EQ(r.samples_in_edges, 7u);
  EXPECT_EQ(r.samples_outside, 1u);
  EXPECT_EQ(r.samples_unplaced, 1u);
  EXPECT_EQ(r.windows, 1u);
  // Operators learnt from the activity trace.
  EXPECT_EQ(set.samples[0].op, 1u);
  EXPECT_EQ(set.samples[2].op, 2u);
  EXPECT_EQ(set.samples[3].op, 3u);
  EXPECT_EQ(set.samples[4].op, kNoId);  // waiting has no operator
  EXPECT_EQ(set.samples[4].activity, static_cast<uint8_t>(ActivityType::waiting));
  EXPECT_EQ(set.samples[5].op, 4u);
  EXPECT_EQ(to_folded(build_tree(set, r.weight, {})),
            "[op 1];w0@150 100\n[op 1];w0@50 100\n[op 2];w0@250 50\n[op 4];w1@210 25\n"
            "[op 4];w1@220 25\n");
}

TEST(FlameCritical, WeightsPerWindow) {
  // Windows of 150: [0, 150): only A reaches the end (B runs into waiting): CP_A = 1,
  // 150 ns. [150, 300]: paths from the nodes at 150: A-D, A-msg-C; N = 2, edges A (50 ns
  // left), D and C (100 ns) each have CP 1/3: 50 ns each.
  SampleSet set;
  add_sample(set, 0, 50);    // window 1, A: 150
  add_sample(set, 0, 150);   // window 2, A: 50
  add_sample(set, 0, 250);   // D: 50
  add_sample(set, 1, 210);   // C: 25
  add_sample(set, 1, 220);   // C: 25
  add_sample(set, 1, 50);    // B: 0
  set.samples[4].count = 3;  // 3 periods of CPU: C's 50 ns go 1:3 to the two samples
  AnalysisOptions o;
  o.windows.width_ns = 150;
  CriticalResult r = critical_weights(cp_trace(), set, o);
  std::vector<double> expected = {150, 50, 50, 12.5, 37.5, 0};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(r.weight[i], expected[i], 1e-9) << i;
  EXPECT_EQ(r.windows, 2u);
  EXPECT_NEAR(r.timeline_critical_ns, 300, 1e-9);
}

namespace {

// "a;b;c 12" lines as stack -> weight (the folded writer: the oracle of speedscope's).
std::map<std::string, double> folded_lines(const std::string& folded) {
  std::map<std::string, double> m;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.rfind(' ');
    m[line.substr(0, sp)] += std::stod(line.substr(sp + 1));
  }
  return m;
}

struct Speedscope {
  std::vector<std::string> frames;
  // Per profile: name, unit, endValue, stack ("a;b;c") -> summed weight.
  struct Profile {
    std::string name, unit;
    double end = 0, sum = 0;
    std::map<std::string, double> stacks;
  };
  std::vector<Profile> profiles;
};

// speedscope's JSON read back with simdjson; every frame index checked in range.
Speedscope parse_speedscope(const std::string& json) {
  Speedscope r;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["$schema"]), "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(std::string_view(doc["exporter"]), "snailtrail flamegraph");
  for (simdjson::dom::element f : doc["shared"]["frames"].get_array())
    r.frames.emplace_back(std::string_view(f["name"]));
  for (simdjson::dom::element p : doc["profiles"].get_array()) {
    Speedscope::Profile pr;
    EXPECT_EQ(std::string_view(p["type"]), "sampled");
    EXPECT_EQ(double(p["startValue"]), 0.0);
    pr.name = std::string_view(p["name"]);
    pr.unit = std::string_view(p["unit"]);
    pr.end = double(p["endValue"]);
    simdjson::dom::array samples = p["samples"], weights = p["weights"];
    EXPECT_EQ(samples.size(), weights.size());
    for (size_t i = 0; i < samples.size() && i < weights.size(); ++i) {
      std::string stack;
      for (simdjson::dom::element f : samples.at(i).get_array()) {
        const uint64_t fi = uint64_t(f);
        EXPECT_LT(fi, r.frames.size());
        if (fi >= r.frames.size()) continue;
        (stack.empty() ? stack : stack += ';') += r.frames[fi];
      }
      const double w = double(weights.at(i));
      EXPECT_GT(w, 0.0);
      pr.stacks[stack] += w;
      pr.sum += w;
    }
    r.profiles.push_back(std::move(pr));
  }
  return r;
}

}  // namespace

TEST(FlameSpeedscope, WeightsPerStackAreTheFoldedOnes) {
  // Two workers, a thread without worker, operators, on- and off-CPU samples.
  SampleSet set;
  uint32_t f = set.intern_frame("f"), g = set.intern_frame("g"), h = set.intern_frame("h");
  set.intern_frame("unused");
  set.operator_names[1] = "count";
  set.thread_names[77] = "io thread";
  auto add = [&](std::vector<uint32_t> st, uint32_t op, SampleKind k, uint64_t c, uint32_t w,
                 uint32_t thread = kNoId) { add_sample(set, st, op, k, c, w, thread); };
  add({f, g}, 1, SampleKind::on_cpu, 1, 0);
  add({f, g}, 1, SampleKind::on_cpu, 3, 1);
  add({f, h}, 2, SampleKind::on_cpu, 1, 0);
  add({f}, kNoId, SampleKind::on_cpu, 2, kNoId, 77);
  add({f, h}, 1, SampleKind::off_cpu, 5000, 0);
  add({g}, 1, SampleKind::off_cpu, 700, 1);
  for (Mode mode : {Mode::on_cpu, Mode::off_cpu}) {
    SCOPED_TRACE(mode_name(mode));
    const std::vector<double> w = mode_weights(set, mode);
    SpeedscopeOptions so;
    so.name = "test";
    so.worker_names = {{1, "w-one"}};
    const Speedscope ss = parse_speedscope(to_speedscope(set, w, {}, mode, so));
    ASSERT_FALSE(ss.profiles.empty());
    // The first profile is the folded output, stack by stack.
    EXPECT_EQ(ss.profiles[0].name, fmt::format("all, {}", mode_name(mode)));
    EXPECT_EQ(ss.profiles[0].unit, mode == Mode::on_cpu ? "none" : "nanoseconds");
    EXPECT_EQ(ss.profiles[0].stacks, folded_lines(to_folded(set, w, {})));
    EXPECT_EQ(ss.profiles[0].end, ss.profiles[0].sum);
    // Then one per worker or thread, each its filtered folded output.
    std::vector<std::pair<std::string, std::map<std::string, double>>> want;
    for (uint32_t worker : {0u, 1u, 77u}) {
      TreeOptions only;
      only.worker = worker;
      auto lines = folded_lines(to_folded(set, w, only));
      if (!lines.empty())
        want.emplace_back(worker == 77  ? "thread 77 io thread"
                          : worker == 1 ? "w-one"
                                        : "worker 0",
                          lines);
    }
    ASSERT_EQ(ss.profiles.size(), 1 + want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(ss.profiles[1 + i].name, want[i].first + ", " + mode_name(mode));
      EXPECT_EQ(ss.profiles[1 + i].stacks, want[i].second) << want[i].first;
      EXPECT_EQ(ss.profiles[1 + i].end, ss.profiles[1 + i].sum);
    }
    // Only frames of written stacks are in the table ("unused" is not), each once.
    EXPECT_EQ(std::count(ss.frames.begin(), ss.frames.end(), "unused"), 0);
    std::vector<std::string> sorted = ss.frames;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
  // By hand, on-CPU: [op count];f;g weighs 1 on worker 0, 3 on worker 1, 4 in all.
  const Speedscope ss =
      parse_speedscope(to_speedscope(set, mode_weights(set, Mode::on_cpu), {}, Mode::on_cpu, {}));
  ASSERT_EQ(ss.profiles.size(), 4u);
  EXPECT_EQ(ss.profiles[0].stacks.at("[op count];f;g"), 4.0);
  EXPECT_EQ(ss.profiles[1].stacks.at("[op count];f;g"), 1.0);
  EXPECT_EQ(ss.profiles[2].stacks.at("[op count];f;g"), 3.0);
  EXPECT_EQ(ss.profiles[3].stacks.at("[no operator];f"), 2.0);
  EXPECT_EQ(ss.profiles[0].end, 7.0);
}

TEST(FlameSpeedscope, OneSourceNamesAndEmptyInput) {
  SampleSet set;
  // A frame name that needs escaping; one source (no worker or thread): only "all".
  parse_folded("main;a\"b\\c 3\nmain;d 1\n", "f", set);
  const std::vector<double> w = mode_weights(set, Mode::on_cpu);
  SpeedscopeOptions so;
  so.name = "t\"itle";
  const std::string json = to_speedscope(set, w, {}, Mode::on_cpu, so);
  const Speedscope ss = parse_speedscope(json);
  ASSERT_EQ(ss.profiles.size(), 1u);
  EXPECT_EQ(ss.profiles[0].stacks, folded_lines(to_folded(set, w, {})));
  EXPECT_EQ(ss.profiles[0].stacks.at("main;a\"b\\c"), 3.0);
  simdjson::dom::parser parser;
  EXPECT_EQ(std::string_view(parser.parse(json)["name"]), "t\"itle");
  // Nothing weighs anything: one empty profile, still a valid file.
  const Speedscope empty = parse_speedscope(
      to_speedscope(set, std::vector<double>(set.samples.size(), 0.0), {}, Mode::on_cpu, {}));
  ASSERT_EQ(empty.profiles.size(), 1u);
  EXPECT_TRUE(empty.profiles[0].stacks.empty());
  EXPECT_TRUE(empty.frames.empty());
}

class FlameCli : public snailtrail::testing::TempDirTest {
 protected:
  FlameCli() : TempDirTest("flame") {}
  void write(const std::string& name, const std::string& text) {
    std::ofstream(path(name), std::ios::binary) << text;
  }
};

TEST_F(FlameCli, FoldedSvgJsonAndCritical) {
  write("perf.txt", kPerfScript);
  auto r = snailtrail::testing::run_binary("flamegraph " + path("perf.txt").string() + " -q");
  EXPECT_EQ(r.code, 0) << r.out;
  // As stackcollapse-perf.pl (issue 34): comm as the root frame, spaces as '_'.
  EXPECT_EQ(r.out,
            "Web_Content;[unknown];[libxul.so];handle_mm_fault;clear_page_erms 1\n"
            "kworker/0:1-eve;kthread;worker_thread 1\n"
            "snailtrail;start_thread;snailtrail::flow::Worker::step;"
            "snailtrail::flow::count_records 2\n");
  r = snailtrail::testing::run_binary("flamegraph " + path("perf.txt").string() +
                                      " -q --full-names --thread-root --no-process-root");
  EXPECT_NE(r.out.find("[thread 41232 snailtrail];start_thread;snailtrail::flow::Worker::step();"
                       "snailtrail::flow::count_records(unsigned long) 2\n"),
            std::string::npos)
      << r.out;
  r = snailtrail::testing::run_binary("flamegraph " + path("perf.txt").string() +
                                      " --kernel --format svg -o " + path("g.svg").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + path("perf.txt").string() +
                       ": 2 perf.unknown_symbols (first at line 13)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(snailtrail::testing::slurp(path("g.svg")).find("clear_page_erms_[k]"),
            std::string::npos);

  // Folded stacks and the critical mode with an activity trace, threads by name.
  write("s.perf",
        "worker-0 9/10 [000] 0.000000050: cpu-clock: \n\t 1 a (/x)\n\n"
        "worker-0 9/10 [000] 0.000000250: cpu-clock: \n\t 1 d (/x)\n\n"
        "worker-1 9/11 [000] 0.000000210: cpu-clock: \n\t 1 c (/x)\n\n"
        "other 9/12 [000] 0.000000210: cpu-clock: \n\t 1 c (/x)\n");
  Trace named = cp_trace();
  named.worker_names = {{0, "worker-0"}, {1, "worker-1"}};
  named.operator_names = {{1, "A"}, {2, "D"}, {4, "C"}};
  write_trace(named, path("t.jsonl").string());
  r = snailtrail::testing::run_binary("flamegraph " + path("s.perf").string() + " --trace " +
                                      path("t.jsonl").string() +
                                      " --mode critical --no-process-root");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("critical: 300 ns of 300 ns critical time on timelines carried by 3 "
                       "samples in 1 windows; 0 samples outside any activity, 1 without worker"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[op A];a 200\n[op C];c 50\n[op D];d 50\n"), std::string::npos) << r.out;
  r = snailtrail::testing::run_binary("flamegraph " + path("s.perf").string() + " --trace " +
                                      path("t.jsonl").string() +
                                      " --thread-worker 12=1 --mode critical -q --no-process-root");
  EXPECT_EQ(r.out, "[op A];a 200\n[op C];c 50\n[op D];d 50\n");  // 11 and 12 split C's 50
  // speedscope: the same critical weights, one profile for all, one per worker.
  r = snailtrail::testing::run_binary("flamegraph " + path("s.perf").string() + " --trace " +
                                      path("t.jsonl").string() +
                                      " --mode critical -q --no-process-root --format speedscope");
  EXPECT_EQ(r.code, 0) << r.out;
  {
    const Speedscope ss = parse_speedscope(r.out);
    ASSERT_EQ(ss.profiles.size(), 3u) << r.out;  // all, worker 0, worker 1 (12: no worker)
    EXPECT_EQ(ss.profiles[0].stacks, folded_lines("[op A];a 200\n[op C];c 50\n[op D];d 50\n"));
    EXPECT_EQ(ss.profiles[0].unit, "nanoseconds");
    EXPECT_EQ(ss.profiles[1].name, "worker-0, critical");
    EXPECT_EQ(ss.profiles[2].stacks, folded_lines("[op C];c 50\n"));
  }
  r = snailtrail::testing::run_binary("flamegraph " + path("s.perf").string() + " --format speed");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("not folded, svg, json or speedscope"), std::string::npos) << r.out;
  r = snailtrail::testing::run_binary("flamegraph " + path("s.perf").string() + " --mode critical");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--mode critical needs an activity trace"), std::string::npos) << r.out;
  r = snailtrail::testing::run_binary("flamegraph " + path("s.perf").string() + " --mode warm");
  EXPECT_EQ(r.code, 2);
  write("bad.folded", "a;b 1\na;b\n");
  r = snailtrail::testing::run_binary("flamegraph " + path("bad.folded").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad.folded: line 2: expected"), std::string::npos) << r.out;
}

namespace {

SampleSet profile_fixture() {
  SampleSet set;
  set.period_ns = 10'101'010;
  auto add = [&](std::vector<std::string> names, uint32_t w, int64_t ts, SampleKind k, uint64_t c,
                 uint8_t act) {
    std::vector<uint32_t> ids;
    for (auto& n : names) ids.push_back(set.intern_frame(n));
    StackSample s;
    s.stack = set.intern_stack(ids);
    s.worker = w;
    s.ts = ts;
    s.kind = k;
    s.count = c;
    s.activity = act;
    set.samples.push_back(s);
  };
  add({"start_thread", "drive", "count(unsigned long)"}, 0, 50, SampleKind::on_cpu, 1, 0xff);
  add({"start_thread", "drive", "hash"}, 1, 210, SampleKind::on_cpu, 1, 0xff);
  add({"start_thread", "drive"}, 1, 100, SampleKind::off_cpu, 100,
      static_cast<uint8_t>(ActivityType::waiting));
  return set;
}

}  // namespace

TEST(FlameProfile, RoundTripsThroughSnailAsVersion2) {
  Trace t = cp_trace();
  t.worker_names = {{0, "worker-0"}, {1, "worker-1"}};
  EXPECT_EQ(to_snail(t)[8], 2);  // every file is version 2 (block index), profile or not
  SampleSet set = profile_fixture();
  samples_to_trace(set, t);
  ASSERT_EQ(t.profile_blocks.size(), 1u);
  EXPECT_EQ(t.profile_blocks[0].count, 1u + 4u + 3u);  // period, 4 frames, 3 samples
  std::string bytes = to_snail(t);
  EXPECT_EQ(bytes[8], 2);
  Trace back =
      parse_snail({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "p.snail");
  EXPECT_EQ(back.events.size(), t.events.size());
  SampleSet got;
  samples_from_trace(back, got);
  EXPECT_EQ(got.period_ns, 10'101'010);
  ASSERT_EQ(got.samples.size(), 3u);
  EXPECT_EQ(got.samples[2].kind, SampleKind::off_cpu);
  EXPECT_EQ(got.samples[2].count, 100u);
  EXPECT_EQ(got.samples[2].activity, static_cast<uint8_t>(ActivityType::waiting));
  EXPECT_EQ(got.samples[1].worker, 1u);
  EXPECT_EQ(got.samples[1].ts, 210);
  EXPECT_EQ(folded_of(got, Mode::mixed), folded_of(set, Mode::mixed));
  EXPECT_EQ(folded_of(got, Mode::mixed),
            "start_thread;drive;[off-cpu waiting] 100\n"
            "start_thread;drive;count(unsigned long) 10101010\n"
            "start_thread;drive;hash 10101010\n");

  // Split into small blocks: frames defined in one block serve samples of the next.
  samples_to_trace(set, t, 40);
  EXPECT_GT(t.profile_blocks.size(), 3u);
  bytes = to_snail(t);
  back = parse_snail({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "p.snail");
  SampleSet split;
  samples_from_trace(back, split);
  EXPECT_EQ(folded_of(split, Mode::mixed), folded_of(set, Mode::mixed));
  // A profile cannot go to JSONL.
  EXPECT_THROW(write_trace(back, "/tmp/never-written.jsonl"), TraceError);
}

TEST(FlameProfile, StreamsSkipTheProfile) {
  Trace t = cp_trace();
  samples_to_trace(profile_fixture(), t);
  const std::string bytes = to_snail(t);
  StreamDecoder d("tcp");
  Trace out;
  for (size_t pos = 0; pos < bytes.size(); pos += 7) {  // in pieces, as from a socket
    const std::string piece = bytes.substr(pos, 7);
    d.feed({reinterpret_cast<const uint8_t*>(piece.data()), piece.size()}, out);
  }
  d.finish(out);
  EXPECT_FALSE(d.broken()) << d.broken_reason();
  EXPECT_EQ(d.stats().bad_blocks, 0u);
  EXPECT_EQ(out.events.size(), t.events.size());
  EXPECT_TRUE(out.profile_blocks.empty());
}

TEST(FlameProfile, BadProfilesAreRefusedWithTheirOffset) {
  Trace t = cp_trace();
  samples_to_trace(profile_fixture(), t);
  const std::string good = to_snail(t);
  auto parse = [](std::string b) -> std::string {
    try {
      Trace tr = parse_snail({reinterpret_cast<const uint8_t*>(b.data()), b.size()}, "p.snail");
      SampleSet s;
      samples_from_trace(tr, s);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "ok";
  };
  EXPECT_EQ(parse(good), "ok");
  std::string v1 = good;
  v1[8] = 1;  // a version 1 file may not hold profile blocks
  EXPECT_EQ(parse(v1), "p.snail: byte 16: profile block (kind 4) in a version 1 file");
  std::string v3 = good;
  v3[8] = 3;
  EXPECT_EQ(parse(v3), "p.snail: byte 8: unsupported version 3 (expected 1 or 2)");
  // The profile block is the first block (no names): its payload starts at byte 32 with
  // the period entry.
  std::string kind = good;
  kind[32] = 9;
  EXPECT_EQ(
      parse(kind),
      "p.snail: byte 32: profile: unknown entry kind 9 (expected 0 frame, 1 sample, 2 period)");
  std::string frame = good;
  frame[48 + 4] = 5;  // the first frame entry's id
  EXPECT_EQ(parse(frame), "p.snail: byte 48: profile: frame id 5 out of order (expected 0)");
  // Every single-byte corruption of the profile block is refused or read, never a crash.
  for (size_t i = 16; i < 16 + 16 + t.profile_blocks[0].bytes.size(); ++i)
    for (char c : {'\x00', '\x01', '\x7f', '\xff'}) {
      std::string m = good;
      m[i] = c;
      (void)parse(m);
    }
  Trace none = cp_trace();
  SampleSet s;
  EXPECT_THROW(samples_from_trace(none, s), std::invalid_argument);
}

TEST_F(FlameCli, RunProfileThenFlamegraph) {
  const std::string trace = path("wc.snail").string();
  auto r = snailtrail::testing::run_binary(
      "run wordcount --workers 2 --duration 1500ms --skew 0.5 --keys 1000 "
      "--profile --profile-hz 997 --trace " +
      trace);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 0 samples dropped"), std::string::npos) << r.out;
  Trace t = read_trace(trace);
  SampleSet set;
  samples_from_trace(t, set);
  size_t on = 0, off = 0;
  for (const StackSample& s : set.samples) (s.kind == SampleKind::on_cpu ? on : off) += 1;
  // CPU-time samples: as many as the workers got CPU (few on a loaded machine).
  EXPECT_GT(on, 5u);
  EXPECT_GT(off, 0u);
  EXPECT_EQ(set.period_ns, static_cast<int64_t>(1e9 / 997));
  // Every sample lies within the run's trace and names a worker of it.
  for (const StackSample& s : set.samples) {
    EXPECT_LT(s.worker, 2u);
    EXPECT_GE(s.ts, 0);
  }
  r = snailtrail::testing::run_binary("flamegraph " + trace + " -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[op count];"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("[op split];"), std::string::npos) << r.out.substr(0, 2000);
  r = snailtrail::testing::run_binary("flamegraph " + trace + " --mode off-cpu -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("snailtrail::flow::"), std::string::npos) << r.out.substr(0, 2000);
  r = snailtrail::testing::run_binary("flamegraph " + trace + " --mode critical --format json -o " +
                                      path("c.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = snailtrail::testing::run_binary("run keycount --duration 100ms --profile --trace " +
                                      path("k.jsonl").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--profile needs --trace FILE.snail"), std::string::npos) << r.out;
}

}  // namespace test_flame
