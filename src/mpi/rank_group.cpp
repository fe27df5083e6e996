#include "mpi/rank_group.hpp"
#include "trace/environment.hpp"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

namespace snailtrail::mpi {

namespace {

constexpr int kTag = 2020;                  // the streams to rank 0
constexpr int kTagMessage = 2021;           // messages between any two ranks
constexpr size_t kPiece = size_t{1} << 28;  // MPI counts are int: send in pieces
// How long the MPI thread sleeps between polls (MPI_Iprobe, MPI_Test): from 100 us after
// a message, doubling while nothing comes, up to 4 ms: short against the analysis, and
// polling costs next to no CPU.
constexpr int64_t kPollMinUs = 100, kPollMaxUs = 4000;

struct Backoff {
  int64_t us = kPollMinUs;
  void reset() { us = kPollMinUs; }
  void sleep() {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    us = std::min(us * 2, kPollMaxUs);
  }
};

std::optional<int> env_int(const char* name) {
  const char* v = environment_value(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > (1 << 30)) return std::nullopt;
  return static_cast<int>(n);
}

// Open MPI binds each rank to one core by default when it starts at most two per host (to
// a socket beyond): a rank's analysis threads, its MPI thread and its writer would share
// that core while the other cores idle (measured: each of two ranks on 2 cores at 82-85 %
// of a core, the writer unable to use the core the other rank had left). Unless the user
// asked for a binding (mpirun --bind-to sets OMPI_MCA_hwloc_base_binding_policy), the
// rank may run on every core; before any thread starts, so that all inherit it.
void undo_default_binding() {
  const char* bound = environment_value("OMPI_MCA_orte_bound_at_launch");
  if (!bound || std::string_view(bound) != "1" ||
      environment_value("OMPI_MCA_hwloc_base_binding_policy"))
    return;
  cpu_set_t all;
  CPU_ZERO(&all);
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &all);
  sched_setaffinity(0, sizeof all, &all);  // if refused, the rank stays where it was bound
}

// Open MPI components this rank does without, unless the user chose (mpirun --mca pml ...,
// OMPI_MCA_pml, OMPI_MCA_osc): what the ranks of `analyze` exchange is little (summaries,
// hand-overs, at most the output), which the "ob1" layer over shared memory or TCP
// carries well.
// - "cm" probes for Omni-Path and libfabric networks in MPI_Init: ~0.2 s and CPU at every
//   start (`mpirun -np 2 analyze` of a tiny trace 0.33 s, 0.15 s without it).
// - the UCX components load libucm, which hooks malloc and mmap when loaded: MPI_Init runs
//   on the MPI thread while the analysis allocates, and that corrupted the heap (a rank
//   crashed in malloc during its first windows, about once in 40 runs).
void skip_unneeded_components() {
  setenv("OMPI_MCA_pml", "^ucx,cm", 0);
  setenv("OMPI_MCA_osc", "^ucx", 0);
}

}  // namespace

unsigned ranks_on_this_host() {
  const std::optional<int> n = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  return n && *n > 0 ? static_cast<unsigned>(*n) : 1u;
}

struct RankGroup::State {
  using Clock = std::chrono::steady_clock;
  Clock::time_point created = Clock::now();
  double init_s = 0;

  std::mutex m;
  std::condition_variable cv;      // the caller waits: init, pieces
  std::condition_variable mpi_cv;  // the MPI thread waits: pieces to send, closing
  bool init_done = false;
  std::string error;    // set by the MPI thread: MPI failed or disagrees with the environment
  bool failed = false;  // MPI_Init failed: no MPI call at all
  int rank = -1, size = 0;
  int abort_code = -1;
  bool closing = false;
  bool receiving = false;
  bool streamed = false;   // send_to_root was called: rank 0 expects the stream's end
  bool end_asked = false;  // end_stream was called: end it once the pieces are sent
  bool end_sent = false;
  std::deque<std::string> outgoing;
  std::deque<std::pair<int, std::string>> outgoing_messages;  // to, bytes
  int awaited_messages = 0;  // announced by expect_message, not yet arrived
  std::deque<std::string> messages;
  std::vector<std::string> spare;  // buffers to reuse (no fresh pages to fault in)
  std::string take_spare() {       // under m
    if (spare.empty()) return {};
    std::string b = std::move(spare.back());
    spare.pop_back();
    b.clear();
    return b;
  }
  void give_spare(std::string b) {  // under m
    if (spare.size() < 16 && b.capacity() > 0) spare.push_back(std::move(b));
  }
  std::vector<std::deque<std::string>> incoming;
  std::vector<bool> ended;
  size_t open_streams = 0;
  std::thread thread;

  void run();
  bool init(std::unique_lock<std::mutex>& lock);  // false: MPI_Init failed
  [[noreturn]] void abort_job();
  bool send_one(std::unique_lock<std::mutex>& lock);          // false: nothing to send
  bool poll(std::unique_lock<std::mutex>& lock);              // false: nothing to poll for
  bool receive(int tag, std::unique_lock<std::mutex>& lock);  // false: no message came
  bool send(const std::string& bytes, int to, int tag);       // false: aborted
  Backoff idle;
  void wait_init(std::unique_lock<std::mutex>& lock) {
    cv.wait(lock, [&] { return init_done; });
    if (!error.empty()) throw std::runtime_error(error);
  }
};

bool RankGroup::State::init(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  int provided = 0, r = 0, n = 0;
  const bool ok =
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS &&
      MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
      MPI_Comm_size(MPI_COMM_WORLD, &n) == MPI_SUCCESS;
  lock.lock();
  init_s = std::chrono::duration<double>(Clock::now() - created).count();
  init_done = true;
  if (!ok) {
    error = "MPI: MPI_Init_thread failed";
    failed = true;
    cv.notify_all();
    return false;
  }
  if (rank >= 0 && (rank != r || size != n)) {
    error = "MPI: rank " + std::to_string(r) + " of " + std::to_string(n) +
            " differs from OMPI_COMM_WORLD_RANK/SIZE (" + std::to_string(rank) + " of " +
            std::to_string(size) + ")";
    abort_code = 1;
  }
  rank = r;
  size = n;
  incoming.resize(static_cast<size_t>(n));
  ended.assign(static_cast<size_t>(n), false);
  open_streams = n > 0 ? static_cast<size_t>(n - 1) : 0;
  cv.notify_all();
  return true;
}

void RankGroup::State::abort_job() {
  if (!error.empty()) std::fprintf(stderr, "snailtrail: %s\n", error.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, abort_code);
  std::_Exit(abort_code);
}

// Sends the next piece of this rank's stream or the next message, in the order asked.
bool RankGroup::State::send_one(std::unique_lock<std::mutex>& lock) {
  if (!outgoing_messages.empty()) {
    auto [to, bytes] = std::move(outgoing_messages.front());
    outgoing_messages.pop_front();
    lock.unlock();
    send(bytes, to, kTagMessage);  // false: abort requested, checked next
    lock.lock();
    return true;
  }
  if (rank == 0) return false;
  if (outgoing.empty()) {
    if (!streamed || !end_asked || end_sent) return false;
    end_sent = true;
    lock.unlock();
    send(std::string(), 0, kTag);  // an empty piece: the end of the stream
    lock.lock();
    return true;
  }
  std::string piece = std::move(outgoing.front());
  outgoing.pop_front();
  lock.unlock();
  send(piece, 0, kTag);
  lock.lock();
  give_spare(std::move(piece));
  return true;
}

// Takes one message with `tag` if one has come (a piece of a stream, or a message).
bool RankGroup::State::receive(int tag, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) flag = 0;
  std::string piece;
  if (flag) {
    lock.lock();
    if (tag == kTag) piece = take_spare();
    lock.unlock();
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    piece.resize(static_cast<size_t>(count));
    MPI_Recv(piece.data(), count, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  lock.lock();
  if (!flag) return false;
  if (tag == kTagMessage) {
    --awaited_messages;
    messages.push_back(std::move(piece));
  } else if (const auto from = static_cast<size_t>(st.MPI_SOURCE); piece.empty()) {
    if (!ended[from]) --open_streams;
    ended[from] = true;
  } else {
    incoming[from].push_back(std::move(piece));
  }
  cv.notify_all();
  return true;
}

bool RankGroup::State::poll(std::unique_lock<std::mutex>& lock) {
  const bool streams = rank == 0 && receiving && open_streams > 0;
  const bool message = awaited_messages > 0 && !closing;
  if (!streams && !message) return false;
  bool got = false;
  if (streams) got = receive(kTag, lock);
  if (message) got = receive(kTagMessage, lock) || got;
  if (got) {
    idle.reset();
  } else {
    lock.unlock();
    idle.sleep();
    lock.lock();
  }
  return true;
}

void RankGroup::State::run() {
  std::unique_lock lock(m);
  if (!init(lock)) return;
  for (;;) {
    if (abort_code >= 0) abort_job();
    if (send_one(lock) || poll(lock)) continue;
    if (closing) break;
    mpi_cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  lock.unlock();
  if (rank > 0 && streamed && !end_sent)  // the end of the stream
    MPI_Send(nullptr, 0, MPI_BYTE, 0, kTag, MPI_COMM_WORLD);
  MPI_Finalize();
}

// At least one message, in pieces of at most kPiece bytes (an empty one ends a stream).
bool RankGroup::State::send(const std::string& bytes, int to, int tag) {
  size_t off = 0;
  do {
    const int len = static_cast<int>(std::min(kPiece, bytes.size() - off));
    MPI_Request req;
    Backoff wait;
    if (MPI_Isend(bytes.data() + off, len, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS) {
      std::lock_guard lock(m);
      error = "MPI: MPI_Isend failed";
      abort_code = 1;
      return false;
    }
    for (;;) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
      {
        std::lock_guard lock(m);
        if (abort_code >= 0) return false;
      }
      wait.sleep();
    }
    off += kPiece;
  } while (off < bytes.size());
  return true;
}

std::unique_ptr<RankGroup> RankGroup::join_if_launched() {
  const std::optional<int> size = env_int("OMPI_COMM_WORLD_SIZE");
  if (!size || *size <= 1) return nullptr;
  const std::optional<int> rank = env_int("OMPI_COMM_WORLD_RANK");
  undo_default_binding();
  skip_unneeded_components();  // before the MPI thread calls MPI_Init
  freeze_environment();        // MPI_Init writes the environment while this thread reads
  auto s = std::make_unique<State>();
  if (rank && *rank < *size) {
    s->rank = *rank;
    s->size = *size;
  }
  State* sp = s.get();
  s->thread = std::thread([sp] { sp->run(); });
  std::unique_ptr<RankGroup> g(new RankGroup(std::move(s)));
  std::unique_lock lock(sp->m);
  if (!rank || *rank >= *size) sp->wait_init(lock);  // no early rank: wait for MPI_Init
  g->rank_ = sp->rank;
  g->size_ = sp->size;
  return g;
}

RankGroup::RankGroup(std::unique_ptr<State> state) : s_(std::move(state)) {}

RankGroup::~RankGroup() {
  {
    std::lock_guard lock(s_->m);
    s_->closing = true;
  }
  s_->mpi_cv.notify_all();
  s_->thread.join();
}

void RankGroup::send_to_root(std::string bytes) {
  {
    std::lock_guard lock(s_->m);
    s_->streamed = true;
    if (bytes.empty()) return;  // an empty message ends the stream
    s_->outgoing.push_back(std::move(bytes));
  }
  s_->mpi_cv.notify_all();
}

void RankGroup::end_stream() {
  {
    std::lock_guard lock(s_->m);
    s_->streamed = true;
    s_->end_asked = true;
  }
  s_->mpi_cv.notify_all();
}

void RankGroup::start_receiving() {
  {
    std::lock_guard lock(s_->m);
    s_->receiving = true;
  }
  s_->mpi_cv.notify_all();
}

std::string RankGroup::take_buffer() {
  std::lock_guard lock(s_->m);
  return s_->take_spare();
}

void RankGroup::give_buffer(std::string bytes) {
  std::lock_guard lock(s_->m);
  s_->give_spare(std::move(bytes));
}

std::optional<std::string> RankGroup::receive_from(int from) {
  std::unique_lock lock(s_->m);
  s_->wait_init(lock);
  if (from <= 0 || from >= s_->size) throw std::invalid_argument("MPI: no such rank");
  const auto f = static_cast<size_t>(from);
  s_->cv.wait(lock, [&] { return !s_->incoming[f].empty() || s_->ended[f]; });
  if (s_->incoming[f].empty()) return std::nullopt;
  std::string piece = std::move(s_->incoming[f].front());
  s_->incoming[f].pop_front();
  return piece;
}

void RankGroup::send_message(int to, std::string bytes) {
  {
    std::lock_guard lock(s_->m);
    if (to < 0 || to >= size_ || bytes.size() > kPiece)
      throw std::invalid_argument("MPI: bad message");
    s_->outgoing_messages.emplace_back(to, std::move(bytes));
  }
  s_->mpi_cv.notify_all();
}

void RankGroup::expect_message() {
  {
    std::lock_guard lock(s_->m);
    ++s_->awaited_messages;
  }
  s_->mpi_cv.notify_all();
}

std::optional<std::string> RankGroup::receive_message(bool wait) {
  std::unique_lock lock(s_->m);
  if (wait) {
    s_->wait_init(lock);
    s_->cv.wait(lock, [&] { return !s_->messages.empty(); });
  }
  if (s_->messages.empty()) return std::nullopt;
  std::string message = std::move(s_->messages.front());
  s_->messages.pop_front();
  return message;
}

double RankGroup::init_seconds() {
  std::unique_lock lock(s_->m);
  s_->wait_init(lock);
  return s_->init_s;
}

double RankGroup::mpi_thread_cpu_seconds() {
  clockid_t id;
  timespec ts{};
  if (pthread_getcpuclockid(s_->thread.native_handle(), &id) != 0 || clock_gettime(id, &ts) != 0)
    return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void RankGroup::abort(int code) {
  {
    std::lock_guard lock(s_->m);
    if (s_->failed) std::_Exit(code);  // no MPI to end the job with
    s_->abort_code = code;
  }
  s_->mpi_cv.notify_all();
  // The MPI thread ends the job (after MPI_Init, if it is still running).
  std::this_thread::sleep_for(std::chrono::seconds(60));
  std::_Exit(code);
}

}  // namespace snailtrail::mpi
