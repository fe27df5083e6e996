#include "serve/nats_creds.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace snailtrail::serve {

namespace {

std::string trimmed(const std::string& s) {
  const size_t from = s.find_first_not_of(" \t\r");
  if (from == std::string::npos) return "";
  return s.substr(from, s.find_last_not_of(" \t\r") + 1 - from);
}

uint16_t crc16(const std::string& bytes) {  // CRC-16/XMODEM, as nkeys use
  uint16_t crc = 0;
  for (unsigned char b : bytes) {
    crc ^= static_cast<uint16_t>(b << 8);
    for (int i = 0; i < 8; ++i)
      crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}

// The 36 bytes of an encoded seed: 2 prefix bytes, the 32-byte ed25519 seed, the CRC.
std::string decoded_seed(const std::string& text) {
  std::string raw;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= '2' && c <= '7') v = c - '2' + 26;
    if (v < 0) throw std::runtime_error("the nkey seed is not base32");
    buffer = (buffer << 5) | static_cast<uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      raw += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  if (raw.size() != 36) throw std::runtime_error("the nkey seed has the wrong length");
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(raw[i]); };
  if (crc16(raw.substr(0, 34)) != (byte(34) | byte(35) << 8))
    throw std::runtime_error("the nkey seed's checksum is wrong");
  constexpr unsigned char kSeed = 18 << 3, kUser = 20 << 3, kAccount = 0, kServer = 13 << 3,
                          kCluster = 2 << 3;
  const unsigned char type = static_cast<unsigned char>((byte(0) & 7) << 5 | (byte(1) & 248) >> 3);
  if ((byte(0) & 248) != kSeed ||
      (type != kUser && type != kAccount && type != kServer && type != kCluster))
    throw std::runtime_error("the nkey seed's prefix is not that of a seed");
  return raw;
}

}  // namespace

NatsCreds parse_nats_creds(const std::string& text) {
  NatsCreds c;
  std::string* wanted = nullptr;  // the part whose value the next non-empty line is
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = trimmed(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty()) continue;
    if (line.rfind("---", 0) == 0) {
      wanted = nullptr;
      if (line.find("BEGIN") == std::string::npos) continue;
      if (line.find("JWT") != std::string::npos && c.jwt.empty()) wanted = &c.jwt;
      if (line.find("SEED") != std::string::npos && c.seed.empty()) wanted = &c.seed;
      continue;
    }
    if (wanted != nullptr) *wanted = line;
    wanted = nullptr;
  }
  if (c.jwt.empty())
    throw std::runtime_error("no user JWT (a line after -----BEGIN NATS USER JWT-----)");
  if (c.seed.empty())
    throw std::runtime_error("no nkey seed (a line after -----BEGIN USER NKEY SEED-----)");
  if (std::count(c.jwt.begin(), c.jwt.end(), '.') != 2)
    throw std::runtime_error("the user JWT is not of the form header.claims.signature");
  if (c.seed.front() != 'S')
    throw std::runtime_error("the nkey seed does not start with S (is it a public key?)");
  return c;
}

std::vector<unsigned char> sign_nonce(const std::string& seed, const std::string& nonce) {
  const std::string raw = decoded_seed(seed);
  EVP_PKEY* key = EVP_PKEY_new_raw_private_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()) + 2, 32);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::vector<unsigned char> sig(64);
  size_t length = sig.size();
  const bool ok =
      key != nullptr && ctx != nullptr &&
      EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key) == 1 &&
      EVP_DigestSign(ctx, sig.data(), &length, reinterpret_cast<const unsigned char*>(nonce.data()),
                     nonce.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  if (!ok) throw std::runtime_error("cannot sign with the nkey seed (OpenSSL ed25519)");
  if (sig.front() == 0) sig.clear();
  return sig;
}

}  // namespace snailtrail::serve
