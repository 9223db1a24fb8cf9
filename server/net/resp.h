// RESP2, the Redis wire protocol: an incremental request parser (arrays of
// bulk strings as clients send them, and inline commands as typed into
// telnet). The reply writers belong to the command layer
// (server/commands/reply.h). https://redis.io/docs/reference/protocol-spec/
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

// How far the parse of an unfinished command got, so that the next call,
// with more bytes, goes on from there instead of from the command's first
// byte: a command sent in many pieces costs one pass over its bytes. It is
// a few numbers (the arguments' positions are found again, once, when the
// command is complete), so an idle partial request holds no parser memory.
struct RespCursor {
  int64_t count = -1;  // arguments the header announced; -1: not read yet
  int64_t done = 0;    // arguments complete so far
  size_t pos = 0;      // bytes examined: the next argument starts here
  size_t need = 0;     // bytes the request needs before anything can move
  void Reset() { *this = RespCursor(); }
};

// Parses one command from data[0, n), going on from *cur (which must
// describe the same first bytes; reset it when they are consumed).
// kOk: *args views into data (an inline command's, with its quotes
// resolved, into *inline_store), *used bytes consumed, *cur reset.
// kIncomplete: nothing consumed, call again with more bytes.
// kError: *error says why (the connection should be closed).
ParseResult ParseCommand(const char* data, size_t n, const RespLimits& lim,
                         RespCursor* cur, std::vector<std::string_view>* args,
                         size_t* used, std::string* inline_store,
                         std::string* error);

}  // namespace shmkv
