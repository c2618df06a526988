// Digests of the I/O layer (OpenSSL's libcrypto): request signing and cache keys.
#pragma once

#include <string>
#include <string_view>

namespace tilewise::io {

// Lower-case hexadecimal of `n` bytes.
std::string to_hex(const unsigned char* p, size_t n);

// The SHA-256 of `data`, in lower-case hexadecimal.
std::string sha256_hex(std::string_view data);

}  // namespace tilewise::io
