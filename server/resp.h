// RESP2, the Redis wire protocol: an incremental request parser (arrays of
// bulk strings as clients send them, and inline commands as typed into
// telnet) and reply writers. https://redis.io/docs/reference/protocol-spec/
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmkv {

struct RespLimits {
  size_t max_bulk = 512ULL << 20;  // bytes of one argument
  size_t max_args = 1 << 20;       // arguments of one command
  size_t max_inline = 64 << 10;    // bytes of an inline command line
};

enum class ParseResult { kOk, kIncomplete, kError };

// Parses one command from data[0, n). kOk: *args views into data (an
// inline command's, with its quotes resolved, into *inline_store), *used
// bytes consumed. kIncomplete: nothing consumed, call again with more.
// kError: *error says why (the connection should be closed).
ParseResult ParseCommand(const char* data, size_t n, const RespLimits& lim,
                         std::vector<std::string_view>* args, size_t* used,
                         std::string* inline_store, std::string* error);

// Reply writers (append to *out).
void ReplySimple(std::string* out, std::string_view s);
void ReplyError(std::string* out, std::string_view msg);  // msg: "ERR ..."
void ReplyInt(std::string* out, int64_t v);
void ReplyBulk(std::string* out, std::string_view s);
void ReplyNull(std::string* out);
void ReplyArray(std::string* out, size_t n);

}  // namespace shmkv
