// The OTLP receiver's buffer, trace assembly and output (otlp_receiver.hpp); its HTTP
// routes are in otlp_http.cpp.
#include "serve/otlp_receiver.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "requests/critical_path.hpp"
#include "serve/http_front.hpp"
#include "serve/listener.hpp"
#include "serve/server.hpp"
#include "serve/tls.hpp"
#include "serve/trace_path_json.hpp"
#include "trace/plural.hpp"

namespace snailtrail::serve {

using importers::SpanSet;

OtlpReceiver::OtlpReceiver(const OtlpOptions& options, std::FILE* out)
    : opt_(options),
      out_(out),
      traces_(options.traces),
      live_(std::make_shared<OtlpLivePaths>(options.live)),
      slow_(std::make_shared<SlowTraces>(options.slow)) {
  if (opt_.traces.max_open_traces == 0 || opt_.traces.max_open_spans == 0)
    throw std::invalid_argument("--max-open-traces and --max-open-spans must be at least 1");
  if (opt_.traces.idle_ns <= 0) throw std::invalid_argument("--trace-idle must be positive");
  if (opt_.live.window_ns <= 0 || opt_.live.max_traces == 0)
    throw std::invalid_argument("--otlp-window and --otlp-window-traces must be positive");
  if (opt_.slow.window_ns <= 0) throw std::invalid_argument("--slow-window must be positive");
  if (opt_.max_body == 0 || opt_.buffer_spans == 0)
    throw std::invalid_argument("--otlp-max-body and --otlp-buffer must be at least 1");
  if (opt_.max_connections == 0)
    throw std::invalid_argument("--otlp-max-connections must be at least 1");
}

OtlpReceiver::~OtlpReceiver() {
  stop();
}

void OtlpReceiver::start() {
  if (!opt_.tls_cert.empty()) {
    // Bad files: an error naming them. The context picks the latest certificate (SIGHUP).
    if (!opt_.certs) opt_.certs = std::make_shared<TlsCertificates>(opt_.tls_cert, opt_.tls_key);
    tls_ = opt_.certs->server_context();
  }
  // The event-driven front (http_front.hpp): idle or slow clients cost a buffer, not a
  // thread, so thousands of SDK connections kept alive do not lock others out.
  http_ = std::make_unique<HttpFront>();
  http_->set_payload_max_length(opt_.max_body);  // decompressed, checked by the route too
  // Bodies over --otlp-max-body as they arrive: answered as the route answers them.
  http_->set_body_limits(opt_.max_body, std::max(opt_.max_body * 4, size_t{256} << 20),
                         [this](std::string_view head) { return too_large_response(head); });
  add_routes();
  try {
    listener_ = std::make_unique<Listener>(opt_.address);
  } catch (const std::runtime_error& e) {
    http_.reset();
    throw std::runtime_error("cannot listen for OTLP on " + opt_.address + ": " + e.what());
  }
  port_ = listener_->port();
  opt_.max_connections = fit_open_files(opt_.max_connections);
  assembler_ = std::thread([this] { assemble_loop(); });
  http_->start(listener_->fd(), opt_.max_connections, std::max(1u, opt_.threads), tls_.get());
}

size_t OtlpReceiver::fit_open_files(size_t connections) {
  const rlim_t want = connections + 64;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) return connections;
  rl.rlim_cur = std::min(want, rl.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &rl);
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur >= want) return connections;
  const size_t fit = std::max<size_t>(rl.rlim_cur, 128) - 64;
  fmt::print(stderr,
             "snailtrail serve: warning: --otlp-max-connections {} lowered to {} (open-file "
             "limit {})\n",
             connections, fit, rl.rlim_cur);
  return fit;
}

void OtlpReceiver::stop() {
  if (!http_) return;
  http_->shutdown();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (assembler_.joinable()) assembler_.join();
  http_.reset();
  listener_.reset();
}

void OtlpReceiver::hold(bool on) {
  {
    std::lock_guard lock(mu_);
    held_ = on;
  }
  wake_.notify_all();
}

std::string OtlpReceiver::write_error() const {
  std::lock_guard lock(mu_);
  return write_error_;
}

// Into the buffer if it has room for the spans (or is empty: a request larger than the
// whole buffer still gets in, alone); false: the client is to retry later.
bool OtlpReceiver::admit(SpanSet& spans) {
  const size_t n = spans.spans.size();
  {
    std::lock_guard lock(mu_);
    if (buffered_ > 0 && buffered_ + n > opt_.buffer_spans) return false;
    buffered_ += n;
    last_admitted_ = n;
    counters_.buffered_spans = buffered_;
    buffer_.push_back({steady_now_ns(), std::move(spans)});
  }
  wake_.notify_one();
  return true;
}

bool OtlpReceiver::likely_full() const {
  std::lock_guard lock(mu_);
  return buffered_ > 0 && buffered_ + last_admitted_ > opt_.buffer_spans;
}

void OtlpReceiver::assemble_loop() {
  // Requests are grouped about 64 k spans at a time, each chunk followed by the idle
  // check and the output: a full buffer (a million spans) taken at once would hold the
  // completed traces back for seconds and push the open ones over their bounds.
  constexpr size_t kChunkSpans = size_t{1} << 16;
  std::vector<Arrived> batches;
  std::vector<SpanSet> done;
  for (;;) {
    bool last = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(100),
                     [&] { return stopping_ || (!held_ && !buffer_.empty()); });
      if (!held_ || stopping_) {
        size_t taken = 0;
        while (!buffer_.empty() && taken < kChunkSpans) {
          taken += buffer_.front().spans.spans.size();
          batches.push_back(std::move(buffer_.front()));
          buffer_.pop_front();
        }
        buffered_ -= taken;
        counters_.buffered_spans = buffered_;
      }
      last = stopping_ && buffer_.empty();
    }
    for (const Arrived& b : batches) traces_.add(b.spans, b.at_ns, done);
    batches.clear();
    if (last)
      traces_.take_all(done);
    else
      traces_.take_idle(steady_now_ns(), done);
    counters_.open_traces = traces_.open_traces();
    counters_.open_spans = traces_.open_spans();
    counters_.traces_evicted = traces_.evicted_traces();
    write_paths(done);
    done.clear();
    if (last) return;
  }
}

// Each trace's path as `critical-path` computes it on a file of one trace, written in
// pieces of about 1 MiB (thousands of traces may complete at once). One collection of
// the batch's traces serves the JSON lines and the live per-service totals.
void OtlpReceiver::write_paths(std::vector<SpanSet>& done) {
  if (done.empty()) return;
  requests::PathCollection all;
  std::vector<requests::UnitPaths> units;
  units.reserve(done.size());
  std::vector<uint32_t> tree_parent;
  const int64_t now = steady_now_ns();
  const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  for (const SpanSet& set : done) {
    const std::vector<requests::CriticalPath> paths = requests::critical_paths(set, &tree_parent);
    // Among the slowest of the window: its Waterfall rows, by the same critical_paths
    // (with its segments), built only for the traces the heap takes.
    if (paths.size() == 1 && slow_->wants(paths[0].duration_ns, set.spans.size(), now))
      slow_->add(report::WaterfallBuilder::build_unit(set), now, wall_ms);
    // With calling contexts: /api/critical-path's folded stacks need them.
    units.push_back(requests::summarize_paths(set, paths, tree_parent, true));
    all.add(units.back());
  }
  fmt::memory_buffer text;
  for (const auto& trace : all.traces()) {
    append_trace_path_json(text, all, trace);
    text.push_back('\n');
    ++counters_.traces_written;
    if (text.size() >= (size_t{1} << 20)) {
      write_out(text);
      text.clear();
    }
  }
  if (text.size() > 0) write_out(text);
  live_->add(std::move(units), all, now);
}

void OtlpReceiver::write_out(const fmt::memory_buffer& text) {
  {
    std::lock_guard lock(mu_);
    if (!write_error_.empty()) return;
  }
  // Only this thread writes; the lock guards the error, not the (maybe slow) write.
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0) {
    const std::string error =
        std::string("cannot write the critical paths: ") + std::strerror(errno);
    std::lock_guard lock(mu_);
    write_error_ = error;
  }
}

namespace {
std::atomic<bool> g_otlp_stop{false};
void on_otlp_signal(int) {
  g_otlp_stop = true;
}
}  // namespace

OtlpService::OtlpService(const OtlpOptions& options, const std::string& out_path, bool quiet)
    : options_(options), out_path_(out_path), quiet_(quiet), file_(nullptr, &std::fclose) {
  if (!out_path.empty() && out_path != "-") {
    file_.reset(std::fopen(out_path.c_str(), "w"));
    if (!file_) throw std::runtime_error("cannot write " + out_path + ": " + std::strerror(errno));
  }
  receiver_ = std::make_unique<OtlpReceiver>(options, file_ ? file_.get() : stdout);
}

OtlpService::~OtlpService() {
  if (!finished_) receiver_->stop();
}

void OtlpService::start() {
  receiver_->start();
  if (!quiet_)
    fmt::print(stderr, "snailtrail serve: OTLP/HTTP receiver on {}://{}:{}/v1/traces{}\n",
               options_.tls_cert.empty() ? "http" : "https", parse_address(options_.address).first,
               receiver_->port(), options_.auth.enabled() ? " (bearer token required)" : "");
}

void OtlpService::finish() {
  finished_ = true;
  receiver_->stop();
  const OtlpCounters& c = receiver_->counters();
  if (!quiet_)
    fmt::print(stderr,
               "snailtrail serve: {}, {} accepted, {} rejected; {} written ({} completed "
               "early by the open-trace bounds); {} requests refused as bad, {} too large, {} "
               "of another type, {} throttled (429)\n",
               counted(c.requests.load(), "OTLP request", "OTLP requests"),
               counted(c.spans_accepted.load(), "span", "spans"), c.spans_rejected.load(),
               counted(c.traces_written.load(), "trace", "traces"), c.traces_evicted.load(),
               c.bad_requests.load(), c.too_large.load(), c.unsupported_type.load(),
               c.throttled.load());
  if (!receiver_->write_error().empty()) throw std::runtime_error(receiver_->write_error());
  if (file_ && std::fclose(file_.release()) != 0)
    throw std::runtime_error("cannot write " + out_path_ + ": " + std::strerror(errno));
}

int run_otlp_server(const OtlpOptions& given, const std::string& out_path,
                    const std::string& port_file, bool quiet) {
  OtlpOptions options = given;
  if (!options.tls_cert.empty() && !options.certs)  // loaded here, for SIGHUP to reload it
    options.certs = std::make_shared<TlsCertificates>(options.tls_cert, options.tls_key);
  OtlpService service(options, out_path, quiet);
  g_otlp_stop = false;
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = on_otlp_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  std::signal(SIGPIPE, SIG_IGN);
  ReloadSignal hangup;  // SIGHUP: re-read the token files and the certificate
  service.start();
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f || std::fprintf(f, "otlp=%d\n", service.port()) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), port_file.c_str()) != 0)
      throw std::runtime_error("cannot write " + port_file + ": " + std::strerror(errno));
  }
  while (!g_otlp_stop && service.write_error().empty()) {
    hangup.poll(options.auth, options.certs.get(), !quiet);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  service.finish();
  return 0;
}

}  // namespace snailtrail::serve
