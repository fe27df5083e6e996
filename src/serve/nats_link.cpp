#include "serve/nats_link.hpp"

#include <nats/nats.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "serve/nats_creds.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::serve {

std::string nats_error(int status) {
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  std::string out = natsStatus_GetText(static_cast<natsStatus>(status));
  // The client's detail, without its source location "(file.c:N): ", when it adds one.
  std::string detail = text && last == static_cast<natsStatus>(status) ? text : "";
  if (const size_t loc = detail.find("): "); detail.rfind('(', 0) == 0 && loc != std::string::npos)
    detail.erase(0, loc + 3);
  if (!detail.empty() && detail != out) out += ": " + detail;
  return out;
}

bool is_nats_address(const std::string& s) {
  if (s.rfind("nats://", 0) == 0) return true;
  // tls://HOST:PORT/STREAM is NATS over TLS; tls://HOST:PORT (no stream) is serve's TCP
  // ingest over TLS (producer_link.hpp).
  constexpr size_t kTls = 6;  // "tls://"
  return s.rfind("tls://", 0) == 0 && s.find('/', kTls) != std::string::npos;
}

namespace {

// Where HOST:PORT starts in scheme://[userinfo@]HOST:PORT/..., and where the userinfo does
// (npos: none). The userinfo ends at the last '@' before the first '/' after the scheme.
struct UrlParts {
  size_t authority = std::string::npos, userinfo = std::string::npos, host = std::string::npos;
};

UrlParts url_parts(const std::string& s) {
  UrlParts p;
  const size_t scheme = s.find("://");
  if (scheme == std::string::npos) return p;
  p.authority = scheme + 3;
  const size_t end = std::min(s.find('/', p.authority), s.size());
  const size_t at = s.rfind('@', end == 0 ? 0 : end - 1);
  if (at != std::string::npos && at >= p.authority) {
    p.userinfo = p.authority;
    p.host = at + 1;
  } else {
    p.host = p.authority;
  }
  return p;
}

}  // namespace

std::string redact_nats_url(const std::string& s) {
  const UrlParts p = url_parts(s);
  if (p.userinfo == std::string::npos) return s;
  const std::string info = s.substr(p.userinfo, p.host - 1 - p.userinfo);
  const size_t colon = info.find(':');
  // USER:PASS keeps the user; a lone TOKEN is all secret.
  const std::string shown = colon == std::string::npos ? "***" : info.substr(0, colon) + ":***";
  return s.substr(0, p.userinfo) + shown + s.substr(p.host - 1);
}

NatsAddress parse_nats_address(const std::string& s) {
  const std::string shown = redact_nats_url(s);
  const std::string form = " (expected nats://HOST:PORT/STREAM or tls://HOST:PORT/STREAM)";
  if (!is_nats_address(s))
    throw std::invalid_argument("not a NATS address: \"" + shown + "\"" + form);
  const UrlParts p = url_parts(s);
  const size_t slash = s.find('/', p.authority);
  if (slash == std::string::npos || slash == p.host)
    throw std::invalid_argument("no server or no stream in \"" + shown + "\"" + form);
  NatsAddress a;
  a.tls = s.rfind("tls://", 0) == 0;
  a.server = s.substr(0, slash);
  a.stream = s.substr(slash + 1);
  a.text = shown;
  // HOST of HOST:PORT or [V6]:PORT.
  const std::string hostport = s.substr(p.host, slash - p.host);
  if (!hostport.empty() && hostport.front() == '[')
    a.host = hostport.substr(1, hostport.find(']') - 1);
  else
    a.host = hostport.substr(0, hostport.rfind(':'));
  if (a.stream.empty()) throw std::invalid_argument("no stream name in \"" + shown + "\"" + form);
  for (char c : a.stream)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      throw std::invalid_argument("stream name \"" + a.stream +
                                  "\": only letters, digits, '-' and '_' are allowed");
  return a;
}

// Failed async publishes, reported by the client's thread.
struct NatsPublishFailures {
  std::mutex mu;
  uint64_t count = 0;
  std::string first;
};

namespace {

void on_publish_error(jsCtx*, jsPubAckErr* pae, void* closure) {
  auto* f = static_cast<NatsPublishFailures*>(closure);
  std::lock_guard lock(f->mu);
  if (++f->count == 1)
    f->first = std::string(natsStatus_GetText(pae->Err)) +
               (pae->ErrText ? std::string(": ") + pae->ErrText : std::string());
}

}  // namespace

namespace {

// Files are checked before connecting, so that a typo is named as such, not as a refusal.
void check_readable(const std::string& file, const std::string& flag) {
  if (file.empty()) return;
  std::ifstream in(file);
  if (!in || in.peek() == std::ifstream::traits_type::eof())
    throw std::invalid_argument(
        flag + " " + file + ": " +
        (in ? "the file is empty" : "cannot read it (" + std::string(std::strerror(errno)) + ")"));
}

std::string slurp_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read it (" + std::string(std::strerror(errno)) + ")");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// What the client's credential callbacks present: the .creds file, read again at every
// (re)connection so that a renewed file is used, and whether the last signature was
// withheld for its leading zero byte (sign_nonce), so that the connection is tried again.
struct NatsCredsCallbacks {
  std::string file, flag;
  std::string seed;  // of the JWT just presented
  std::atomic<bool> withheld{false};
};

namespace {

natsStatus present_jwt(char** jwt, char** error, void* closure) {
  auto* c = static_cast<NatsCredsCallbacks*>(closure);
  try {
    NatsCreds creds = parse_nats_creds(slurp_file(c->file));
    c->seed = std::move(creds.seed);
    *jwt = strdup(creds.jwt.c_str());
    return NATS_OK;
  } catch (const std::exception& e) {
    *error = strdup((c->flag + " " + c->file + ": " + e.what()).c_str());
    return NATS_ERR;
  }
}

natsStatus sign_server_nonce(char** error, unsigned char** sig, int* length, const char* nonce,
                             void* closure) {
  auto* c = static_cast<NatsCredsCallbacks*>(closure);
  try {
    const std::vector<unsigned char> s = sign_nonce(c->seed, nonce ? nonce : "");
    if (s.empty()) {
      c->withheld = true;
      *error = strdup(
          "the signature of the server's nonce begins with a zero byte, which "
          "libnats would drop: connecting again");
      return NATS_ERR;
    }
    *sig = static_cast<unsigned char*>(std::malloc(s.size()));
    std::memcpy(*sig, s.data(), s.size());
    *length = static_cast<int>(s.size());
    return NATS_OK;
  } catch (const std::exception& e) {
    *error = strdup((c->flag + " " + c->file + ": " + e.what()).c_str());
    return NATS_ERR;
  }
}

// The client's options: URL, credentials, TLS. Throws std::invalid_argument for an
// unreadable file, std::runtime_error for an unusable .creds file, naming its option.
natsOptions* client_options(const NatsAddress& a, bool reconnect, const NatsAuth& auth,
                            NatsCredsCallbacks* creds) {
  check_readable(auth.creds, auth.creds_flag);
  check_readable(auth.tls_ca, auth.ca_flag);
  check_readable(auth.tls_cert, auth.cert_flag);
  check_readable(auth.tls_key, auth.key_flag);
  if (auth.tls_cert.empty() != auth.tls_key.empty())
    throw std::invalid_argument(auth.cert_flag + " and " + auth.key_flag + " go together");
  natsOptions* opts = nullptr;
  std::string failed;  // the option that failed
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, a.server.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 1000);
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, reconnect);
  if (s == NATS_OK && !auth.creds.empty()) {
    // Checked now, so that a bad file fails at once rather than as a refusal. Our own
    // callbacks rather than natsOptions_SetUserCredentialsFromFiles: see sign_nonce.
    try {
      sign_nonce(parse_nats_creds(slurp_file(auth.creds)).seed, "a nonce");
    } catch (const std::exception& e) {
      natsOptions_Destroy(opts);
      throw std::runtime_error(auth.creds_flag + " " + auth.creds +
                               ": not a usable NATS credentials file: " + e.what());
    }
    creds->file = auth.creds;
    creds->flag = auth.creds_flag;
    s = natsOptions_SetUserCredentialsCallbacks(opts, present_jwt, creds, sign_server_nonce, creds);
  }
  const bool secure = a.tls || !auth.tls_ca.empty() || !auth.tls_cert.empty();
  if (s == NATS_OK && secure) {
    s = natsOptions_SetSecure(opts, true);
    // Without a CA file, the system's store (Debian's ca-certificates).
    const std::string ca =
        auth.tls_ca.empty() ? std::string("/etc/ssl/certs/ca-certificates.crt") : auth.tls_ca;
    failed = auth.tls_ca.empty() ? "the system CA store " + ca : auth.ca_flag + " " + ca;
    if (s == NATS_OK) s = natsOptions_LoadCATrustedCertificates(opts, ca.c_str());
    // The certificate must name the host of the URL (libnats checks it only when told).
    if (s == NATS_OK) failed.clear();
    if (s == NATS_OK) s = natsOptions_SetExpectedHostname(opts, a.host.c_str());
    if (s == NATS_OK && !auth.tls_cert.empty()) {
      failed = auth.cert_flag + " " + auth.tls_cert + " / " + auth.key_flag + " " + auth.tls_key;
      s = natsOptions_LoadCertificatesChain(opts, auth.tls_cert.c_str(), auth.tls_key.c_str());
    }
  }
  if (s != NATS_OK) {
    const std::string why = nats_error(s);
    natsOptions_Destroy(opts);
    if (!failed.empty()) throw std::invalid_argument(failed + ": " + why);
    throw std::runtime_error("NATS client: " + why);
  }
  return opts;
}

// The server is not up (yet), or went away while we connected: worth another try. Any
// other failure (credentials refused, TLS, a bad credentials file) stays as it is.
bool worth_retrying(natsStatus s) {
  return s == NATS_NO_SERVER || s == NATS_IO_ERROR || s == NATS_TIMEOUT ||
         s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED ||
         s == NATS_STALE_CONNECTION;
}

// Why the connection failed, in the user's terms; libnats' text with the URL's password
// or token (if it ever quotes them) replaced.
std::string connect_failure(const NatsAddress& a, const NatsAuth& auth, natsStatus s) {
  std::string why = nats_error(s);
  const size_t from = a.server.find("://") + 3, at = a.server.rfind('@');
  if (at != std::string::npos && at > from) {
    const std::string info = a.server.substr(from, at - from);  // USER:PASS or TOKEN
    for (size_t i; (i = why.find(info)) != std::string::npos;) why.replace(i, info.size(), "***");
  }
  const bool refused = s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED ||
                       why.find("uthorization") != std::string::npos;
  const bool in_url = a.server.find('@') != std::string::npos;
  if (refused && !in_url && auth.creds.empty())
    return "nats-server refused " + a.text + " without credentials: give them in the URL (" +
           a.text.substr(0, a.text.find("://") + 3) + "USER:PASS@... or TOKEN@...) or " +
           auth.creds_flag + " FILE: " + why;
  if (refused)
    return "nats-server refused the credentials of " + a.text + " (" +
           (auth.creds.empty() ? std::string("the URL's user and password or token")
                               : auth.creds_flag + " " + auth.creds) +
           "): " + why;
  if (!auth.creds.empty() && why.find(auth.creds) != std::string::npos)
    return auth.creds_flag + " " + auth.creds + ": not a usable NATS credentials file: " + why;
  if (s == NATS_PROTOCOL_ERROR && (a.tls || !auth.tls_ca.empty()) && auth.tls_cert.empty())
    return "cannot connect to " + a.text + ": " + why +
           " (the server closed the connection: does it want a client certificate? " +
           auth.cert_flag + ")";
  if (s == NATS_SECURE_CONNECTION_REQUIRED)
    return a.text + " requires TLS: use tls://" + a.text.substr(a.text.find("://") + 3) + " (and " +
           auth.ca_flag + " for its CA): " + why;
  if (s == NATS_SECURE_CONNECTION_WANTED)
    return a.text + " does not offer TLS (TLS was asked for by tls:// or " + auth.ca_flag +
           "): " + why;
  if (s == NATS_SSL_ERROR)
    return "TLS with " + a.text + " failed (is its certificate signed by " +
           (auth.tls_ca.empty() ? "a CA of the system store" : auth.ca_flag + " " + auth.tls_ca) +
           " and issued for " + a.host + "?): " + why;
  return "cannot connect to " + a.text + ": " + why;
}

}  // namespace

NatsLink::NatsLink(const NatsAddress& address, double connect_timeout_s, bool reconnect,
                   const NatsAuth& auth)
    : address_(address),
      failures_(std::make_unique<NatsPublishFailures>()),
      creds_(std::make_unique<NatsCredsCallbacks>()) {
  natsOptions* opts = client_options(address_, reconnect, auth, creds_.get());
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(connect_timeout_s, 0.0));
  natsStatus s = NATS_OK;
  for (int withheld = 0;;) {
    creds_->withheld = false;
    s = natsConnection_Connect(&nc_, opts);
    // A withheld signature (1 in 256) is worth another nonce, a few times at most.
    if (s != NATS_OK && creds_->withheld && ++withheld < 8) continue;
    if (s == NATS_OK || !worth_retrying(s) || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  natsOptions_Destroy(opts);
  if (s != NATS_OK) throw std::runtime_error(connect_failure(address_, auth, s));
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = 64;  // messages of up to a few thousand events in flight
  jo.PublishAsync.ErrHandler = on_publish_error;
  jo.PublishAsync.ErrHandlerClosure = failures_.get();
  jo.Wait = 5000;
  s = natsConnection_JetStream(&js_, nc_, &jo);
  if (s != NATS_OK) {
    natsConnection_Destroy(nc_);
    throw std::runtime_error("NATS JetStream context: " + nats_error(s));
  }
}

NatsLink::~NatsLink() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

uint64_t NatsLink::failed() const {
  std::lock_guard lock(failures_->mu);
  return failures_->count;
}

std::string NatsLink::first_failure() const {
  std::lock_guard lock(failures_->mu);
  return failures_->first;
}

void NatsLink::ensure_stream() {
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, js_, address_.stream.c_str(), nullptr, &code);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(si);
    return;
  }
  if (s == NATS_NOT_FOUND) {
    const std::string subjects = address_.stream + ".>";
    const char* list[] = {subjects.c_str()};
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = address_.stream.c_str();
    cfg.Subjects = list;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    s = js_AddStream(&si, js_, &cfg, nullptr, &code);
    // Another producer or consumer may have created it meanwhile.
    if (s != NATS_OK &&
        js_GetStreamInfo(&si, js_, address_.stream.c_str(), nullptr, &code) == NATS_OK)
      s = NATS_OK;
    if (s == NATS_OK) {
      jsStreamInfo_Destroy(si);
      return;
    }
  }
  throw std::runtime_error("cannot find or create the JetStream stream \"" + address_.stream +
                           "\" on " + address_.text + ": " + nats_error(s) +
                           (s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT
                                ? " (is JetStream enabled? start nats-server with -js)"
                                : ""));
}

NatsPublisher::NatsPublisher(const NatsAddress& address, double connect_timeout_s,
                             size_t events_per_message, NatsIdentity identity, const NatsAuth& auth)
    // Without reconnecting: what the client would buffer during a reconnect could be
    // stored before messages lost in flight, out of order; a lost connection fails the
    // producer instead, and a new one resumes (NatsIdentity).
    : link_(address, connect_timeout_s, /*reconnect=*/identity.prefix.empty(), auth),
      per_message_(std::max<size_t>(events_per_message, 1)),
      identity_(std::move(identity)) {
  link_.ensure_stream();
}

NatsPublisher::~NatsPublisher() = default;

void NatsPublisher::lost(const std::string& what, int status) const {
  throw std::runtime_error(what + " " + link_.address().text + ": " + nats_error(status) +
                           (natsConnection_IsClosed(link_.connection())
                                ? " (the connection to the server was lost)"
                                : ""));
}

namespace {

// FNV-1a over 64-bit words.
uint64_t mix(uint64_t h, uint64_t x) {
  return (h ^ x) * 0x100000001b3ULL;
}

uint64_t hash_bytes(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = mix(h, c);
  return h;
}

// The index i of a message id "PREFIX.W.i", 0 if it is not one of PREFIX's.
uint64_t id_index(const char* id, const std::string& prefix, const std::string& worker) {
  const std::string head = prefix + "." + worker + ".";
  if (!id || std::strncmp(id, head.c_str(), head.size()) != 0) return 0;
  char* end = nullptr;
  const unsigned long long i = std::strtoull(id + head.size(), &end, 10);
  return end && *end == '\0' ? i : 0;
}

}  // namespace

// Resume: the index of the last message of `worker` stored under our prefix, else 0.
uint64_t NatsPublisher::stored_until(const std::string& worker) {
  const std::string subject = link_.address().stream + "." + worker;
  natsMsg* m = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetLastMsg(&m, link_.js(), link_.address().stream.c_str(),
                                     subject.c_str(), nullptr, &code);
  if (s == NATS_NOT_FOUND) return 0;
  if (s != NATS_OK) lost("cannot read what is stored on " + subject + " of", s);
  const char* id = nullptr;
  uint64_t i = 0;
  if (natsMsgHeader_Get(m, "Nats-Msg-Id", &id) == NATS_OK)
    i = id_index(id, identity_.prefix, worker);
  natsMsg_Destroy(m);
  return i;
}

void NatsPublisher::publish(const std::string& subject, const Trace& message,
                            const std::string& id) {
  SnailWriteOptions w;
  w.version = 1;  // a stream without index, as on the TCP ingest
  w.events_per_block = static_cast<uint32_t>(per_message_);
  const std::string bytes = to_snail(message, w);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  if (!id.empty()) po.MsgId = id.c_str();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  natsStatus s = NATS_OK;
  // With the most publishes in flight, a publish waits for acknowledgements and times out
  // after a while: a slow server, not a failure (unless the connection is gone).
  do {
    s = js_PublishAsync(link_.js(), subject.c_str(), bytes.data(), static_cast<int>(bytes.size()),
                        &po);
  } while (s == NATS_TIMEOUT && !natsConnection_IsClosed(link_.connection()) &&
           std::chrono::steady_clock::now() < deadline);
  if (s != NATS_OK) lost("cannot publish to", s);
  stats_.bytes += bytes.size();
  stats_.events += message.events.size();
  ++stats_.messages;
}

void NatsPublisher::flush_worker(uint32_t worker) {
  Trace& buf = buffers_[worker];
  if (buf.events.empty()) return;
  const uint64_t index = ++published_[worker];
  std::string id;
  if (!identity_.prefix.empty()) {
    const std::string w = std::to_string(worker);
    if (identity_.resume && !stored_.count(worker)) stored_[worker] = stored_until(w);
    if (identity_.resume && index <= stored_[worker]) {
      stats_.skipped_events += buf.events.size();
      ++stats_.skipped_messages;
      buf.events.clear();
      return;
    }
    id = identity_.prefix + "." + w + "." + std::to_string(index);
  }
  buf.source = source_;
  publish(link_.address().stream + "." + std::to_string(worker), buf, id);
  buf.events.clear();
}

void NatsPublisher::add(const Trace& chunk) {
  if (!chunk.worker_names.empty() || !chunk.operator_names.empty()) {
    Trace names;
    names.source = source_ = chunk.source;
    names.worker_names = chunk.worker_names;
    names.operator_names = chunk.operator_names;
    // The names of each producer's workers (several producers of one trace differ).
    const std::string id =
        identity_.prefix.empty()
            ? ""
            : fmt::format("{}.names.{:016x}", identity_.prefix, hash_bytes(to_snail(names)));
    publish(link_.address().stream + ".names", names, id);
  }
  for (const Event& e : chunk.events) {
    Trace& buf = buffers_[e.worker];
    buf.events.push_back(e);
    if (buf.events.size() >= per_message_) flush_worker(e.worker);
  }
}

void NatsPublisher::flush() {
  for (auto& [worker, buf] : buffers_) flush_worker(worker);
}

void NatsPublisher::finish(double timeout_s) {
  flush();
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 100;
  // Waited for in short steps, so that a lost connection fails at once.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(timeout_s, 0.0));
  natsStatus s = NATS_OK;
  for (;;) {
    s = js_PublishAsyncComplete(link_.js(), &po);
    if (s != NATS_TIMEOUT || natsConnection_IsClosed(link_.connection()) ||
        std::chrono::steady_clock::now() >= deadline)
      break;
  }
  if (s != NATS_OK) lost("not every message was stored by", s);
  if (link_.failed() > 0)
    throw std::runtime_error(std::to_string(link_.failed()) + " publish(es) to " +
                             link_.address().text + " failed: " + link_.first_failure());
}

namespace {

// The id prefix of a send: the same trace sent with the same batch size and pacing mode
// is cut into the same messages.
std::string send_identity(const Trace& trace, const SendOptions& o) {
  uint64_t speed = 0, rate = 0;  // the pacing cuts the chunks (send_trace_nats)
  std::memcpy(&speed, &o.speed, sizeof speed);
  std::memcpy(&rate, &o.rate, sizeof rate);
  uint64_t h = mix(mix(mix(0xcbf29ce484222325ULL, o.batch_events), speed), rate);
  for (const Event& e : trace.events) {
    uint64_t words[sizeof(Event) / 8];
    static_assert(sizeof(Event) % 8 == 0);
    std::memcpy(words, &e, sizeof(Event));
    for (uint64_t x : words) h = mix(h, x);
  }
  return fmt::format("st{:016x}", h);
}

}  // namespace

SendStats send_trace_nats(const Trace& trace, const SendOptions& o) {
  if (o.repeat != 1) throw std::invalid_argument("--repeat is for the TCP path, not nats://");
  if (o.speed < 0 || o.rate < 0) throw std::invalid_argument("speed and rate must be positive");
  const auto start = std::chrono::steady_clock::now();
  auto selected = [&](uint32_t w) {
    return o.workers.empty() || std::find(o.workers.begin(), o.workers.end(), w) != o.workers.end();
  };
  std::vector<uint32_t> order;
  order.reserve(trace.events.size());
  for (uint32_t i = 0; i < trace.events.size(); ++i)
    if (selected(trace.events[i].worker)) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return trace.events[a].ts < trace.events[b].ts; });
  const bool paced = o.speed > 0 || o.rate > 0;
  NatsAuth auth;
  auth.creds = o.nats_creds;
  auth.tls_ca = o.tls_ca;
  auth.ca_flag = "--tls-ca";
  auth.tls_cert = o.nats_tls_cert;
  auth.tls_key = o.nats_tls_key;
  NatsPublisher pub(parse_nats_address(o.to), o.connect_timeout_s, o.batch_events,
                    NatsIdentity{send_identity(trace, o), o.resume}, auth);
  try {
    Trace chunk;
    chunk.source = trace.source;
    for (const auto& [id, name] : trace.worker_names)
      if (selected(id)) chunk.worker_names.emplace(id, name);
    chunk.operator_names = trace.operator_names;
    pub.add(chunk);  // the names first
    chunk.worker_names.clear();
    chunk.operator_names.clear();
    const int64_t t0 = order.empty() ? 0 : trace.events[order.front()].ts;
    auto due = [&](size_t k) { return send_due(o, start, trace.events[order[k]].ts - t0, k); };
    for (size_t i = 0, j = 0; i < order.size(); i = j) {
      // Paced, a chunk holds the events due within 50 ms of its first (at most a batch), and
      // leaves when its last is due, as on TCP. The cut depends on the options only.
      j = std::min(order.size(), i + o.batch_events);
      if (paced) {
        const auto limit = due(i) + std::chrono::milliseconds(50);
        for (size_t k = i + 1; k < j; ++k)
          if (due(k) > limit) {
            j = k;
            break;
          }
        std::this_thread::sleep_until(due(j - 1));
      }
      chunk.events.resize(j - i);
      for (size_t k = i; k < j; ++k) chunk.events[k - i] = trace.events[order[k]];
      pub.add(chunk);
      if (paced) pub.flush();  // each chunk's events leave now (one message per worker)
    }
    pub.finish();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(
        std::string(e.what()) + "; " + std::to_string(pub.stats().messages) +
        " message(s) published, not all of them stored: run the same send again with --resume "
        "to publish the rest (nothing is stored twice)");
  }
  SendStats stats;
  stats.events = pub.stats().events;
  stats.bytes = pub.stats().bytes;
  stats.skipped_events = pub.stats().skipped_events;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace snailtrail::serve
