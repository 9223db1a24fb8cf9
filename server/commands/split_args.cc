#include "server/commands/split_args.h"

namespace shmkv {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

}  // namespace

bool SplitInline(const char* p, size_t n, std::vector<std::string_view>* args,
                 std::string* store) {
  store->clear();
  store->reserve(n);
  size_t i = 0;
  for (;;) {
    while (i < n && IsSpace(p[i])) ++i;
    if (i >= n) return true;
    size_t start = store->size();
    bool dq = false, sq = false, done = false;
    while (!done) {
      if (dq) {
        if (i >= n) return false;  // unterminated quotes
        if (p[i] == '\\' && i + 3 < n && p[i + 1] == 'x' &&
            HexDigit(p[i + 2]) >= 0 && HexDigit(p[i + 3]) >= 0) {
          store->push_back(
              static_cast<char>(HexDigit(p[i + 2]) * 16 + HexDigit(p[i + 3])));
          i += 3;
        } else if (p[i] == '\\' && i + 1 < n) {
          char c = p[++i];
          switch (c) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'a': c = '\a'; break;
            default: break;
          }
          store->push_back(c);
        } else if (p[i] == '"') {
          if (i + 1 < n && !IsSpace(p[i + 1])) return false;
          done = true;
        } else {
          store->push_back(p[i]);
        }
      } else if (sq) {
        if (i >= n) return false;
        if (p[i] == '\\' && i + 1 < n && p[i + 1] == '\'') {
          ++i;
          store->push_back('\'');
        } else if (p[i] == '\'') {
          if (i + 1 < n && !IsSpace(p[i + 1])) return false;
          done = true;
        } else {
          store->push_back(p[i]);
        }
      } else if (i >= n || IsSpace(p[i])) {
        done = true;
      } else if (p[i] == '"') {
        dq = true;
      } else if (p[i] == '\'') {
        sq = true;
      } else {
        store->push_back(p[i]);
      }
      if (i < n) ++i;
    }
    args->emplace_back(store->data() + start, store->size() - start);
  }
}

}  // namespace shmkv
