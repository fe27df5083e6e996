// Hostile input and load for `snailtrail serve` (issue 25, items 2-4): decompression and
// block bombs, the input buffer budget, connection limits and timeouts, and an HTTP API
// that answers whatever slow or idle clients do. Every hostile input is built here.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <zstd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http_test_util.hpp"
#include "process_util.hpp"
#include "serve/ingest.hpp"
#include "sim_test_util.hpp"
#include "trace/stream_decoder.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail::test_serve_limits {
namespace {

namespace fs = std::filesystem;
using detail::snail::kMaxBlockBytes;
using detail::snail::kMaxBlockEvents;
using testing::http_get;
using testing::Process;

std::string u32(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}
std::string snail_header() {
  return std::string("SNAILTRC") + u32(1) + u32(0);
}
std::string block_header(uint32_t kind, uint32_t codec, uint32_t count, uint32_t stored) {
  return u32(kind) + u32(codec) + u32(count) + u32(stored);
}
// A valid record: worker 0 starts processing at ts.
std::string record(int64_t ts) {
  Event e;
  e.ts = ts;
  e.worker = 0;
  e.activity = ActivityType::processing;
  e.kind = EventKind::start;
  std::string s(sizeof(Event), '\0');
  std::memcpy(s.data(), &e, sizeof e);
  return s;
}
// A zstd frame of `records` copies of one record, compressed as a stream: tiny, whatever
// it expands to. `declare` pledges the content size in the frame header; `window_log`
// forces the window the frame asks for.
std::string zstd_bomb(size_t records, bool declare, int window_log = 0) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  if (window_log) ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log);
  if (declare) ZSTD_CCtx_setPledgedSrcSize(c, records * sizeof(Event));
  std::string chunk;
  for (int i = 0; i < 4096; ++i) chunk += record(0);
  std::string out(1 << 16, '\0'), frame;
  size_t left = records;
  for (;;) {
    const size_t n = std::min<size_t>(left, 4096);
    left -= n;
    ZSTD_inBuffer in{chunk.data(), n * sizeof(Event), 0};
    const ZSTD_EndDirective mode = left ? ZSTD_e_continue : ZSTD_e_end;
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const size_t rest = ZSTD_compressStream2(c, &o, &in, mode);
      EXPECT_FALSE(ZSTD_isError(rest)) << ZSTD_getErrorName(rest);
      frame.append(out.data(), o.pos);
      if (mode == ZSTD_e_end ? rest == 0 : in.pos == in.size) break;
    }
    if (!left) break;
  }
  ZSTD_freeCCtx(c);
  return frame;
}
std::string zstd_block(uint32_t count, const std::string& frame) {
  return block_header(1, 1, count, static_cast<uint32_t>(frame.size())) + frame;
}
std::string snail_error(const std::string& image) {
  try {
    parse_snail({reinterpret_cast<const uint8_t*>(image.data()), image.size()}, "bomb.snail");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

// ---- Item 2: the block limits, in batch reading and in the writer.

TEST(BlockLimits, BatchReaderRejectsOversizedAndBombBlocksWithTheirOffset) {
  const std::string h = snail_header();
  const std::string ok = zstd_block(3, zstd_bomb(3, true));
  // A header that claims more records than a block may hold: refused before decoding.
  const std::string claim = zstd_block(kMaxBlockEvents + 1, zstd_bomb(kMaxBlockEvents + 1, true));
  EXPECT_LT(claim.size(), 64u << 10) << "a bomb: small on disk";
  EXPECT_NE(snail_error(h + ok + claim)
                .find("byte " + std::to_string(16 + ok.size()) +
                      ": event block claims 262145 records (at most "
                      "262144"),
            std::string::npos)
      << snail_error(h + ok + claim);
  // A payload larger than the limit (never read: refused from the header).
  EXPECT_NE(snail_error(h + block_header(1, 1, 10, kMaxBlockBytes + 1))
                .find("byte 16: block payload of 16777217 bytes exceeds the limit of 16777216"),
            std::string::npos);
  // A frame that expands to twice its block's records, with or without a declared size:
  // decoding stops at the block's size.
  for (bool declare : {true, false}) {
    const std::string bomb = zstd_block(kMaxBlockEvents, zstd_bomb(2 * kMaxBlockEvents, declare));
    const std::string err = snail_error(h + bomb);
    EXPECT_NE(err.find("byte 16: "), std::string::npos) << err;
    EXPECT_TRUE(err.find("holds more than the block's 262144 records") != std::string::npos ||
                err.find("decompresses to 20971520 bytes, expected 10485760") != std::string::npos)
        << err;
  }
  // A frame asking for a 128 MiB window (far more than any block needs).
  const std::string wide = zstd_block(10000, zstd_bomb(10000, false, 27));
  EXPECT_NE(snail_error(h + wide).find("byte 16: corrupt zstd data"), std::string::npos)
      << snail_error(h + wide);
  // The largest legal block still reads.
  const std::string full = zstd_block(kMaxBlockEvents, zstd_bomb(kMaxBlockEvents, false));
  const Trace t = parse_snail(
      {reinterpret_cast<const uint8_t*>((h + full).data()), (h + full).size()}, "full.snail");
  EXPECT_EQ(t.events.size(), kMaxBlockEvents);
}

TEST(BlockLimits, WriterStaysWithinTheLimits) {
  Trace t;
  const size_t n = kMaxBlockEvents + 5;
  t.events.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Event e;
    e.ts = static_cast<int64_t>(i);
    e.activity = ActivityType::processing;
    e.kind = i % 2 ? EventKind::end : EventKind::start;
    t.events[i] = e;
  }
  // Names of 20 MiB in all: more than one block can hold.
  for (uint32_t w = 0; w < 20; ++w) t.worker_names[w] = std::string(1 << 20, 'a' + w % 26);
  for (bool compress : {false, true}) {
    SnailWriteOptions o;
    o.compress = compress;
    o.events_per_block = 1u << 25;  // asks for more than allowed: clamped
    const std::string image = to_snail(t, o);
    size_t off = 16, blocks = 0, meta = 0, index = 0;
    while (off < image.size()) {
      uint32_t kind, count, stored;
      std::memcpy(&kind, image.data() + off, 4);
      std::memcpy(&count, image.data() + off + 8, 4);
      std::memcpy(&stored, image.data() + off + 12, 4);
      EXPECT_LE(stored, kMaxBlockBytes);
      if (kind == 1) {
        EXPECT_LE(count, kMaxBlockEvents);
      }
      meta += kind == 2;
      index += kind == 3;
      ++blocks;
      off += 16 + stored;
    }
    EXPECT_EQ(meta, 2u);
    EXPECT_EQ(index, 1u);  // the block index, last
    EXPECT_EQ(blocks, 5u);
    const Trace back =
        parse_snail({reinterpret_cast<const uint8_t*>(image.data()), image.size()}, "w.snail");
    EXPECT_EQ(back.events.size(), n);
    EXPECT_EQ(back.worker_names, t.worker_names);
  }
}

// ---- Item 2: live decoding.

TEST(BlockLimits, StreamDecoderRefusesOversizedBlocksWithTheOffset) {
  StreamDecoder d("tcp 1");
  Trace out;
  const std::string ok = zstd_block(3, zstd_bomb(3, true));
  const std::string s = snail_header() + ok + block_header(1, 1, 1u << 25, 41'000);
  EXPECT_FALSE(d.feed({reinterpret_cast<const uint8_t*>(s.data()), s.size()}, out));
  EXPECT_EQ(out.events.size(), 3u);
  EXPECT_NE(d.broken_reason().find("tcp 1: byte " + std::to_string(16 + ok.size()) +
                                   ": block of 33554432 records, 41000 bytes exceeds the limits"),
            std::string::npos)
      << d.broken_reason();
  // Its payload is not read: the stream stays closed.
  const std::string more(1000, 'x');
  EXPECT_FALSE(d.feed({reinterpret_cast<const uint8_t*>(more.data()), more.size()}, out));
  EXPECT_EQ(d.stats().bytes, s.size());
}

TEST(BlockLimits, StreamDecoderDecodesABombStreamInBoundedBatches) {
  // 24 blocks of the largest size, 6 M events, in a few hundred KB: one piece of input.
  std::string s = snail_header();
  const std::string one = zstd_block(kMaxBlockEvents, zstd_bomb(kMaxBlockEvents, true));
  for (int i = 0; i < 24; ++i) s += one;
  ASSERT_LT(s.size(), 1u << 20);
  StreamDecoder d("bomb");
  d.set_output_limit(1 << 16);
  Trace out;
  size_t calls = 0, total = 0;
  bool ok = d.feed({reinterpret_cast<const uint8_t*>(s.data()), s.size()}, out);
  for (;;) {
    ASSERT_TRUE(ok) << d.broken_reason();
    // A call stops at the first block boundary past the limit.
    ASSERT_LE(out.events.size(), (1u << 16) + kMaxBlockEvents);
    total += out.events.size();
    out.events.clear();
    ++calls;
    if (!d.more()) break;
    ok = d.feed({}, out);
  }
  EXPECT_EQ(total, 24u * kMaxBlockEvents);
  EXPECT_EQ(calls, 24u);
  EXPECT_EQ(d.stats().bad_blocks, 0u);
}

// The per-connection admission protocol: reservations are all or nothing, buffered input
// stays within each connection's allowance, and the budget is never exceeded.
TEST(BlockLimits, BudgetBoundsBufferedInputAndNeverDeadlocks) {
  serve::BatchQueue queue(1 << 30);
  serve::IngestCounters counters;
  const size_t budget_bytes = 2 * (size_t{kMaxBlockBytes} + 16) + (1 << 20);
  serve::MemoryBudget budget(budget_bytes);
  std::vector<std::unique_ptr<serve::ConnectionInput>> inputs;
  for (int i = 0; i < 5; ++i)
    inputs.push_back(
        std::make_unique<serve::ConnectionInput>("c" + std::to_string(i), queue, counters, budget));
  // Each announces a zstd block of the largest payload.
  const std::string start = snail_header() + block_header(1, 1, 1000, kMaxBlockBytes);
  auto check = [&] {
    EXPECT_LE(budget.used(), budget.limit());
    size_t sum = 0;
    for (auto& in : inputs) {
      EXPECT_LE(in->buffered(), std::max(serve::ConnectionInput::kFreeBytes, in->reserved()));
      sum += in->buffered();
    }
    EXPECT_EQ(static_cast<int64_t>(sum), counters.buffered_bytes.load());
  };
  std::vector<bool> admitted;
  for (auto& in : inputs) {
    ASSERT_TRUE(in->admit());  // the headers fit in the free allowance
    ASSERT_TRUE(in->feed(reinterpret_cast<const uint8_t*>(start.data()), start.size()));
    admitted.push_back(in->admit());
    check();
  }
  EXPECT_EQ(admitted, (std::vector<bool>{true, true, false, false, false}));
  // The first completes its block (garbage payload: a bad block, skipped); its
  // reservation comes back and the third gets one.
  const std::string payload(1 << 20, 'x');
  size_t left = kMaxBlockBytes;
  while (left) {
    ASSERT_TRUE(inputs[0]->admit());
    const size_t n = std::min({left, payload.size(), inputs[0]->room()});
    ASSERT_GT(n, 0u);
    ASSERT_TRUE(inputs[0]->feed(reinterpret_cast<const uint8_t*>(payload.data()), n));
    left -= n;
    check();
  }
  EXPECT_EQ(inputs[0]->reserved(), 0u);
  EXPECT_TRUE(inputs[2]->admit());
  EXPECT_FALSE(inputs[3]->admit());
  check();
  // A JSONL producer with a line longer than the free allowance reserves the line limit.
  serve::ConnectionInput jsonl("j", queue, counters, budget);
  const std::string line(100'000, ' ');
  ASSERT_TRUE(jsonl.admit());
  ASSERT_TRUE(jsonl.feed(reinterpret_cast<const uint8_t*>(line.data()), jsonl.room()));
  EXPECT_EQ(jsonl.buffered(), serve::ConnectionInput::kFreeBytes);
  EXPECT_FALSE(jsonl.admit()) << "the budget is taken by inputs 1 and 2";
  inputs[1].reset();  // a connection closes: its reservation comes back
  EXPECT_TRUE(jsonl.admit());
  EXPECT_LE(budget.peak(), budget.limit());
}

// ---- Process tests: serve under bombs, many connections, slow HTTP clients.

class ServeLimits : public testing::TempDirTest {
 protected:
  ServeLimits() : TempDirTest("limits") {}
  std::unique_ptr<Process> start(const std::string& name, const std::vector<std::string>& args) {
    return std::make_unique<Process>(args, path(name + ".out"), path(name + ".err"));
  }
  // A simulated trace and what `analyze --window 10ms --format jsonl` says of it.
  fs::path trace(std::string& expected) {
    const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 200'000'000, 3);
    write_trace(sim.trace, path("trace.snail").string());
    Process p({"analyze", path("trace.snail").string(), "--window", "10ms", "--format", "jsonl",
               "--no-progress"},
              path("analyze.out"), path("analyze.err"));
    EXPECT_EQ(p.wait(), 0);
    expected = p.out();
    // Its last line is the run's verdict, which serve does not write.
    const size_t run = expected.rfind("{\"run\":");
    if (run != std::string::npos && (run == 0 || expected[run - 1] == '\n')) expected.resize(run);
    return path("trace.snail");
  }
};

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

int64_t metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stoll(line.substr(name.size() + 1));
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

// VmHWM (peak RSS) or Threads of a process, from /proc.
int64_t proc_status(pid_t pid, const std::string& key) {
  std::istringstream in(testing::slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  return -1;
}

// Raises this process's open-file soft limit to `n` if the hard limit allows.
bool raise_fd_limit(rlim_t n) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
  if (rl.rlim_cur >= n) return true;
  if (rl.rlim_max < n) return false;
  rl.rlim_cur = n;
  return ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

TEST_F(ServeLimits, BombsAreRefusedBoundedAndOtherProducersKeepStreaming) {
  std::string expected;
  const fs::path good = trace(expected);
  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "10ms",
                      "--wait-for", "1", "--ingest-buffer", "40", "--out",
                      path("windows.jsonl").string(), "--port-file", path("ports").string()});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  // The real producer first (so that --wait-for 1 counts it), streaming slowly.
  auto producer = start("send", {"send", good.string(), "--to", "127.0.0.1:" + std::to_string(tcp),
                                 "--rate", "2000"});
  // Connected before the bombs (not after a fixed time: under ASan it may take longer).
  ASSERT_TRUE(testing::wait_until([&] {
    return metric(http_get(http, "/metrics"), "snailtrail_connections_total") >= 1;
  })) << server->err();
  // 1. A header claiming 2^25 records: the stream is closed, the offset logged.
  int fd = connect_to(tcp);
  ASSERT_TRUE(send_all(fd, snail_header() + block_header(1, 1, 1u << 25, 41'000)));
  // 2. Frames expanding beyond their block: skipped, counted, the stream goes on.
  int fd2 = connect_to(tcp);
  const std::string bomb = zstd_block(kMaxBlockEvents, zstd_bomb(4 * kMaxBlockEvents, false));
  std::string bombs = snail_header();
  for (int i = 0; i < 20; ++i) bombs += bomb;
  ASSERT_TRUE(send_all(fd2, bombs));
  // 3. Twelve connections announce the largest blocks and send half of them: at most
  // two fit in the budget at once; the others wait, unread.
  std::vector<int> holders;
  for (int i = 0; i < 12; ++i) {
    const int h = connect_to(tcp);
    ASSERT_GE(h, 0);
    ASSERT_TRUE(send_all(h, snail_header() + block_header(1, 1, 1000, kMaxBlockBytes)));
    holders.push_back(h);
  }
  // Each sends all but 64 KiB of its block (non-blocking: a paused connection's socket
  // fills up), while the real producer streams.
  std::thread feeder([&] {
    const std::string chunk(1 << 16, 'x');
    for (int round = 0; round < 255; ++round)
      for (int h : holders) ::send(h, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  });
  feeder.join();
  ASSERT_EQ(producer->wait(), 0) << producer->err();
  // What all 14 connections could buffer without reserving from the budget.
  const int64_t kWithoutBudget = 14 * int64_t{serve::ConnectionInput::kFreeBytes};
  std::string metrics;
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_invalid_blocks_total") >= 20 &&
           metric(metrics, "snailtrail_broken_streams_total") >= 1 &&
           metric(metrics, "snailtrail_ingest_paused_connections") >= 10 &&
           metric(metrics, "snailtrail_ingest_buffered_bytes_max") > kWithoutBudget;
  });
  EXPECT_EQ(metric(metrics, "snailtrail_broken_streams_total"), 1);
  EXPECT_EQ(metric(metrics, "snailtrail_invalid_blocks_total"), 20);
  EXPECT_GE(metric(metrics, "snailtrail_ingest_paused_connections"), 10);
  const int64_t limit = (40 << 20) + 16 * int64_t{serve::ConnectionInput::kFreeBytes};
  EXPECT_LE(metric(metrics, "snailtrail_ingest_buffered_bytes_max"), limit);
  EXPECT_GT(metric(metrics, "snailtrail_ingest_buffered_bytes_max"), kWithoutBudget)
      << "the admitted holders' blocks are buffered";
  EXPECT_LE(proc_status(server->pid(), "VmHWM"), 1 << 20) << "peak RSS at most 1 GB";
  for (int h : holders) ::close(h);
  ::close(fd);
  ::close(fd2);
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  EXPECT_NE(
      server->err().find("byte 16: block of 33554432 records, 41000 bytes exceeds the limits"),
      std::string::npos)
      << server->err();
  EXPECT_EQ(testing::slurp(path("windows.jsonl")), expected)
      << "the real producer's windows are analyze's";
}

TEST_F(ServeLimits, ConnectionsAreLimitedTimedOutAndCostNoThread) {
  // 1,000 idle connections when the open-file limit allows (else 200). The timeout leaves
  // room for opening them and for the refusal check on a loaded machine: an idle connection
  // timed out before the check would let the "refused" one in.
  const int idle = raise_fd_limit(1200) ? 1000 : 200;
  std::string expected;
  const fs::path good = trace(expected);
  auto server =
      start("serve",
            {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "10ms",
             "--max-connections", std::to_string(idle + 1), "--connection-timeout", "10s", "--out",
             path("windows.jsonl").string(), "--port-file", path("ports").string(), "--quiet"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  std::vector<int> fds;
  for (int i = 0; i < idle; ++i) {
    const int fd = connect_to(tcp);
    ASSERT_GE(fd, 0) << i;
    fds.push_back(fd);
  }
  std::string metrics;
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_connections_open") == idle;
  });
  ASSERT_EQ(metric(metrics, "snailtrail_connections_open"), idle);
  // Idle connections cost no thread.
  const pid_t pid = server->pid();
  EXPECT_LE(proc_status(pid, "Threads"), 16);
  // One more is accepted (the limit is idle + 1); with it open, the next is closed at once.
  const int extra = connect_to(tcp);
  ASSERT_GE(extra, 0);
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_connections_open") == idle + 1;
  });
  ASSERT_EQ(metric(metrics, "snailtrail_connections_open"), idle + 1);
  const int blocker = connect_to(tcp);
  ASSERT_GE(blocker, 0);
  char c;
  timeval tv{5, 0};
  ::setsockopt(blocker, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(blocker, &c, 1, 0), 0) << "closed by the server";
  // A refusal, not a time-out: no idle connection had timed out yet (one that had would
  // have let this one in).
  metrics = http_get(http, "/metrics");
  ASSERT_EQ(metric(metrics, "snailtrail_connections_timed_out_total"), 0)
      << "too slow to tell a refusal from a time-out";
  EXPECT_EQ(metric(metrics, "snailtrail_connections_refused_total"), 1);
  ::close(extra);
  testing::wait_until(
      [&] { return metric(http_get(http, "/metrics"), "snailtrail_connections_open") == idle; });
  // A producer streams meanwhile.
  auto producer =
      start("send", {"send", good.string(), "--to", "127.0.0.1:" + std::to_string(tcp)});
  ASSERT_EQ(producer->wait(), 0) << producer->err();
  // Then the silent ones are closed after --connection-timeout.
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_connections_timed_out_total") >= idle;
  });
  EXPECT_EQ(metric(metrics, "snailtrail_connections_timed_out_total"), idle);
  EXPECT_GE(metric(metrics, "snailtrail_connections_refused_total"), 1);
  EXPECT_EQ(metric(metrics, "snailtrail_connections_open"), 0);
  EXPECT_LE(proc_status(pid, "VmHWM"), 1 << 20) << "peak RSS at most 1 GB";
  for (int fd : fds) ::close(fd);
  ::close(blocker);
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(testing::slurp(path("windows.jsonl")), expected);
}

// Idle, slow (one byte at a time) and oversized HTTP clients: /healthz and /metrics still
// answer, the slow ones are dropped after the request timeout, and malformed requests get
// their status. (Latency under 200 slow clients is measured by scripts/serve-bench.sh.)
TEST_F(ServeLimits, HttpAnswersWhateverSlowAndIdleClientsDo) {
  raise_fd_limit(600);
  auto server = start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                "--port-file", path("ports").string(), "--quiet"});
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  std::vector<int> slow, idle;
  for (int i = 0; i < 100; ++i) slow.push_back(connect_to(http));
  for (int i = 0; i < 50; ++i) idle.push_back(connect_to(http));
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    for (size_t i = 0; !done; ++i) {
      for (int fd : slow) ::send(fd, &request[i % request.size()], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  for (int i = 0; i < 20; ++i) {
    int status = 0;
    EXPECT_EQ(http_get(http, "/healthz", &status), "ok\n");
    EXPECT_EQ(status, 200);
    EXPECT_NE(http_get(http, "/metrics").find("snailtrail_http_connections_open"),
              std::string::npos);
  }
  // Oversized head: 431; a body announced too large: 413.
  auto raw = [&](const std::string& request) {
    const int fd = connect_to(http);
    send_all(fd, request);
    std::string answer;
    char buf[4096];
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
    ::close(fd);
    return answer;
  };
  EXPECT_EQ(raw("GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n").substr(0, 12),
            "HTTP/1.1 431");
  EXPECT_EQ(raw("POST / HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n").substr(0, 12),
            "HTTP/1.1 413");
  // Chunked bodies are framed by the front and answered (no such route: 404); another
  // transfer coding: 501; broken chunk framing: 400.
  EXPECT_EQ(raw("POST /nothing HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                "\r\n5\r\nhello\r\n0\r\n\r\n")
                .substr(0, 12),
            "HTTP/1.1 404");
  EXPECT_EQ(raw("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").substr(0, 12),
            "HTTP/1.1 501");
  EXPECT_EQ(raw("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").substr(0, 12),
            "HTTP/1.1 400");
  // Two pipelined requests in one write, then close: two answers.
  const std::string two =
      raw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: "
          "close\r\n\r\n");
  size_t oks = 0;
  for (size_t at = two.find("\r\n\r\nok\n"); at != std::string::npos;
       at = two.find("\r\n\r\nok\n", at + 1))
    ++oks;
  EXPECT_EQ(oks, 2u) << two;
  EXPECT_NE(two.find("200 OK"), std::string::npos);
  // The slow clients never finish their request within 5 s: they are dropped.
  std::string metrics;
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_http_timeouts_total") >= 150;
  });
  EXPECT_GE(metric(metrics, "snailtrail_http_timeouts_total"), 150);
  done = true;
  trickle.join();
  for (int fd : slow) ::close(fd);
  for (int fd : idle) ::close(fd);
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
}

}  // namespace
}  // namespace snailtrail::test_serve_limits
