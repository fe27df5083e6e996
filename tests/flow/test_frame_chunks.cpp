// Frames over bounded messages (src/flow/frame_chunks.hpp, issue 35) against a plain
// concatenation: random frames (0 bytes of records included, sizes straddling the chunk),
// the stream cut into chunks as the MPI transport cuts it, reassembled: the same frames,
// byte for byte, in order; and a stream cut short leaves a partial frame.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "flow/frame_chunks.hpp"
#include "sanitized.hpp"

namespace snailtrail::flow {
namespace {

std::vector<char> make_frame(std::mt19937_64& rng, uint64_t bytes) {
  FrameHeader h;
  h.channel = rng() % 50;
  h.from = static_cast<uint32_t>(rng() % 8);
  h.to = static_cast<uint32_t>(rng() % 8);
  h.time = rng();
  h.bytes = bytes;
  std::vector<char> f(sizeof h + bytes);
  std::memcpy(f.data(), &h, sizeof h);
  for (uint64_t i = 0; i < bytes; ++i) f[sizeof h + i] = static_cast<char>(rng());
  return f;
}

TEST(FlowFrameChunks, ReassembledFramesEqualTheConcatenation) {
  const int seeds = snailtrail::testing::random_inputs(200, 40);
  constexpr size_t H = sizeof(FrameHeader);
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    const size_t chunks[] = {1, 7, H - 1, H, H + 1, 256, 1000, 1 + rng() % 5000};
    const size_t chunk = chunks[seed % 8];
    std::vector<std::vector<char>> frames;
    std::vector<char> stream;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      uint64_t bytes = 0;
      switch (rng() % 4) {
        case 0:
          break;  // a frame of a header only
        case 1:
          bytes = chunk > H ? chunk - H - 1 + rng() % 3 : rng() % 3;
          break;  // a chunk +-1
        case 2:
          bytes = rng() % 64;
          break;
        default:
          bytes = rng() % (3 * chunk + 100);
          break;
      }
      frames.push_back(make_frame(rng, bytes));
      stream.insert(stream.end(), frames.back().begin(), frames.back().end());
    }
    ASSERT_EQ(chunk_count(stream.size(), chunk) * chunk >= stream.size(), true);
    FrameReassembler r;
    std::vector<std::vector<char>> got;
    size_t sent = 0;
    for (size_t i = 0; i < chunk_count(stream.size(), chunk); ++i) {
      const size_t len = chunk_size(stream.size(), chunk, i);
      ASSERT_GE(len, 1u);
      ASSERT_LE(len, chunk);
      r.feed(stream.data() + i * chunk, len,
             [&](const char* p, size_t l) { got.emplace_back(p, p + l); });
      sent += len;
    }
    ASSERT_EQ(sent, stream.size()) << "seed " << seed;
    EXPECT_EQ(r.partial(), 0u) << "seed " << seed;
    ASSERT_EQ(got.size(), frames.size()) << "seed " << seed << " chunk " << chunk;
    for (size_t i = 0; i < frames.size(); ++i)
      ASSERT_TRUE(got[i] == frames[i]) << "seed " << seed << " chunk " << chunk << " frame " << i;
  }
}

TEST(FlowFrameChunks, AStreamCutInsideAFrameLeavesItPartial) {
  std::mt19937_64 rng(7);
  const std::vector<char> f = make_frame(rng, 100);
  for (size_t cut = 1; cut < f.size(); ++cut) {
    FrameReassembler r;
    int frames = 0;
    r.feed(f.data(), cut, [&](const char*, size_t) { ++frames; });
    EXPECT_EQ(frames, 0);
    EXPECT_EQ(r.partial(), cut);
    r.feed(f.data() + cut, f.size() - cut, [&](const char* p, size_t l) {
      ++frames;
      EXPECT_TRUE(std::vector<char>(p, p + l) == f);
    });
    EXPECT_EQ(frames, 1);
    EXPECT_EQ(r.partial(), 0u);
  }
}

// A header out of step (here: a byte count no batch reaches) is an error at once, also
// when the header itself arrives in pieces.
TEST(FlowFrameChunks, ACorruptHeaderIsAnError) {
  std::mt19937_64 rng(3);
  std::vector<char> f = make_frame(rng, 0);
  FrameHeader h;
  std::memcpy(&h, f.data(), sizeof h);
  h.bytes = kMaxFrameBytes + 1;
  std::memcpy(f.data(), &h, sizeof h);
  FrameReassembler whole, pieces;
  EXPECT_THROW(whole.feed(f.data(), f.size(), [](const char*, size_t) {}), std::runtime_error);
  pieces.feed(f.data(), 5, [](const char*, size_t) {});
  EXPECT_THROW(pieces.feed(f.data() + 5, f.size() - 5, [](const char*, size_t) {}),
               std::runtime_error);
}

}  // namespace
}  // namespace snailtrail::flow
