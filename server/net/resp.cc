#include "server/net/resp.h"

#include "server/commands/split_args.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace shmkv {

namespace {

// Finds "\r\n" from `from`; npos if not yet there.
size_t FindCrlf(const char* data, size_t n, size_t from) {
  for (size_t i = from; i + 1 < n; ++i) {
    if (data[i] == '\r' && data[i + 1] == '\n') return i;
  }
  return std::string_view::npos;
}

// Parses a decimal length ("-1" allowed when allow_neg); false if malformed.
bool ParseLen(const char* p, size_t n, bool allow_neg, int64_t* out) {
  if (n == 0 || n > 19) return false;
  bool neg = p[0] == '-';
  if (neg && (!allow_neg || n == 1)) return false;
  int64_t v = 0;
  for (size_t i = neg ? 1 : 0; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return false;
    // 19 digits can overflow; checked without a division per digit.
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, p[i] - '0', &v)) {
      return false;
    }
  }
  *out = neg ? -v : v;
  return true;
}

ParseResult ParseInline(const char* data, size_t n, const RespLimits& lim,
                        RespCursor* cur, std::vector<std::string_view>* args,
                        size_t* used, std::string* store, std::string* error) {
  size_t from = std::min(cur->pos, n);
  const void* nl = std::memchr(data + from, '\n', n - from);
  if (nl == nullptr) {
    if (n > lim.max_inline) {
      *error = "Protocol error: too big inline request";
      return ParseResult::kError;
    }
    cur->pos = n;  // no newline up to here: look only at what comes next
    return ParseResult::kIncomplete;
  }
  size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data);
  size_t line_end = end > 0 && data[end - 1] == '\r' ? end - 1 : end;
  args->clear();
  cur->Reset();
  if (!SplitInline(data, line_end, args, store)) {
    *error = "Protocol error: unbalanced quotes in request";
    return ParseResult::kError;
  }
  *used = end + 1;
  return ParseResult::kOk;
}

// The length line "<c>N\r\n" starting at data[at]: kOk with *len and *next
// (the byte after its CRLF), kIncomplete, or kError with *error.
ParseResult LengthLine(const char* data, size_t n, size_t at, bool allow_neg,
                       int64_t max, const char* what, int64_t* len,
                       size_t* next, std::string* error) {
  size_t eol = FindCrlf(data, n, at + 1);
  if (eol == std::string_view::npos) {
    if (n - at > 32) {
      *error = std::string("Protocol error: invalid ") + what + " length";
      return ParseResult::kError;
    }
    return ParseResult::kIncomplete;
  }
  if (!ParseLen(data + at + 1, eol - at - 1, allow_neg, len) || *len > max) {
    *error = std::string("Protocol error: invalid ") + what + " length";
    return ParseResult::kError;
  }
  *next = eol + 2;
  return ParseResult::kOk;
}

// Goes on with a multibulk request from where *cur stopped.
ParseResult ParseMultibulk(const char* data, size_t n, const RespLimits& lim,
                           RespCursor* cur, std::string* error) {
  if (n < cur->need) return ParseResult::kIncomplete;  // a body is arriving
  ParseResult r;
  if (cur->count < 0) {
    int64_t count = 0;
    size_t next = 0;
    r = LengthLine(data, n, 0, true, static_cast<int64_t>(lim.max_args),
                   "multibulk", &count, &next, error);
    if (r != ParseResult::kOk) return r;
    // A count of 0 or below is an empty command, which Redis skips without
    // a reply (and -1 is the cursor's "not read yet").
    cur->count = count < 0 ? 0 : count;
    cur->pos = next;
  }
  const int64_t max_bulk = static_cast<int64_t>(
      std::min<size_t>(lim.max_bulk, INT64_MAX));
  while (cur->done < cur->count) {
    size_t pos = cur->pos;
    if (pos >= n) return ParseResult::kIncomplete;
    if (data[pos] != '$') {
      *error = std::string("Protocol error: expected '$', got '") +
               (data[pos] >= 0x20 && data[pos] < 0x7f ? data[pos] : '?') + "'";
      return ParseResult::kError;
    }
    int64_t len = 0;
    size_t body = 0;
    r = LengthLine(data, n, pos, false, max_bulk, "bulk", &len, &body, error);
    if (r != ParseResult::kOk) return r;
    size_t end = body + static_cast<size_t>(len) + 2;
    if (n < end) {
      cur->need = end;
      return ParseResult::kIncomplete;
    }
    if (data[end - 2] != '\r' || data[end - 1] != '\n') {
      *error = "Protocol error: bulk string not followed by CRLF";
      return ParseResult::kError;
    }
    cur->pos = end;
    ++cur->done;
  }
  return ParseResult::kOk;
}

}  // namespace

ParseResult ParseCommand(const char* data, size_t n, const RespLimits& lim,
                         RespCursor* cur, std::vector<std::string_view>* args,
                         size_t* used, std::string* inline_store,
                         std::string* error) {
  if (n == 0) return ParseResult::kIncomplete;
  if (data[0] != '*') {
    return ParseInline(data, n, lim, cur, args, used, inline_store, error);
  }
  ParseResult r = ParseMultibulk(data, n, lim, cur, error);
  if (r == ParseResult::kIncomplete) return r;
  if (r == ParseResult::kError) {
    cur->Reset();
    return r;
  }
  // Complete and checked: one more walk over the length lines (the bodies
  // are skipped) collects the arguments.
  args->clear();
  args->reserve(static_cast<size_t>(cur->count));
  std::string unused;
  int64_t len = 0;
  size_t pos = 0;
  LengthLine(data, n, 0, true, INT64_MAX, "multibulk", &len, &pos, &unused);
  for (int64_t i = 0; i < cur->count; ++i) {
    size_t body = 0;
    LengthLine(data, n, pos, false, INT64_MAX, "bulk", &len, &body, &unused);
    args->emplace_back(data + body, static_cast<size_t>(len));
    pos = body + static_cast<size_t>(len) + 2;
  }
  *used = pos;
  cur->Reset();
  return ParseResult::kOk;
}

}  // namespace shmkv
