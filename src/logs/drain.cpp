// Drain template mining (drain.hpp).
#include "logs/drain.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "trace/ascii.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace snailtrail::logs {
namespace {

constexpr size_t kIndexFrom = 32;           // clusters in a leaf before it is indexed
constexpr size_t kBlock = size_t{1} << 20;  // bytes of a block of templates

// A template token's stored length: a bare <*> (and a literal one) is only the flag.
bool bare_wildcard(const Token& t) {
  return t.var ? t.pre == 0 && t.suf == 0 : t.raw == kWildcard;
}
size_t stored_length(const Token& t) {
  return bare_wildcard(t) ? 0 : t.var ? size_t(t.pre) + 3 + t.suf : t.raw.size();
}

using ascii::is_digit;
using ascii::is_hex;
using ascii::is_space;

bool opening(char c) {
  return c == '(' || c == '[' || c == '{' || c == '<' || c == '\'' || c == '"';
}
bool closing(char c) {
  return c == ')' || c == ']' || c == '}' || c == '>' || c == '\'' || c == '"' || c == ',' ||
         c == ';' || c == '.' || c == ':';
}

// Masks a token: finds the variable part of its core (the token without surrounding
// punctuation), after a `key=` prefix whose key has no digit.
void classify(Token& t) {
  const std::string_view r = t.raw;
  size_t b = 0, e = r.size();
  while (b < e && opening(r[b])) ++b;
  while (e > b && closing(r[e - 1])) --e;
  if (b == e) return;
  std::string_view core = r.substr(b, e - b);
  // key=value: mask only the value (if the key has no digit).
  const size_t eq = core.find('=');
  if (eq != std::string_view::npos && eq + 1 < core.size()) {
    const std::string_view key = core.substr(0, eq);
    if (std::none_of(key.begin(), key.end(), is_digit)) {
      b += eq + 1;
      core = core.substr(eq + 1);
      while (!core.empty() && opening(core.front())) core.remove_prefix(1), ++b;
      if (core.empty()) return;
    }
  }
  bool var = std::any_of(core.begin(), core.end(), is_digit);
  if (!var && core.size() >= 2 && core[0] == '/' && core.find('/', 1) != std::string_view::npos)
    var = true;                                                        // a path
  if (!var && core.find("://") != std::string_view::npos) var = true;  // a URL
  if (!var && (core.find(":\\") != std::string_view::npos || core.starts_with("\\\\")))
    var = true;  // a Windows path: C:\Windows\..., \\server\share
  if (!var && core.size() >= 8 && std::all_of(core.begin(), core.end(), is_hex)) var = true;
  if (!var) return;
  t.var = true;
  t.pre = static_cast<uint16_t>(std::min<size_t>(b, UINT16_MAX));
  t.suf = static_cast<uint16_t>(std::min<size_t>(r.size() - e, UINT16_MAX));
  if (size_t(t.pre) + t.suf > r.size()) t.var = false;  // tokens longer than 64 KiB
}

// Whether template token `tt` equals the (masked) message token.
bool same(const Token& t, std::string_view tt) {
  if (!t.var) return t.raw == tt;
  const std::string_view r = t.raw;
  return tt.size() == size_t(t.pre) + 3 + t.suf && tt.substr(0, t.pre) == r.substr(0, t.pre) &&
         tt.substr(t.pre, 3) == kWildcard && tt.substr(t.pre + 3) == r.substr(r.size() - t.suf);
}

bool has_wildcard(std::string_view tt) {
  return tt.find(kWildcard) != std::string_view::npos;
}

}  // namespace

TokenMasks::TokenMasks(const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    try {
      masks_.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("--mask '" + p + "': " + e.what());
    }
  }
}

void TokenMasks::apply(Token& t) const {
  std::match_results<std::string_view::const_iterator> m;
  for (const std::regex& re : masks_) {
    if (!std::regex_search(t.raw.begin(), t.raw.end(), m, re) || m.length(0) == 0) continue;
    const size_t pos = static_cast<size_t>(m.position(0)), len = static_cast<size_t>(m.length(0));
    if (pos > UINT16_MAX || t.raw.size() - pos - len > UINT16_MAX) continue;
    t.var = true;
    t.pre = static_cast<uint16_t>(pos);
    t.suf = static_cast<uint16_t>(t.raw.size() - pos - len);
    return;
  }
}

// A value with its unit is one variable token: "1190 bytes", "<1 sec", "45 ms", and a
// parenthesised restatement after a value, "1190 bytes (1.16 KB)". Otherwise the optional
// unit or restatement changes the token count, and Drain (which compares only messages
// of one length) splits one event into several templates (loghub's Proxifier).
namespace {

bool is_unit(std::string_view w) {
  static constexpr std::string_view kUnits[] = {
      "B",      "byte",    "bytes", "Bytes", "KB",   "kB",   "MB",     "GB",      "TB",      "PB",
      "KiB",    "MiB",     "GiB",   "TiB",   "KB/s", "MB/s", "GB/s",   "B/s",     "bytes/s", "ns",
      "us",     "µs",      "ms",    "s",     "sec",  "secs", "second", "seconds", "min",     "mins",
      "minute", "minutes", "h",     "hr",    "hrs",  "hour", "hours",  "day",     "days"};
  for (std::string_view u : kUnits)
    if (w == u) return true;
  return false;
}

// The text of a token without trailing closing punctuation ("KB)," -> "KB").
std::string_view strip_closing(std::string_view w) {
  while (!w.empty() && closing(w.back())) w.remove_suffix(1);
  return w;
}

// Opening punctuation and a `key=` before a number ("(" of "(1.16", "size=" of
// "size=2.1"); the number may start with a comparison or sign ("<1", "~3", "-2"), which
// stays in the value.
size_t number_start(std::string_view w) {
  size_t i = 0;
  while (i < w.size() && opening(w[i]) && w[i] != '<') ++i;
  const size_t eq = w.find('=', i);
  if (eq != std::string_view::npos && eq > i &&
      std::none_of(w.begin() + static_cast<ptrdiff_t>(i), w.begin() + static_cast<ptrdiff_t>(eq),
                   is_digit))
    for (i = eq + 1; i < w.size() && opening(w[i]) && w[i] != '<';) ++i;
  return i;
}

// "1190", "1.16", "<1", "00:01", "(1.16": a number with nothing after it.
bool is_number(std::string_view w) {
  size_t i = number_start(w);
  if (i < w.size() && (w[i] == '<' || w[i] == '>' || w[i] == '~' || w[i] == '-' || w[i] == '+'))
    ++i;
  if (i == w.size() || !is_digit(w[i]) || !is_digit(w.back())) return false;
  for (; i < w.size(); ++i)
    if (!is_digit(w[i]) && w[i] != '.' && w[i] != ',' && w[i] != ':') return false;
  return true;
}

// How many words from k form a quantity: a number, its unit, and a restatement in
// parentheses ("(1.16 KB)", "(1.16KB)") unless the number or unit ends in punctuation;
// 0 if words[k] is no number.
size_t quantity_length(const std::vector<std::string_view>& words, size_t k) {
  if (!is_number(words[k])) return 0;
  size_t n = 1;
  if (k + 1 < words.size() && is_unit(strip_closing(words[k + 1]))) ++n;
  if (k + n >= words.size() || closing(words[k + n - 1].back()) || number_start(words[k]) > 0)
    return n;
  const std::string_view a = words[k + n];
  if (a.size() < 2 || a[0] != '(' || !is_digit(a[1])) return n;
  if (a.find(')') != std::string_view::npos) {  // "(1.16KB)": a number and a unit
    std::string_view inner = strip_closing(a.substr(1));
    while (!inner.empty() && (is_digit(inner.front()) || inner.front() == '.'))
      inner.remove_prefix(1);
    return is_unit(inner) ? n + 1 : n;
  }
  if (k + n + 1 < words.size() && is_number(a) && is_unit(strip_closing(words[k + n + 1])) &&
      words[k + n + 1].find(')') != std::string_view::npos)
    return n + 2;
  return n;
}

// Marks a quantity (raw spans its words) a variable: opening punctuation before it and
// closing punctuation after it stay constant, except a ')' that closes a '(' inside.
void classify_quantity(Token& t) {
  const std::string_view r = t.raw;
  const size_t pre = number_start(r);
  size_t suf = r.size() - strip_closing(r).size();
  const std::string_view inside = r.substr(pre, r.size() - pre - suf);
  const auto opens = std::count(inside.begin(), inside.end(), '(');
  const auto closes = std::count(inside.begin(), inside.end(), ')');
  for (auto open = opens - closes; open > 0 && suf > 0; --suf) open -= r[r.size() - suf] == ')';
  if (pre + suf >= r.size() || pre > UINT16_MAX || suf > UINT16_MAX) return;
  t.var = true;
  t.pre = static_cast<uint16_t>(pre);
  t.suf = static_cast<uint16_t>(suf);
}

}  // namespace

bool tokenize(std::string_view s, std::vector<Token>& out, size_t max_tokens,
              const TokenMasks* masks) {
  out.clear();
  thread_local std::vector<std::string_view> words;
  words.clear();
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) break;
    size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    words.push_back(s.substr(i, j - i));
    i = j;
  }
  for (size_t k = 0; k < words.size();) {
    if (out.size() == max_tokens) return false;
    Token t;
    const size_t q = quantity_length(words, k);
    if (q >= 2) {  // one variable from the number to its unit or restatement
      const std::string_view first = words[k], last = words[k + q - 1];
      t.raw = s.substr(static_cast<size_t>(first.data() - s.data()),
                       static_cast<size_t>(last.data() + last.size() - first.data()));
      classify_quantity(t);
    } else {
      t.raw = words[k];
      classify(t);
      if (!t.var && masks && !masks->empty()) masks->apply(t);
    }
    out.push_back(t);
    k += q >= 2 ? q : 1;
  }
  return true;
}

std::string masked(const Token& t) {
  if (!t.var) return std::string(t.raw);
  std::string s(t.raw.substr(0, t.pre));
  s += kWildcard;
  s += t.raw.substr(t.raw.size() - t.suf);
  return s;
}

Drain::Drain(DrainOptions options) : options_(options), masks_(options_.masks) {
  options_.depth = std::max(options_.depth, 3);
  options_.max_children = std::max(options_.max_children, 2);
  nodes_.emplace_back();  // index 0 = "none"
}

size_t Drain::token_count(uint32_t c) const {
  const unsigned char* p = bytes(c);
  return get_varint(p);
}

Drain::TokenCursor Drain::tokens(uint32_t c) const {
  const unsigned char* p = bytes(c);
  get_varint(p);
  return TokenCursor(p);
}

std::string_view Drain::token(uint32_t c, size_t i) const {
  TokenCursor t = tokens(c);
  for (; i > 0; --i) t.next();
  return t.next();
}

// Writes a new template's bytes into the block being filled, or a new one; a template
// larger than a block gets a block of its own.
unsigned char* Drain::store_template(const std::vector<Token>& tokens, Cluster& cl) {
  size_t need = varint_size(tokens.size());
  for (const Token& t : tokens) {
    const size_t n = stored_length(t);
    need += varint_size(uint64_t{n} * 2 + 1) + n;
  }
  if (blocks_.size() >= UINT32_MAX || need > UINT32_MAX)
    throw std::length_error("log templates exceed 4 G blocks or 4 GiB a template");
  unsigned char* p = nullptr;
  if (need > kBlock) {
    blocks_.emplace_back(new unsigned char[need]);
    cl.block = static_cast<uint32_t>(blocks_.size() - 1);
    cl.offset = 0;
    p = blocks_.back().get();
  } else {
    if (need > block_free_) {
      blocks_.emplace_back(new unsigned char[kBlock]);
      block_ = static_cast<uint32_t>(blocks_.size() - 1);
      block_used_ = 0;
      block_free_ = kBlock;
    }
    cl.block = block_;
    cl.offset = static_cast<uint32_t>(block_used_);
    p = blocks_[block_].get() + block_used_;
    block_used_ += need;
    block_free_ -= need;
  }
  unsigned char* const start = p;
  p = put_varint(p, tokens.size());
  for (const Token& t : tokens) {
    const size_t n = stored_length(t);
    const bool wild = bare_wildcard(t);
    p = put_varint(p, uint64_t{n} * 2 + wild);
    if (wild) continue;
    if (!t.var) {
      p = std::copy(t.raw.begin(), t.raw.end(), p);
      continue;
    }
    const std::string_view r = t.raw;
    p = std::copy(r.begin(), r.begin() + t.pre, p);
    p = std::copy(kWildcard.begin(), kWildcard.end(), p);
    p = std::copy(r.end() - t.suf, r.end(), p);
  }
  return start;
}

uint32_t Drain::leaf_for(const std::vector<Token>& tokens, bool create) {
  const size_t n = tokens.size();
  if (n >= by_length_.size()) {
    if (!create) return 0;
    by_length_.resize(n + 1, 0);
  }
  if (by_length_[n] == 0) {
    if (!create) return 0;
    by_length_[n] = static_cast<uint32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  uint32_t node = by_length_[n];
  const size_t levels = std::min<size_t>(n, static_cast<size_t>(options_.depth - 2));
  for (size_t k = 0; k < levels; ++k) {
    const Token& t = tokens[k];
    auto& ch = nodes_[node].children;
    if (!t.var) {
      if (auto it = ch.find(t.raw); it != ch.end()) {
        node = it->second;
        continue;
      }
    }
    if (auto it = ch.find(kWildcard);
        it != ch.end() && (t.var || !create || ch.size() >= size_t(options_.max_children))) {
      node = it->second;
      continue;
    }
    if (!create) return 0;
    const std::string key = t.var || ch.size() + 1 >= size_t(options_.max_children)
                                ? std::string(kWildcard)
                                : std::string(t.raw);
    const uint32_t child = static_cast<uint32_t>(nodes_.size());
    nodes_[node].children.emplace(key, child);  // `ch` may dangle after emplace_back
    nodes_.emplace_back();
    node = child;
  }
  return node;
}

uint32_t Drain::add(std::string_view content) {
  tokenize(content, scratch_, options_.max_tokens, &masks_);
  return add(scratch_);
}

uint32_t Drain::add(const std::vector<Token>& tokens) {
  uint32_t leaf = leaf_for(tokens, false);
  if (leaf) {
    // The most similar cluster of the leaf.
    int64_t best = -1;
    double best_sim = -1;
    size_t best_params = 0;
    candidates(leaf, tokens);
    for (uint32_t c : candidates_) {
      size_t equal = 0, both_var = 0, params = 0;
      TokenCursor cursor = this->tokens(c);
      for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string_view x = cursor.next();
        if (x == kWildcard) {
          ++params;
          both_var += tokens[i].var;
        } else if (same(tokens[i], x)) {
          ++equal;
        }
      }
      const size_t denom = tokens.size() - both_var;
      const double sim = denom == 0 ? 1.0 : static_cast<double>(equal) / static_cast<double>(denom);
      if (sim > best_sim || (sim == best_sim && params > best_params))
        best = c, best_sim = sim, best_params = params;
    }
    if (best >= 0 && best_sim >= options_.similarity) {
      Cluster& cl = clusters_[static_cast<size_t>(best)];
      // Generalise in place: set the flag bit (bit 0 of a varint's first byte).
      unsigned char* p = blocks_[cl.block].get() + cl.offset;
      const unsigned char* q = p;
      get_varint(q);
      for (size_t i = 0; i < tokens.size(); ++i) {
        unsigned char* const head = p + (q - p);
        const uint64_t v = get_varint(q);
        const std::string_view x(reinterpret_cast<const char*>(q), v >> 1);
        q += v >> 1;
        if (!(v & 1) && x != kWildcard && !same(tokens[i], x)) *head |= 1;
      }
      ++cl.size;
      return static_cast<uint32_t>(best);
    }
  }
  leaf = leaf_for(tokens, true);
  const uint32_t id = static_cast<uint32_t>(clusters_.size());
  Cluster cl;
  store_template(tokens, cl);
  cl.size = 1;
  clusters_.push_back(cl);
  Node& node = nodes_[leaf];
  node.clusters.push_back(id);
  if (node.indexed) {
    index_cluster(leaf, id);
  } else if (node.clusters.size() >= kIndexFrom) {
    node.indexed = true;
    for (uint32_t c : node.clusters) index_cluster(leaf, c);
  }
  return id;
}

uint32_t Drain::posting_key(uint32_t leaf, size_t position, std::string_view token) {
  uint64_t h = std::hash<std::string_view>{}(token) ^ (uint64_t{position} * 0x9E3779B97F4A7C15ull) ^
               (uint64_t{leaf} * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 31;  // spread the bits the table index uses
  h *= 0xBF58476D1CE4E5B9ull;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

void Drain::release_index() {
  for (Node& n : nodes_) n.indexed = false;
  std::vector<Posting>().swap(postings_);
  std::vector<PostingLink>().swap(posting_links_);
  postings_used_ = 0;
  // Only indexed leaves use seen_; the clusters take their size (no doubling's spare
  // through the passes that follow mining).
  std::vector<uint32_t>().swap(seen_);
  clusters_.shrink_to_fit();
#if defined(__GLIBC__)
  // The index's lists and many small frees leave pages inside the heap that glibc keeps;
  // hand them back before the passes after mining allocate.
  malloc_trim(0);
#endif
}

// Keys that hash alike share a list: that only adds candidates.
Drain::Posting* Drain::find_posting(uint32_t key, bool create) {
  if (create && (postings_used_ + 1) * 4 > postings_.size() * 3) {
    std::vector<Posting> old(std::max<size_t>(1024, postings_.size() * 2));
    old.swap(postings_);
    postings_used_ = 0;
    for (const Posting& p : old)
      if (p.ref != kEmpty) *find_posting(p.key, true) = p;
  }
  if (postings_.empty()) return nullptr;
  const size_t mask = postings_.size() - 1;
  for (size_t i = key & mask;; i = (i + 1) & mask) {
    Posting& p = postings_[i];
    if (p.ref == kEmpty) {
      if (!create) return nullptr;
      ++postings_used_;
      p.key = key;
      return &p;
    }
    if (p.key == key) return &p;
  }
}

void Drain::index_cluster(uint32_t leaf, uint32_t c) {
  const size_t n = token_count(c);
  TokenCursor cursor = tokens(c);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view x = cursor.next();
    if (x == kWildcard) continue;
    Posting& p = *find_posting(posting_key(leaf, i, x), true);
    if (p.ref == kEmpty && c < kSingle - 1) {
      p.ref = kSingle | c;
      continue;
    }
    uint32_t head = p.ref;
    if (p.ref != kEmpty && (p.ref & kSingle)) {  // a lone cluster gets its link now
      const uint32_t first = p.ref & ~kSingle;
      if (first == c) continue;
      head = link(first, UINT32_MAX, 1);
    } else if (head != kEmpty && posting_links_[head].cluster == c) {
      continue;
    }
    p.ref = link(c, head, head == kEmpty ? 1 : posting_links_[head].count + 1);
  }
}

uint32_t Drain::link(uint32_t cluster, uint32_t next, uint32_t count) {
  // Heads share the slot's 31 bits with lone clusters' ids (kSingle tells them apart).
  if (posting_links_.size() >= kSingle - 1) throw std::length_error("log template index full");
  posting_links_.push_back({cluster, next, count});
  return static_cast<uint32_t>(posting_links_.size() - 1);
}

// The clusters of a leaf that may reach the threshold, in id order. sim >= st needs
// equal >= t = ceil(st * (n - v)) (v: the message's variables, an upper bound on the
// both-variable positions), so a cluster that qualifies shares a constant with any
// |P| - t + 1 of the positions P that can be equal: the ones with the shortest postings.
// (Postings of positions since generalised to <*> stay: the candidates are re-checked.)
void Drain::candidates(uint32_t leaf_id, const std::vector<Token>& tokens) {
  const Node& leaf = nodes_[leaf_id];
  candidates_.clear();
  if (!leaf.indexed) {
    candidates_ = leaf.clusters;
    return;
  }
  size_t vars = 0;
  for (const Token& t : tokens) vars += t.var;
  const double need = options_.similarity * static_cast<double>(tokens.size() - vars) - 1e-9;
  const size_t t = need <= 0 ? 0 : static_cast<size_t>(std::ceil(need));
  thread_local std::vector<std::pair<size_t, uint32_t>> lists;  // (count, slot's ref)
  lists.clear();
  size_t positions = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].var && tokens[i].pre == 0 && tokens[i].suf == 0) continue;  // bare <*>
    ++positions;
    const uint32_t key = tokens[i].var ? posting_key(leaf_id, i, masked(tokens[i]))
                                       : posting_key(leaf_id, i, tokens[i].raw);
    if (const Posting* p = find_posting(key, false))
      lists.emplace_back(p->ref & kSingle ? 1 : posting_links_[p->ref].count, p->ref);
  }
  if (t == 0) {  // every position may be both-variable: no bound
    candidates_ = leaf.clusters;
    return;
  }
  if (t > positions) return;
  // Positions without postings match no cluster: they count among the rarest.
  const size_t take = positions - t + 1;
  const size_t missing = positions - lists.size();
  if (missing >= take) return;
  std::sort(lists.begin(), lists.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (seen_.size() < clusters_.size()) seen_.resize(clusters_.size(), 0);
  ++stamp_;
  for (size_t k = 0; k < take - missing && k < lists.size(); ++k) {
    const uint32_t ref = lists[k].second;
    if (ref & kSingle) {
      const uint32_t c = ref & ~kSingle;
      if (seen_[c] != stamp_) seen_[c] = stamp_, candidates_.push_back(c);
      continue;
    }
    for (uint32_t e = ref; e != UINT32_MAX; e = posting_links_[e].next) {
      const uint32_t c = posting_links_[e].cluster;
      if (seen_[c] != stamp_) seen_[c] = stamp_, candidates_.push_back(c);
    }
  }
  std::sort(candidates_.begin(), candidates_.end());
}

std::string Drain::template_text(uint32_t c) const {
  std::string s;
  const size_t n = token_count(c);
  TokenCursor cursor = tokens(c);
  for (size_t i = 0; i < n; ++i) {
    if (i) s.push_back(' ');
    s += cursor.next();
  }
  return s;
}

void Drain::params(uint32_t c, const std::vector<Token>& tokens,
                   std::vector<std::string_view>& out) const {
  out.clear();
  const size_t n = std::min<size_t>(token_count(c), tokens.size());
  TokenCursor cursor = this->tokens(c);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view x = cursor.next();
    if (!has_wildcard(x)) continue;
    const std::string_view r = tokens[i].raw;
    const size_t w = x.find(kWildcard);
    const std::string_view pre = x.substr(0, w), suf = x.substr(w + 3);
    if (x != kWildcard && r.size() >= pre.size() + suf.size() && r.starts_with(pre) &&
        r.ends_with(suf))
      out.push_back(r.substr(pre.size(), r.size() - pre.size() - suf.size()));
    else if (tokens[i].var && x == kWildcard)
      out.push_back(tokens[i].value());
    else
      out.push_back(r);
  }
}

}  // namespace snailtrail::logs
