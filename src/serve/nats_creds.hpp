#pragma once
// A NATS .creds file (the user JWT and its nkey seed, as `nsc` writes it) and the
// signature of a server's nonce with it: what a client presents to a nats-server in
// operator mode (docs/SERVE.md, "NATS credentials and TLS").

#include <string>
#include <vector>

namespace snailtrail::serve {

struct NatsCreds {
  std::string jwt;   // the user JWT (header.claims.signature)
  std::string seed;  // the user's nkey seed (S...)
};

// The JWT and the seed of a .creds file's text: the first non-empty line after the
// "-----BEGIN NATS USER JWT-----" and "-----BEGIN USER NKEY SEED-----" markers (CRLF and
// surrounding blanks allowed). Throws std::runtime_error saying which part is missing or
// malformed (never quoting the seed).
NatsCreds parse_nats_creds(const std::string& text);

// The ed25519 signature of `nonce` by the key of `seed`. Empty when that signature begins
// with a zero byte: libnats 3.4 (Debian 12) turns such a signature into an empty string
// (its base64 encoder stops at a leading zero byte), leaves "sig" out of CONNECT and the
// server refuses the connection, about 1 connection in 256. The caller connects again,
// with a fresh nonce. Throws std::runtime_error when the seed is not a valid nkey seed
// (base32, length, checksum, prefix).
std::vector<unsigned char> sign_nonce(const std::string& seed, const std::string& nonce);

}  // namespace snailtrail::serve
