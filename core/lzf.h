// LZF, the compression of Redis' RDB strings (a byte-oriented LZ77 by Marc Lehmann). Our own
// compressor; any valid LZF stream decompresses the same everywhere, so files need not match
// Redis byte for byte to load in it.
//
// The stream is a sequence of runs, each starting with a control byte c:
//   c < 32         a literal run: the next c+1 bytes are copied;
//   c >= 32        a back reference: length L = c >> 5 (7 means "7 + the next byte"), then one
//                  more byte; the run copies L+2 bytes starting ((c & 31) << 8 | that byte) + 1
//                  bytes back in the output (it may overlap what it writes).
// So literals run for at most 32 bytes, matches are 3..264 bytes, at most 8192 bytes back.
#pragma once

#include <cstddef>
#include <string_view>

namespace shardis::core {

// Compresses `in` into out[0, out_cap). Returns the compressed size, or 0 when it does not fit in
// out_cap (Redis asks for a result at least 4 bytes shorter than the input and stores the string
// plain otherwise).
size_t LzfCompress(std::string_view in, char* out, size_t out_cap);

// Decompresses `in` into exactly out_len bytes at out. False when the stream is malformed (a run
// reaching past either buffer, a reference before the start) or does not produce exactly out_len
// bytes. Never reads or writes outside the two buffers.
bool LzfDecompress(std::string_view in, char* out, size_t out_len);

// An upper bound of what `compressed_len` bytes of LZF can expand to (a 3-byte reference gives at
// most 264 bytes): lets a reader refuse an absurd length before allocating it.
inline constexpr size_t LzfMaxExpansion(size_t compressed_len) { return compressed_len * 88 + 64; }

}  // namespace shardis::core
