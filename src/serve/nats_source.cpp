#include "serve/nats_source.hpp"

#include <nats/nats.h>

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "trace/stream_decoder.hpp"

namespace snailtrail::serve {
namespace {

// Messages per pull request. One: with libnats 3.4.1 (Debian 12), fetching 64 at once
// corrupted the heap now and then with several consumers on a loaded machine (glibc's
// "free(): invalid pointer" in natsMsgList_Destroy; 5 of ~30 runs of
// scripts/nats-bench.sh), never with one (0 of 29). A message carries up to 4096
// events, so one per request costs little.
constexpr int kFetchBatch = 1;
constexpr int64_t kFetchWaitMs = 200;  // a pull request's wait when nothing is stored
// Unacknowledged messages are sent again after this long; the consumer skips them by
// their stream sequence, so a window held back for longer costs bandwidth, not output.
constexpr int64_t kAckWaitNs = 300'000'000'000;

}  // namespace

NatsSource::NatsSource(const NatsSourceOptions& options, NatsProgress& progress,
                       IngestCounters& counters, bool log)
    : options_(options),
      progress_(progress),
      counters_(counters),
      log_(log),
      link_(parse_nats_address(options.address), options.connect_timeout_s) {
  if (options_.durable.empty()) throw std::invalid_argument("--nats needs --durable NAME");
  for (char c : options_.durable)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      throw std::invalid_argument("--durable \"" + options_.durable +
                                  "\": only letters, digits, '-' and '_' are allowed");
  link_.ensure_stream();
  const std::string& stream = link_.address().stream;
  // The analysis restarts from the stream's first message (its state is not
  // checkpointed), so the durable starts there too: an existing one is replaced.
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s =
      js_DeleteConsumer(link_.js(), stream.c_str(), options_.durable.c_str(), nullptr, &code);
  if (s != NATS_OK && s != NATS_NOT_FOUND)
    throw std::runtime_error("cannot reset the consumer \"" + options_.durable + "\" of " +
                             options_.address + ": " + nats_error(s));
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.Durable = options_.durable.c_str();
  so.Config.DeliverPolicy = js_DeliverAll;
  so.Config.AckPolicy = js_AckAll;
  so.Config.AckWait = kAckWaitNs;
  so.Config.MaxAckPending = -1;  // held until windows close: no bound, or reading stalls
  const std::string subjects = stream + ".>";
  s = js_PullSubscribe(&sub_, link_.js(), subjects.c_str(), options_.durable.c_str(), nullptr, &so,
                       &code);
  if (s != NATS_OK)
    throw std::runtime_error("cannot create the consumer \"" + options_.durable + "\" on " +
                             options_.address + ": " + nats_error(s));
  if (log_)
    fmt::print(stderr, "snailtrail serve: reading {} through the durable consumer {}\n",
               options_.address, options_.durable);
}

NatsSource::~NatsSource() {
  natsSubscription_Destroy(sub_);
}

// Decodes one message (a whole .snail stream) into a batch.
void NatsSource::take(void* raw, BatchQueue& queue) {
  IngestCounters& counters = counters_;
  natsMsg* msg = static_cast<natsMsg*>(raw);
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) return;  // not a JetStream message
  const uint64_t seq = meta->Sequence.Stream;
  counters_.nats_pending = meta->NumPending;
  jsMsgMetaData_Destroy(meta);
  if (seq <= last_seq_) {
    ++counters_.nats_redelivered;
    return;
  }
  last_seq_ = seq;
  ++counters_.nats_messages;
  const auto* data = reinterpret_cast<const uint8_t*>(natsMsg_GetData(msg));
  const auto n = static_cast<size_t>(natsMsg_GetDataLength(msg));
  const std::string name =
      fmt::format("{} message {} ({})", options_.address, seq, natsMsg_GetSubject(msg));
  StreamDecoder decoder(name);
  Trace decoded;
  decoder.feed(std::span<const uint8_t>(data, n), decoded);
  decoder.finish(decoded);
  const StreamStats& st = decoder.stats();
  counters.bytes += n;
  counters.bad_blocks += st.bad_blocks;
  counters.bad_lines += st.bad_lines;
  counters.truncated += st.truncated;
  if (decoder.broken() || !st.first_error.empty()) {
    ++counters.broken_streams;
    if (log_)
      fmt::print(stderr, "snailtrail serve: {}: {}\n", name,
                 decoder.broken() ? decoder.broken_reason() : st.first_error);
  }
  int64_t max_ts = INT64_MIN;
  for (const Event& e : decoded.events) max_ts = std::max(max_ts, e.ts);
  const char* reply = natsMsg_GetReply(msg);
  unacked_.push_back({seq, max_ts, reply ? reply : ""});
  counters_.nats_ack_pending = unacked_.size();
  if (decoded.events.empty() && decoded.worker_names.empty() && decoded.operator_names.empty())
    return;
  Batch batch;
  batch.first = first_;
  first_ = false;
  batch.events.assign(decoded.events.begin(), decoded.events.end());
  counters.events += batch.events.size();
  batch.names.worker_names.swap(decoded.worker_names);
  batch.names.operator_names.swap(decoded.operator_names);
  queue.push(std::move(batch));
}

void NatsSource::acknowledge() {
  const int64_t written = progress_.written_until.load();
  auto done = [&](const Unacked& u) { return written == INT64_MAX || u.max_ts < written; };
  if (unacked_.empty() || !done(unacked_.front())) return;
  // AckAll: acknowledging the last message that is done acknowledges those before it.
  while (unacked_.size() > 1 && done(unacked_[1])) unacked_.pop_front();
  const Unacked& last = unacked_.front();
  if (!last.reply.empty() &&
      natsConnection_PublishString(link_.connection(), last.reply.c_str(), "+ACK") == NATS_OK)
    counters_.nats_acked_seq = last.seq;
  unacked_.pop_front();
  counters_.nats_ack_pending = unacked_.size();
  if (written == INT64_MAX) natsConnection_FlushTimeout(link_.connection(), 2000);
}

// Nothing stored is left for this consumer (its pending count on the server is 0).
bool NatsSource::all_read() {
  jsConsumerInfo* ci = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  if (js_GetConsumerInfo(&ci, link_.js(), link_.address().stream.c_str(), options_.durable.c_str(),
                         nullptr, &code) != NATS_OK)
    return false;
  const bool done = ci->NumPending == 0;
  counters_.nats_pending = ci->NumPending;
  jsConsumerInfo_Destroy(ci);
  return done;
}

void NatsSource::run(BatchQueue& queue, const std::atomic<bool>& stop) {
  bool reported = false;
  while (!stop.load()) {
    natsMsgList list{nullptr, 0};
    jsErrCode code = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(&list, sub_, kFetchBatch, kFetchWaitMs, &code);
    if (s == NATS_OK) {
      reported = false;
      for (int i = 0; i < list.Count; ++i) take(list.Msgs[i], queue);
      natsMsgList_Destroy(&list);
    } else if (s == NATS_TIMEOUT) {
      if (options_.drain && all_read()) {
        progress_.drained = true;
        break;
      }
    } else {
      // The server is away (restarting): the client reconnects; say so once.
      if (log_ && !reported)
        fmt::print(stderr, "snailtrail serve: reading {}: {}; retrying\n", options_.address,
                   nats_error(s));
      reported = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    acknowledge();
  }
}

}  // namespace snailtrail::serve
