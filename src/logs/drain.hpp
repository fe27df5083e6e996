// Online log-template mining in the manner of Drain (He et al., ICWS 2017): a message is
// split into whitespace tokens; tokens that hold variables (anything with a digit:
// numbers, hex ids, IPs, block/attempt ids, UUIDs, versions; paths; URLs; long hex
// strings) are masked to <*> (keeping surrounding punctuation and a `key=` prefix:
// "(size=42)," -> "(size=<*>),"); a value with its unit, "1190 bytes (1.16 KB)" or "<1 sec",
// is one variable token (its value the whole quantity). A fixed-depth tree routes the message by
// its token count, then by its first depth-2 tokens (a masked token, or a new one under a node that
// already has max_children, goes to the <*> child). In the leaf, the message joins the cluster
// whose template is most similar,
//     sim = (positions where template and message tokens are equal constants)
//           / (positions, not counting those where both are variables),
// if sim >= similarity (ties: more <*> positions); the template's differing positions
// become <*>. Otherwise it starts a new cluster. Cluster ids never change; templates
// only generalise. No allocation per message once a message's cluster exists.
#pragma once

#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "logs/varint.hpp"

namespace snailtrail::logs {

inline constexpr std::string_view kWildcard = "<*>";

// One whitespace token of a message (or a quantity's words: raw then spans spaces). A
// variable token's masked form is raw[0, pre) + "<*>" + raw[size - suf, size); its value
// is the part in between.
struct Token {
  std::string_view raw;
  uint16_t pre = 0, suf = 0;
  bool var = false;
  std::string_view value() const { return raw.substr(pre, raw.size() - pre - suf); }
};

class TokenMasks;
// Splits `content` into at most max_tokens tokens (the rest is dropped; returns false then).
bool tokenize(std::string_view content, std::vector<Token>& out, size_t max_tokens,
              const TokenMasks* masks = nullptr);
// The masked form of a token.
std::string masked(const Token& t);

struct DrainOptions {
  double similarity = 0.5;  // Drain's st
  int depth = 4;            // tree depth: token count + (depth - 2) prefix tokens
  int max_children = 100;
  size_t max_tokens = 256;  // longer messages are cut (counted by the reader)
  // --mask: regular expressions whose first match in a token makes it a variable (the
  // match is the value), besides the built-in masks.
  std::vector<std::string> masks;
};

// Compiled --mask expressions; throws std::invalid_argument naming a bad one.
class TokenMasks {
 public:
  TokenMasks() = default;
  explicit TokenMasks(const std::vector<std::string>& patterns);
  bool empty() const { return masks_.empty(); }
  // Marks t a variable if a mask matches in it (only tokens the built-in masks left).
  void apply(Token& t) const;

 private:
  std::vector<std::regex> masks_;
};

class Drain {
 public:
  explicit Drain(DrainOptions options = {});

  // Assigns a message (tokens from tokenize) to a cluster; returns its id.
  uint32_t add(const std::vector<Token>& tokens);
  uint32_t add(std::string_view content);

  // Frees the leaves' postings once no more messages come (mining is over): later adds
  // still work, comparing with every cluster of a leaf.
  void release_index();

  size_t cluster_count() const { return clusters_.size(); }
  // Reads a template's tokens in order; the views last until the next add.
  class TokenCursor {
   public:
    explicit TokenCursor(const unsigned char* p) : p_(p) {}
    std::string_view next();

   private:
    const unsigned char* p_;
  };
  // Cluster c's template tokens: token(c, i) walks from the first token (O(i)), so
  // loops over a template read them with tokens(c).
  size_t token_count(uint32_t c) const;
  TokenCursor tokens(uint32_t c) const;
  std::string_view token(uint32_t c, size_t i) const;
  std::string template_text(uint32_t c) const;
  uint64_t size(uint32_t c) const { return clusters_[c].size; }
  const DrainOptions& options() const { return options_; }
  const TokenMasks& masks() const { return masks_; }

  // The parameters of a message of cluster c under the cluster's current template: for
  // every template token holding <*>, the message token's text in the <*>'s place.
  void params(uint32_t c, const std::vector<Token>& tokens,
              std::vector<std::string_view>& out) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // A leaf with many clusters (logs of mostly unique tokens) indexes them by their
  // constant tokens: (leaf, position, token) -> clusters. Only clusters sharing one of the
  // message's rarest tokens can reach the threshold (prefix filtering), so a message is
  // compared with those, not with every cluster of the leaf.
  // Keyed by a hash of (leaf, position, token): a collision only adds a candidate, and
  // every candidate's similarity is computed exactly. One open-addressing table for all
  // leaves and the lists linked through one array: a few bytes per posting, not a map
  // node and a vector each (400 000 word-salad templates made 8 postings each).
  // A slot of the table: its key and either the one cluster of its list (kSingle set:
  // most keys of mostly unique tokens have one) or the head of its list in
  // posting_links_; kEmpty = empty slot. 8 bytes a slot, no link for a lone cluster.
  static constexpr uint32_t kEmpty = UINT32_MAX, kSingle = 0x80000000u;
  struct Posting {
    uint32_t key = 0;  // 32 bits of the key's hash; its low bits pick the slot
    uint32_t ref = kEmpty;
  };
  struct PostingLink {
    uint32_t cluster = 0, next = UINT32_MAX;
    uint32_t count = 0;  // the list's length from here (the head's is the list's)
  };
  struct Node {
    std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> children;
    std::vector<uint32_t> clusters;
    bool indexed = false;  // postings built (once the leaf has kIndexFrom clusters)
  };
  // A template is one run of bytes in fixed blocks (never moved, no doubling's spare):
  // varint(token count), then per token varint(length * 2 + generalised) and its text.
  // Generalising a position sets its flag bit in place (the text stays, skipped); a bare
  // <*> is one byte. A log of word salads makes a template every few lines: 8-byte views
  // per token and one doubling text took about twice these bytes.
  struct Cluster {
    uint64_t size = 0;
    uint32_t block = 0, offset = 0;  // where its bytes start in blocks_
  };
  const unsigned char* bytes(uint32_t c) const {
    return blocks_[clusters_[c].block].get() + clusters_[c].offset;
  }
  unsigned char* store_template(const std::vector<Token>& tokens, Cluster& cl);
  uint32_t leaf_for(const std::vector<Token>& tokens, bool create);
  void index_cluster(uint32_t leaf, uint32_t c);
  uint32_t link(uint32_t cluster, uint32_t next, uint32_t count);
  void candidates(uint32_t leaf, const std::vector<Token>& tokens);
  static uint32_t posting_key(uint32_t leaf, size_t position, std::string_view token);
  Posting* find_posting(uint32_t key, bool create);

  DrainOptions options_;
  TokenMasks masks_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> by_length_;  // token count -> node (0 = none; node 0 is unused)
  std::vector<Cluster> clusters_;
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;  // kBlock bytes, or one template's
  uint32_t block_ = 0;  // the block being filled (blocks_[0] once any exists)
  size_t block_used_ = 0, block_free_ = 0;
  std::vector<Posting> postings_;  // power-of-two size, at most 3/4 full
  size_t postings_used_ = 0;
  std::vector<PostingLink> posting_links_;
  std::vector<Token> scratch_;
  std::vector<uint32_t> candidates_, seen_;  // seen_[c]: the message that last listed c
  uint32_t stamp_ = 0;
};

inline std::string_view Drain::TokenCursor::next() {
  const uint64_t v = get_varint(p_);
  const char* text = reinterpret_cast<const char*>(p_);
  p_ += v >> 1;
  return v & 1 ? kWildcard : std::string_view(text, v >> 1);
}

}  // namespace snailtrail::logs
