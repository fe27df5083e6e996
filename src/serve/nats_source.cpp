#include "serve/nats_source.hpp"

#include <nats/nats.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "serve/pump.hpp"
#include "trace/stream_decoder.hpp"

namespace snailtrail::serve {
namespace {

// Messages per pull request. The requests are our own ($JS.API.CONSUMER.MSG.NEXT answered
// on an inbox of ours), not libnats' natsSubscription_Fetch: with libnats 3.4.1 (Debian
// 12), fetching 64 at once that way corrupted the heap now and then with several
// consumers on a loaded machine ("free(): invalid pointer" in natsMsgList_Destroy; 5 of
// ~30 runs of scripts/nats-bench.sh). A message holds up to 4096 events (~160 KB): 16
// per request keep what is in flight to a few MB.
constexpr int kFetchBatch = 16;
constexpr int64_t kFetchWaitMs = 200;  // a pull request's wait when nothing is stored
}  // namespace

NatsSource::NatsSource(const NatsSourceOptions& options, NatsProgress& progress,
                       IngestCounters& counters, bool log)
    : options_(options),
      progress_(progress),
      counters_(counters),
      log_(log),
      link_(parse_nats_address(options.address), options.connect_timeout_s, /*reconnect=*/true,
            options.auth) {
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
                             link_.address().text + ": " + nats_error(s));
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.Durable = options_.durable.c_str();
  so.Config.DeliverPolicy = js_DeliverAll;
  so.Config.AckPolicy = js_AckAll;
  if (!(options_.ack_wait_s > 0) || options_.ack_wait_s > 1e9)
    throw std::invalid_argument("--nats-ack-wait must be positive");
  so.Config.AckWait = static_cast<int64_t>(options_.ack_wait_s * 1e9);
  so.Config.MaxAckPending = -1;  // held until windows close: no bound, or reading stalls
  const std::string subjects = stream + ".>";
  s = js_PullSubscribe(&sub_, link_.js(), subjects.c_str(), options_.durable.c_str(), nullptr, &so,
                       &code);
  if (s != NATS_OK)
    throw std::runtime_error("cannot create the consumer \"" + options_.durable + "\" on " +
                             link_.address().text + ": " + nats_error(s));
  // Messages are taken in stream order from the first one stored: a message the consumer
  // skips (see fill_gap) is noticed by its sequence.
  jsStreamInfo* si = nullptr;
  if (js_GetStreamInfo(&si, link_.js(), stream.c_str(), nullptr, &code) == NATS_OK) {
    if (si->State.FirstSeq > 0) last_seq_ = si->State.FirstSeq - 1;
    jsStreamInfo_Destroy(si);
  }
  // Pull requests are answered on an inbox of ours (see pull()).
  natsInbox* inbox = nullptr;
  if (natsInbox_Create(&inbox) != NATS_OK)
    throw std::runtime_error("cannot create an inbox: " + nats_error(NATS_NO_MEMORY));
  inbox_ = inbox;
  natsInbox_Destroy(inbox);
  next_subject_ = "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + options_.durable;
  s = natsConnection_SubscribeSync(&inbox_sub_, link_.connection(), inbox_.c_str());
  if (s == NATS_OK) s = natsSubscription_SetPendingLimits(inbox_sub_, -1, -1);
  if (s != NATS_OK)
    throw std::runtime_error("cannot subscribe on " + link_.address().text + ": " + nats_error(s));
  if (log_)
    fmt::print(stderr, "snailtrail serve: reading {} through the durable consumer {}\n",
               link_.address().text, options_.durable);
}

NatsSource::~NatsSource() {
  natsSubscription_Destroy(inbox_sub_);
  natsSubscription_Destroy(sub_);
}

// Decodes one message (a whole .snail stream: `n` bytes at `data`) into a batch.
void NatsSource::take(uint64_t seq, const char* subject, const char* data, int n, const char* reply,
                      BatchQueue& queue) {
  last_seq_ = seq;
  ++counters_.nats_messages;
  const std::string name = fmt::format("{} message {} ({})", link_.address().text, seq, subject);
  StreamDecoder decoder(name);
  Trace decoded;
  const auto bytes = static_cast<size_t>(std::max(n, 0));
  decoder.feed(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data), bytes), decoded);
  decoder.finish(decoded);
  const StreamStats& st = decoder.stats();
  counters_.bytes += bytes;
  counters_.bad_blocks += st.bad_blocks;
  counters_.bad_lines += st.bad_lines;
  counters_.truncated += st.truncated;
  if (decoder.broken() || !st.first_error.empty()) {
    ++counters_.broken_streams;
    if (log_)
      fmt::print(stderr, "snailtrail serve: {}: {}\n", name,
                 decoder.broken() ? decoder.broken_reason() : st.first_error);
  }
  int64_t max_ts = INT64_MIN;
  for (const Event& e : decoded.events) max_ts = std::max(max_ts, e.ts);
  unacked_.push_back({seq, max_ts, reply ? reply : ""});
  counters_.nats_ack_pending = unacked_.size();
  queue_decoded(decoded, first_, queue, counters_);
}

// Takes the messages after the last one taken and before `until` by their stream
// sequence. The consumer skips messages it delivered that never arrived (in flight when
// the server stopped) until its ack wait ends; events must be taken in order, so they
// are fetched directly. False when the server cannot be asked now.
bool NatsSource::fill_gap(uint64_t until, BatchQueue& queue) {
  const std::string& stream = link_.address().stream;
  while (last_seq_ + 1 < until) {
    const uint64_t seq = last_seq_ + 1;
    natsMsg* m = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const natsStatus s = js_GetMsg(&m, link_.js(), stream.c_str(), seq, nullptr, &code);
    if (s == NATS_NOT_FOUND) {
      // Removed from the stream (its limits, or deleted) before it was read: logged.
      if (log_)
        fmt::print(stderr, "snailtrail serve: {} message {} is no longer in the stream; skipped\n",
                   link_.address().text, seq);
      ++counters_.broken_streams;
      last_seq_ = seq;
      continue;
    }
    if (s != NATS_OK) return false;
    ++counters_.nats_gap_fetched;
    take(seq, natsMsg_GetSubject(m), natsMsg_GetData(m), natsMsg_GetDataLength(m), nullptr, queue);
    natsMsg_Destroy(m);
  }
  return true;
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

// Everything stored was taken: the consumer has nothing left to deliver, and what it
// delivered without arriving (see fill_gap) is fetched by sequence.
bool NatsSource::all_read(BatchQueue& queue) {
  const std::string& stream = link_.address().stream;
  jsConsumerInfo* ci = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  if (js_GetConsumerInfo(&ci, link_.js(), stream.c_str(), options_.durable.c_str(), nullptr,
                         &code) != NATS_OK)
    return false;
  const uint64_t pending = ci->NumPending;
  counters_.nats_pending = pending;
  jsConsumerInfo_Destroy(ci);
  if (pending > 0) return false;
  jsStreamInfo* si = nullptr;
  if (js_GetStreamInfo(&si, link_.js(), stream.c_str(), nullptr, &code) != NATS_OK) return false;
  const uint64_t last = si->State.LastSeq;
  jsStreamInfo_Destroy(si);
  return fill_gap(last + 1, queue) && last_seq_ >= last;
}

// One message delivered by the consumer: taken unless it came before (redelivered).
void NatsSource::deliver(natsMsg* msg, BatchQueue& queue) {
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) return;  // not a JetStream message
  const uint64_t seq = meta->Sequence.Stream;
  counters_.nats_pending = meta->NumPending;
  jsMsgMetaData_Destroy(meta);
  if (seq <= last_seq_) {
    ++counters_.nats_redelivered;  // after the ack wait, or fetched by sequence
    return;
  }
  // A gap: taken by sequence first; if that fails now, this message comes again.
  if (seq > last_seq_ + 1 && !fill_gap(seq, queue)) return;
  take(seq, natsMsg_GetSubject(msg), natsMsg_GetData(msg), natsMsg_GetDataLength(msg),
       natsMsg_GetReply(msg), queue);
}

// One pull request for up to kFetchBatch messages, each taken as it arrives. The request
// ends with the batch full or with the server's status message (408: it waited
// kFetchWaitMs; 404, 409: nothing, or the consumer changed), or after kFetchWaitMs plus a
// second without an answer (the server away). A late answer to an earlier request lands
// here too: its messages are told apart by their stream sequence, and its status only
// ends the current request early. NATS_OK: something was delivered; NATS_TIMEOUT: nothing.
int NatsSource::pull(BatchQueue& queue) {
  const std::string body =
      fmt::format(R"({{"batch":{},"expires":{}}})", kFetchBatch, kFetchWaitMs * 1'000'000);
  natsStatus s =
      natsConnection_PublishRequest(link_.connection(), next_subject_.c_str(), inbox_.c_str(),
                                    body.data(), static_cast<int>(body.size()));
  if (s != NATS_OK) return s;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kFetchWaitMs + 1000);
  int delivered = 0;
  while (delivered < kFetchBatch) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    natsMsg* msg = nullptr;
    s = natsSubscription_NextMsg(&msg, inbox_sub_, left);
    if (s == NATS_TIMEOUT) break;
    if (s != NATS_OK) return s;
    const char* reply = natsMsg_GetReply(msg);
    const bool status = reply == nullptr || std::strncmp(reply, "$JS.ACK.", 8) != 0;
    if (!status) {
      deliver(msg, queue);
      ++delivered;
    }
    natsMsg_Destroy(msg);
    if (status) break;
  }
  return delivered > 0 ? NATS_OK : NATS_TIMEOUT;
}

void NatsSource::run(BatchQueue& queue, const std::atomic<bool>& stop) {
  bool reported = false;
  // Idle and everything read: without --drain the next look at the consumer and the
  // stream (two API requests) waits kIdleRecheck; a message taken brings it forward.
  constexpr auto kIdleRecheck = std::chrono::seconds(1);
  auto next_idle_check = std::chrono::steady_clock::time_point{};
  while (!stop.load()) {
    const auto s = static_cast<natsStatus>(pull(queue));
    if (s == NATS_OK) {
      reported = false;
      next_idle_check = {};
    } else if (s == NATS_TIMEOUT) {
      const auto now = std::chrono::steady_clock::now();
      if (options_.drain || now >= next_idle_check) {
        const bool read = all_read(queue);
        if (read && options_.drain) {
          progress_.drained = true;
          break;
        }
        if (read) next_idle_check = now + kIdleRecheck;
      }
    } else {
      // The server is away (restarting): the client reconnects; say so once.
      if (log_ && !reported)
        fmt::print(stderr, "snailtrail serve: reading {}: {}; retrying\n", link_.address().text,
                   nats_error(s));
      reported = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    acknowledge();
  }
}

}  // namespace snailtrail::serve
