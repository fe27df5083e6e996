#include "bench/perf_suite.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "bench/synthetic.hpp"
#include "trace/setting_error.hpp"
#include "trace/trace_io.hpp"

extern char** environ;

namespace snailtrail::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string machine_description() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  uint64_t mem_kb = 0;
  std::ifstream mem("/proc/meminfo");
  for (std::string line; std::getline(mem, line);)
    if (line.rfind("MemTotal:", 0) == 0) mem_kb = std::stoull(line.substr(9));
  return fmt::format("{}, {} cores, {:.0f} GiB", cpu, sysconf(_SC_NPROCESSORS_ONLN),
                     static_cast<double>(mem_kb) / (1024.0 * 1024.0));
}

struct ProcessRun {
  double wall_s;
  uint64_t peak_rss_kb;
};

// Runs `binary args...` with stdout discarded and stderr to `stderr_path` (or discarded);
// fails on a non-zero exit. Peak RSS comes from the "peak_rss_kb=" that `analyze
// --timings` prints (getrusage's ru_maxrss of a spawned child includes the parent's
// peak on Linux), else from rusage.
ProcessRun run_process(const std::string& binary, const std::vector<std::string>& args,
                       const std::string& stderr_path = "") {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2,
                                   stderr_path.empty() ? "/dev/null" : stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const auto start = Clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot run {}: {}", binary, strerror(rc)));
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) < 0) throw std::runtime_error("wait4 failed");
  const double wall = since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(
        fmt::format("{} {} failed (status {})", binary, fmt::join(args, " "), status));
  uint64_t peak = static_cast<uint64_t>(usage.ru_maxrss);
  if (!stderr_path.empty()) {
    std::ifstream err(stderr_path);
    std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    const size_t at = text.rfind("peak_rss_kb=");
    if (at != std::string::npos) peak = std::stoull(text.substr(at + 12));
  }
  return {wall, peak};
}

// The floor: what any analysis must do at least — read the events from .snail and
// group them per worker (a stable counting sort by worker).
uint64_t floor_work(const std::string& path) {
  Trace t = read_trace(path);
  uint32_t max_worker = 0;
  for (const Event& e : t.events) max_worker = std::max(max_worker, e.worker);
  std::vector<uint32_t> begin(size_t{max_worker} + 2, 0);
  for (const Event& e : t.events) ++begin[e.worker + 1];
  for (size_t w = 0; w + 1 < begin.size(); ++w) begin[w + 1] += begin[w];
  std::vector<Event> grouped(t.events.size());
  for (const Event& e : t.events) grouped[begin[e.worker]++] = e;
  if (!grouped.empty() && grouped.back().worker > max_worker) throw std::logic_error("floor");
  return grouped.size();
}

template <typename F>
double time_median(int repeat, F&& f) {
  std::vector<double> runs;
  for (int i = 0; i < repeat; ++i) {
    const auto start = Clock::now();
    f();
    runs.push_back(since(start));
  }
  return median(runs);
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InputError({"cannot find the snailtrail executable; pass ", field("binary")});
  return p.string();
}

}  // namespace

uint64_t run_floor(const std::string& path) {
  return floor_work(path);
}

PaperFigure paper_figure(int window_seconds) {
  switch (window_seconds) {
    case 1:
      return {0.03, 0.06, 1.2};
    case 4:
      return {0.12, 0.29, 1.2};
    case 16:
      return {0.48, 1.40, 1.1};
    case 64:
      return {1.91, 5.91, 0.8};
    case 256:
      return {7.50, 24.84, 0.4};
    default:
      return {0, 0, 0};
  }
}

namespace {

// One run of the suite: its options, the binary it times and the directory of its traces.
class PerfRun {
 public:
  PerfRun(const PerfOptions& o, std::string binary, fs::path dir)
      : o_(o), binary_(std::move(binary)), dir_(std::move(dir)) {}

  void say(const std::string& s) const {
    if (!o_.quiet) fmt::print(stderr, "bench: {}\n", s);
  }

  // The synthetic trace of `seconds`, generated unless it is there.
  std::string trace_file(int64_t seconds) const {
    fs::path p = dir_ / fmt::format("synthetic-{}s.snail", seconds);
    if (!fs::exists(p)) {
      say(fmt::format("generating a {} s trace (48 workers, ~30 K events/s)", seconds));
      SyntheticOptions so;
      so.duration_ns = seconds * 1'000'000'000;
      Trace t = make_synthetic_trace(so);
      write_trace(t, p.string());
    }
    return p.string();
  }

  // Latency of one window of w seconds, the floor, and throughput of w-second windows
  // over the long trace.
  WindowResult window(int w, const std::string& long_trace, uint64_t long_events) const {
    WindowResult r;
    r.window_s = w;
    const std::string one = trace_file(w);
    r.events = read_trace(one).events.size();
    const std::string window = fmt::format("{}s", w);
    std::vector<double> lat;
    for (int i = 0; i < o_.repeat; ++i) {
      say(fmt::format("{} s window: analyze run {}/{}", w, i + 1, o_.repeat));
      ProcessRun run = run_process(binary_,
                                   {"analyze", one, "--window", window, "--format", "jsonl", "-o",
                                    "/dev/null", "--no-progress", "--timings"},
                                   (dir_ / "analyze.stderr").string());
      lat.push_back(run.wall_s);
      r.peak_rss_kb = std::max(r.peak_rss_kb, run.peak_rss_kb);
    }
    r.latency_s = median(lat);
    r.latency_min_s = *std::min_element(lat.begin(), lat.end());
    r.latency_max_s = *std::max_element(lat.begin(), lat.end());
    std::vector<double> fl;
    for (int i = 0; i < o_.repeat; ++i) {
      say(fmt::format("{} s window: floor run {}/{}", w, i + 1, o_.repeat));
      fl.push_back(run_process(binary_, {"bench", "--floor", one}).wall_s);
    }
    r.floor_s = median(fl);
    std::vector<double> thr;
    for (int i = 0; i < o_.repeat; ++i) {
      say(fmt::format("{} s windows back to back over {} s: run {}/{}", w, o_.throughput_seconds,
                      i + 1, o_.repeat));
      thr.push_back(run_process(binary_, {"analyze", long_trace, "--window", window, "--format",
                                          "jsonl", "-o", "/dev/null", "--no-progress"})
                        .wall_s);
    }
    r.throughput_s = median(thr);
    r.throughput_events = long_events;
    r.throughput_windows = static_cast<uint64_t>((o_.throughput_seconds + w - 1) / w);
    return r;
  }

  // Reader throughput on the 16 s trace, in memory.
  ReaderResult readers() const {
    say("reader throughput");
    ReaderResult r;
    SyntheticOptions so;
    so.duration_ns = 16'000'000'000;
    Trace t = make_synthetic_trace(so);
    const std::string raw = to_snail(t);
    SnailWriteOptions z;
    z.compress = true;
    const std::string packed = to_snail(t, z);
    const std::string jsonl = to_jsonl(t);
    auto bytes = [](const std::string& s) {
      return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    };
    const double n = static_cast<double>(t.events.size());
    r.events = t.events.size();
    r.snail_meps = n / time_median(o_.repeat, [&] { parse_snail(bytes(raw), "bench"); }) / 1e6;
    r.snail_zstd_meps =
        n / time_median(o_.repeat, [&] { parse_snail(bytes(packed), "bench"); }) / 1e6;
    r.jsonl_meps = n / time_median(o_.repeat, [&] { parse_jsonl(jsonl, "bench"); }) / 1e6;
    return r;
  }

 private:
  const PerfOptions& o_;
  const std::string binary_;
  const fs::path dir_;
};

}  // namespace

PerfReport run_perf_suite(const PerfOptions& o) {
  PerfReport report;
  report.machine = machine_description();
  const std::string binary = o.binary.empty() ? self_exe() : o.binary;
  fs::path dir = o.work_dir;
  bool made_dir = false;
  if (dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "snailtrail-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
    dir = tmpl;
    made_dir = true;
  } else {
    fs::create_directories(dir);
  }
  const PerfRun run(o, binary, dir);
  const std::string long_trace = run.trace_file(o.throughput_seconds);
  const uint64_t long_events = read_trace(long_trace).events.size();
  for (int w : o.window_seconds) report.windows.push_back(run.window(w, long_trace, long_events));
  report.readers = run.readers();
  if (made_dir && !o.keep_files) fs::remove_all(dir);
  return report;
}

std::string format_table(const PerfReport& r) {
  std::string s;
  s += fmt::format("machine: {}\n", r.machine);
  s += "latency: whole-process `snailtrail analyze T.snail --window W --format jsonl` on a\n"
       "trace of one W-second window (median); floor: a whole process that reads T.snail\n"
       "and groups the events per worker (`snailtrail bench --floor T.snail`)\n\n";
  s += fmt::format("{:>6} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>7}\n", "window",
                   "events", "ours s", "paper s", "paper/", "floor s", "ours/", "peak RSS", "Mev/s",
                   "paper");
  s += fmt::format("{:>6} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>7}\n", "", "", "", "",
                   "ours", "", "floor", "", "b2b", "Mev/s");
  for (const WindowResult& w : r.windows) {
    const PaperFigure p = paper_figure(w.window_s);
    s += fmt::format(
        "{:>5}s {:>9} {:>9.3f} {:>8.2f} {:>7.1f}x {:>8.3f} {:>7.2f}x {:>6} MB {:>9.2f} "
        "{:>7.1f}\n",
        w.window_s, w.events, w.latency_s, p.latency_s,
        w.latency_s > 0 ? p.latency_s / w.latency_s : 0, w.floor_s,
        w.floor_s > 0 ? w.latency_s / w.floor_s : 0, w.peak_rss_kb / 1024, w.throughput_meps(),
        p.throughput_meps);
  }
  s += fmt::format(
      "\nMev/s b2b: million events per second, windows processed back to back in one run "
      "over\n{} events; readers (in memory, {} events): .snail {:.1f} M/s, .snail+zstd "
      "{:.1f} M/s, JSONL {:.2f} M/s\n",
      r.windows.empty() ? 0 : r.windows.front().throughput_events, r.readers.events,
      r.readers.snail_meps, r.readers.snail_zstd_meps, r.readers.jsonl_meps);
  return s;
}

std::string format_json(const PerfReport& r) {
  std::string s = fmt::format("{{\"machine\":\"{}\",\"windows\":[", r.machine);
  for (size_t i = 0; i < r.windows.size(); ++i) {
    const WindowResult& w = r.windows[i];
    const PaperFigure p = paper_figure(w.window_s);
    s += fmt::format(
        "{}{{\"window_s\":{},\"events\":{},\"latency_s\":{},\"latency_min_s\":{},"
        "\"latency_max_s\":{},\"floor_s\":{},\"peak_rss_kb\":{},\"throughput_events\":{},"
        "\"throughput_windows\":{},\"throughput_s\":{},\"throughput_meps\":{},"
        "\"paper_latency_s\":{},\"paper_throughput_meps\":{}}}",
        i ? "," : "", w.window_s, w.events, w.latency_s, w.latency_min_s, w.latency_max_s,
        w.floor_s, w.peak_rss_kb, w.throughput_events, w.throughput_windows, w.throughput_s,
        w.throughput_meps(), p.latency_s, p.throughput_meps);
  }
  s += fmt::format(
      "],\"readers\":{{\"events\":{},\"snail_meps\":{},\"snail_zstd_meps\":{},\"jsonl_meps\":{}}}}}"
      "\n",
      r.readers.events, r.readers.snail_meps, r.readers.snail_zstd_meps, r.readers.jsonl_meps);
  return s;
}

std::string format_svg(const PerfReport& r) {
  // Log-log axes: x = window size in seconds, y = latency in seconds.
  const double W = 720, H = 420, left = 70, right = 210, top = 30, bottom = 50;
  double ymin = 1e9, ymax = 0;
  for (const WindowResult& w : r.windows) {
    for (double v : {w.latency_s, w.floor_s, paper_figure(w.window_s).latency_s})
      if (v > 0) ymin = std::min(ymin, v), ymax = std::max(ymax, v);
  }
  if (ymax <= 0) ymin = 0.01, ymax = 10;
  const double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax));
  const double lx0 = 0, lx1 = std::log10(256.0);
  auto x = [&](double s) {
    return left + (std::log10(s) - lx0) / (lx1 - lx0) * (W - left - right);
  };
  auto y = [&](double s) { return top + (ly1 - std::log10(s)) / (ly1 - ly0) * (H - top - bottom); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"18\" font-size=\"14\">Latency per window "
      "(log-log)</text>\n",
      W, H, left);
  for (double d = ly0; d <= ly1; d += 1) {
    const double v = std::pow(10.0, d);
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{}\" "
        "y=\"{:.1f}\" text-anchor=\"end\">{}s</text>\n",
        left, y(v), W - right, y(v), left - 6, y(v) + 4, fmt::format("{:g}", v));
  }
  for (int w : {1, 4, 16, 64, 256})
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/><text "
        "x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{} s</text>\n",
        x(w), top, x(w), H - bottom, x(w), H - bottom + 18, w);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">window size</text>\n",
                   (left + W - right) / 2, H - 10);
  struct Series {
    const char* name;
    const char* color;
    double (*get)(const WindowResult&);
  };
  const Series series[] = {
      {"SnailTrail paper (32 cores)", "#d62728",
       [](const WindowResult& w) { return paper_figure(w.window_s).latency_s; }},
      {"snailtrail (this machine)", "#1f77b4", [](const WindowResult& w) { return w.latency_s; }},
      {"floor: read + group", "#7f7f7f", [](const WindowResult& w) { return w.floor_s; }},
  };
  int k = 0;
  for (const Series& se : series) {
    std::string points;
    for (const WindowResult& w : r.windows) {
      const double v = se.get(w);
      if (v <= 0) continue;
      points += fmt::format("{:.1f},{:.1f} ", x(w.window_s), y(v));
      s += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {} s "
          "window, {:.3f} s</title></circle>\n",
          x(w.window_s), y(v), se.color, se.name, w.window_s, v);
    }
    s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     points, se.color);
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/><text "
        "x=\"{}\" y=\"{}\">{}</text>\n",
        W - right + 10, top + 20 + 20 * k, W - right + 30, top + 20 + 20 * k, se.color,
        W - right + 34, top + 24 + 20 * k, se.name);
    ++k;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace snailtrail::bench
