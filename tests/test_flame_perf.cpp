// `perf script` text as the perf versions write it, read like FlameGraph's
// stackcollapse-perf.pl reads it (issue 34, docs/FLAME.md): headers without time, frames
// in column 0, per-sample comm across an exec, kernel DSOs, period weights, the process
// frame, and clear errors for empty or binary input. Plus the flame tree's pruning and the
// tree-less folded writer against a brute-force oracle.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "flame/flamegraph.hpp"
#include "flame/import.hpp"
#include "process_util.hpp"

namespace test_flame_perf {

using namespace snailtrail;
using namespace snailtrail::flame;

namespace {

// perf 3.x without -F: no time, no CPU ("java 3244 cpu-clock:"), tab-indented frames.
const char* kOldPerf =
    "java 3244 cpu-clock: \n"
    "\t    7f1c2d3e4f50 Interpreter+0x1a (/usr/lib/jvm/java-17/lib/server/libjvm.so)\n"
    "\t    7f1c2d3e4000 JavaMain (/usr/lib/jvm/java-17/lib/libjli.so)\n"
    "\t    7f1c2d300000 start_thread (/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "java 3244 cpu-clock: \n"
    "\t    7f1c2d3e4f60 Interpreter+0x2a (/usr/lib/jvm/java-17/lib/server/libjvm.so)\n"
    "\t    7f1c2d3e4000 JavaMain (/usr/lib/jvm/java-17/lib/libjli.so)\n"
    "\t    7f1c2d300000 start_thread (/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "swapper 0 cpu-clock: \n"
    "\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])\n"
    "\tffffffff8101c6a3 default_idle ([kernel.kallsyms])\n"
    "\n";

// A perf whose frame lines start in column 0, with pid/tid, CPU and time.
const char* kUnindented =
    "app 100/101 [002] 5.000100: cpu-clock:pppH:\n"
    "4005d0 compute+0x10 (/usr/bin/app)\n"
    "400400 main+0x20 (/usr/bin/app)\n"
    "\n"
    "app 100/101 [002] 5.000200: cpu-clock:pppH:\n"
    "4005d4 compute+0x14 (/usr/bin/app)\n"
    "400400 main+0x20 (/usr/bin/app)\n"
    "\n";

class FlamePerfCli : public snailtrail::testing::TempDirTest {
 protected:
  FlamePerfCli() : TempDirTest("flameperf") {}
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name).string();
  }
  snailtrail::testing::CommandResult flame(const std::string& file, const std::string& args) {
    return snailtrail::testing::run_binary("flamegraph " + file + " " + args);
  }
};

uint64_t problems(const SampleSet& s, const std::string& kind) {
  for (auto& [k, n] : s.diagnostics)
    if (k == kind) return n;
  return 0;
}

}  // namespace

TEST(FlamePerfVersions, HeadersWithoutTimeAreRead) {
  SampleSet set;
  parse_perf_script(kOldPerf, "old.txt", set);
  ASSERT_EQ(set.samples.size(), 3u);
  EXPECT_TRUE(set.diagnostics.empty());
  EXPECT_EQ(set.samples[0].ts, kNoTime);
  EXPECT_EQ(set.samples[0].thread, 3244u);
  EXPECT_EQ(set.samples[0].pid, kNoId);
  EXPECT_EQ(set.comm(set.samples[0].comm), "java");
  EXPECT_EQ(set.samples[0].stack, set.samples[1].stack);
  EXPECT_EQ(set.comm(set.samples[2].comm), "swapper");
  EXPECT_EQ(sniff_sample_format(kOldPerf), "perf");
  // Period without time ("java 3244 250000 cycles:u:") and a CPU without time.
  SampleSet p;
  PerfOptions o;
  o.weight_period = true;
  parse_perf_script(
      "java 3244 250000 cycles:u: \n\t 1 f (/x)\n\njava 3244 [001] cycles:u: \n\t 1 f (/x)\n", "p",
      p, o);
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[0].count, 250000u);
  EXPECT_EQ(p.samples[1].count, 1u);  // no period printed
  EXPECT_EQ(problems(p, "perf.no_period"), 1u);
}

TEST_F(FlamePerfCli, OldPerfWithoutTimeGivesAFlameGraph) {
  const auto r = flame(write("old.txt", kOldPerf), "-q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "java;start_thread;JavaMain;Interpreter 2\n"
            "swapper;default_idle;native_safe_halt 1\n");
}

TEST_F(FlamePerfCli, UnindentedFramesAreSniffedAsPerf) {
  EXPECT_EQ(sniff_sample_format(kUnindented), "perf");
  SampleSet set;
  parse_perf_script(kUnindented, "u", set);
  ASSERT_EQ(set.samples.size(), 2u);
  EXPECT_TRUE(set.diagnostics.empty());
  const auto r = flame(write("u.txt", kUnindented), "-q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "app;main;compute 2\n");
}

TEST_F(FlamePerfCli, EachSampleKeepsItsOwnCommAcrossAnExec) {
  // Thread 700 runs bash, then execs make: the bash samples stay bash's.
  const std::string text =
      "bash 700/700 [000] 1.000000: cpu-clock: \n\t 10 readline (/usr/bin/bash)\n\n"
      "bash 700/700 [000] 1.100000: cpu-clock: \n\t 10 readline (/usr/bin/bash)\n\n"
      "make 700/700 [000] 2.000000: cpu-clock: \n\t 20 main (/usr/bin/make)\n\n";
  const std::string f = write("exec.txt", text);
  auto r = flame(f, "-q");
  EXPECT_EQ(r.out, "bash;readline 2\nmake;main 1\n");
  r = flame(f, "-q --no-process-root --thread-root");
  EXPECT_EQ(r.out, "[thread 700 bash];readline 2\n[thread 700 make];main 1\n");
}

TEST_F(FlamePerfCli, KernelFramesByTheirDso) {
  const std::string text =
      "nft 9/9 [000] 1.0: cpu-clock: \n"
      "\tffffffffc0a01234 nft_do_chain+0x44 ([nf_tables])\n"
      "\tffffffff81a00000 tcp_sendmsg+0x1f (/usr/lib/debug/lib/modules/6.1.0-13-amd64/vmlinux)\n"
      "\tffffffff81b00000 do_syscall_64+0x5c ([kernel.kallsyms])\n"
      "\t    7ffd1234a000 __vdso_clock_gettime+0x9 ([vdso])\n"
      "\t    7f0000001000 send (/lib/x86_64-linux-gnu/libc.so.6)\n\n";
  const std::string f = write("k.txt", text);
  auto r = flame(f, "-q --kernel");
  EXPECT_EQ(r.out,
            "nft;send;__vdso_clock_gettime;do_syscall_64_[k];tcp_sendmsg_[k];nft_do_chain_[k] 1\n");
  r = flame(f, "-q");  // stackcollapse-perf.pl without --kernel: no annotation
  EXPECT_EQ(r.out, "nft;send;__vdso_clock_gettime;do_syscall_64;tcp_sendmsg;nft_do_chain 1\n");
}

TEST_F(FlamePerfCli, WeightByPeriod) {
  const std::string text =
      "java 3244/3250 [001] 1234.567890:     250000 cycles:u: \n"
      "\t    7f00 hot (/app/libhot.so)\n\n"
      "java 3244/3250 [001] 1234.567990:     750000 cycles:u: \n"
      "\t    7f00 hot (/app/libhot.so)\n\n"
      "java 3244/3250 [001] 1234.568990:     100000 cycles:u: \n"
      "\t    7f10 cold (/app/libhot.so)\n\n";
  const std::string f = write("w.txt", text);
  auto r = flame(f, "-q --weight period");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "java;cold 100000\njava;hot 1000000\n");
  r = flame(f, "-q --weight samples");
  EXPECT_EQ(r.out, "java;cold 1\njava;hot 2\n");
  r = flame(f, "-q --weight bytes");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST_F(FlamePerfCli, ProcessFrameLikeStackcollapsePerf) {
  const std::string text =
      "Web Content 5123/5130 [000] 18203.1: cpu-clock: \n"
      "\t 7f3a0000beef [unknown] (/usr/lib/firefox/libxul.so)\n"
      "\t 7f3a0000cafe [unknown] ([unknown])\n\n"
      "java 3244 [000] 18203.2: cpu-clock: \n"  // tid only: PID "?"
      "\t 4000 (anonymous namespace)::Codec::run(int, char const*) const+0x1a (/app/a)\n"
      "\t 4100 inline_helper (inlined)\n"
      "\t 4200 std::vector<int, std::allocator<int> >::push_back(int&&)+0x8 (/app/a)\n\n";
  const std::string f = write("p.txt", text);
  auto r = flame(f, "-q");
  EXPECT_EQ(r.out,
            "Web_Content;[unknown];[libxul.so] 1\n"
            "java;std::vector<int, std::allocator<int> >::push_back;inline_helper;"
            "(anonymous namespace)::Codec::run 1\n");
  r = flame(f, "-q --pid");
  EXPECT_NE(r.out.find("Web_Content-5123;[unknown]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("java-?;std::vector"), std::string::npos) << r.out;
  r = flame(f, "-q --tid");
  EXPECT_NE(r.out.find("Web_Content-5123/5130;[unknown]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("java-?/3244;std::vector"), std::string::npos) << r.out;
  r = flame(f, "-q --no-process-root");
  EXPECT_EQ(r.out.find("java"), std::string::npos) << r.out;
}

TEST_F(FlamePerfCli, FirstEventOnlyByDefault) {
  const std::string text =
      "a 1/1 [000] 1.0: 10 cycles: \n\t 1 f (/x)\n\n"
      "a 1/1 [000] 1.1: 10 instructions: \n\t 1 g (/x)\n\n"
      "a 1/1 [000] 1.2: 10 cycles: \n\t 1 f (/x)\n\n";
  const std::string f = write("e.txt", text);
  auto r = flame(f, "");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("a;f 2\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("a;g"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 perf.other_events (first at line 4)"), std::string::npos) << r.out;
  r = flame(f, "-q --perf-event all");
  EXPECT_EQ(r.out, "a;f 2\na;g 1\n");
}

TEST_F(FlamePerfCli, EmptyOrBinaryInputIsAnError) {
  auto r = flame(write("empty.txt", ""), "");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("empty.txt: samples: no stack samples read as folded stacks (empty input)"),
            std::string::npos)
      << r.out;
  r = flame(write("hdr.txt", "# ========\n# captured on: x\n"), "");
  EXPECT_EQ(r.code, 1) << r.out;
  std::string bin = "PERFILE2";
  bin += std::string("\x00\x10\x00\x00\xff\xfe", 6);
  r = flame(write("perf.data", bin), "");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("perf.data: byte 0: a binary perf.data file"), std::string::npos) << r.out;
  r = flame(write("g.bin", std::string("\x7f"
                                       "ELF\x02\x01\x00\x00\xff",
                                       9)),
            "");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("g.bin: byte 6: a NUL byte"), std::string::npos) << r.out;
  r = flame(write("g2.txt", "zz\xff\xfe\x80 \xc3(\n"), "");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("count '\\xc3(' is not"), std::string::npos) << r.out;
  for (const std::string& out : {r.out})
    for (char c : out) EXPECT_TRUE(static_cast<unsigned char>(c) < 0x80 && c != 0) << out;
  r = flame(write("bad.txt", "java 1/1 [000] 1.0: cpu-clock:\n\n"), "");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no stack samples read as perf script text: 1 perf.empty_stacks (first "
                       "at line 1)"),
            std::string::npos)
      << r.out;
}

namespace {

// Random folded stacks over a few names, so prefixes are shared and some names are
// prefixes of others ("f" and "f2", "a b").
SampleSet random_set(std::mt19937& rng, size_t n) {
  const char* names[] = {"f", "f2", "a b", "a", "g:h", "[k]"};
  SampleSet set;
  std::vector<uint32_t> frames;
  for (size_t i = 0; i < n; ++i) {
    frames.clear();
    const size_t depth = 1 + rng() % 5;
    for (size_t d = 0; d < depth; ++d) frames.push_back(set.intern_frame(names[rng() % 6]));
    StackSample s;
    s.stack = set.intern_stack(frames);
    s.count = 1 + rng() % 9;
    set.samples.push_back(s);
  }
  return set;
}

// The oracle: every sample's path joined by ';', weights summed, sorted as strings.
std::string folded_oracle(const SampleSet& set) {
  std::map<std::string, uint64_t> lines;
  for (const StackSample& s : set.samples) {
    std::string path;
    auto [b, e] = set.stack(s.stack);
    for (const uint32_t* f = b; f != e; ++f) path += (f == b ? "" : ";") + set.frame(*f);
    lines[path] += s.count;
  }
  std::string out;
  for (auto& [p, w] : lines) out += p + " " + std::to_string(w) + "\n";
  return out;
}

}  // namespace

TEST(FlameTreeSweep, FoldedWritersAgreeWithTheOracle) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    const SampleSet set = random_set(rng, 1 + rng() % 60);
    const std::vector<double> w = mode_weights(set, Mode::on_cpu);
    const std::string want = folded_oracle(set);
    EXPECT_EQ(to_folded(set, w, {}), want);
    EXPECT_EQ(to_folded(build_tree(set, w, {})), want);
  }
}

TEST(FlameTreeSweep, PruningDropsExactlyTheNarrowFrames) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    const SampleSet set = random_set(rng, 1 + rng() % 80);
    const std::vector<double> w = mode_weights(set, Mode::on_cpu);
    const FlameTree full = build_tree(set, w, {});
    TreeOptions o;
    o.min_share = 0.05;
    const FlameTree pruned = build_tree(set, w, o);
    // Oracle: the full tree's nodes of value >= 5 % of the total, in the same order.
    std::vector<std::pair<std::string, double>> want, got;
    for (const FlameTree::Node& n : full.nodes) {
      if (n.value >= 0.05 * full.total())
        want.emplace_back(fmt::format("{}/{}", n.depth, n.name), n.value);
    }
    for (const FlameTree::Node& n : pruned.nodes)
      got.emplace_back(fmt::format("{}/{}", n.depth, n.name), n.value);
    EXPECT_EQ(got, want);
    EXPECT_EQ(pruned.total(), full.total());
    for (const FlameTree::Node& n : pruned.nodes)
      for (uint32_t c : n.children)
        EXPECT_EQ(pruned.nodes[c].parent, static_cast<uint32_t>(&n - pruned.nodes.data()));
  }
}

}  // namespace test_flame_perf
