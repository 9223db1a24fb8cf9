#include "server/http.h"

#include <cctype>
#include <cstring>
#include <string_view>

namespace shmkv {

namespace {

constexpr size_t kMaxHead = 16 << 10;

void Respond(std::string* out, int code, const char* reason,
             std::string_view body, bool close,
             const char* type = "text/plain") {
  *out += "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\n";
  *out += std::string("Content-Type: ") + type + "\r\n";
  *out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (close) *out += "Connection: close\r\n";
  *out += "\r\n";
  out->append(body.data(), body.size());
}

bool IEq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // needs two hex digits
    int hi = Hex(in[i + 1]), lo = Hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

HttpResult HandleHttp(const char* data, size_t n, size_t max_body,
                      CommandContext* ctx, std::string* out, size_t* used) {
  std::string_view in(data, n);
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (n > kMaxHead) {
      Respond(out, 431, "Request Header Fields Too Large", "headers too large\n", true);
      return HttpResult::kClose;
    }
    return HttpResult::kIncomplete;
  }
  if (head_end > kMaxHead) {  // the limit holds however the head arrived
    Respond(out, 431, "Request Header Fields Too Large", "headers too large\n", true);
    return HttpResult::kClose;
  }
  std::string_view head = in.substr(0, head_end);
  size_t le = head.find("\r\n");
  std::string_view reqline = head.substr(0, le);
  size_t sp1 = reqline.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : reqline.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      reqline.substr(sp2 + 1, 7) != "HTTP/1.") {
    Respond(out, 400, "Bad Request", "malformed request line\n", true);
    return HttpResult::kClose;
  }
  std::string_view method = reqline.substr(0, sp1);
  std::string target(reqline.substr(sp1 + 1, sp2 - sp1 - 1));
  bool http10 = reqline.substr(sp2 + 1) == "HTTP/1.0";
  bool close = http10;
  size_t content_length = 0;
  bool have_length = false;
  std::string_view authorization;
  size_t pos = le == std::string_view::npos ? head.size() : le + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      Respond(out, 400, "Bad Request", "malformed header\n", true);
      return HttpResult::kClose;
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (IEq(name, "content-length")) {
      size_t v = 0;
      if (value.empty() || value.size() > 12) {
        Respond(out, 400, "Bad Request", "bad Content-Length\n", true);
        return HttpResult::kClose;
      }
      for (char c : value) {
        if (c < '0' || c > '9') {
          Respond(out, 400, "Bad Request", "bad Content-Length\n", true);
          return HttpResult::kClose;
        }
        v = v * 10 + static_cast<size_t>(c - '0');
      }
      if (have_length && v != content_length) {
        // Two lengths that disagree: whichever a proxy believed, the other
        // reading would smuggle a request (RFC 9112, 6.3).
        Respond(out, 400, "Bad Request", "conflicting Content-Length\n",
                true);
        return HttpResult::kClose;
      }
      content_length = v;
      have_length = true;
    } else if (IEq(name, "transfer-encoding")) {
      Respond(out, 501, "Not Implemented", "chunked bodies are not supported; send Content-Length\n", true);
      return HttpResult::kClose;
    } else if (IEq(name, "authorization")) {
      authorization = value;
    } else if (IEq(name, "connection")) {
      if (IEq(value, "close")) close = true;
      if (IEq(value, "keep-alive")) close = false;
    }
  }
  if (content_length > max_body) {
    Respond(out, 413, "Payload Too Large", "value too large\n", true);
    return HttpResult::kClose;
  }
  size_t body_start = head_end + 4;
  if (n < body_start + content_length) return HttpResult::kIncomplete;
  std::string_view body = in.substr(body_start, content_length);
  *used = body_start + content_length;
  ++ctx->http_requests;
  if (ctx->password != nullptr && !ctx->password->empty() &&
      authorization != "Bearer " + *ctx->password) {
    Respond(out, 401, "Unauthorized",
            "send Authorization: Bearer <requirepass>\n", close);
    return close ? HttpResult::kClose : HttpResult::kDone;
  }

  if (target == "/stats" && method == "GET") {
    Respond(out, 200, "OK", StatsJson(ctx) + "\n", close, "application/json");
  } else if (target.compare(0, 4, "/kv/") == 0 && target.size() > 4) {
    std::string key;
    if (!PercentDecode(target.substr(4), &key)) {
      Respond(out, 400, "Bad Request", "malformed %-escape in key\n", true);
      return HttpResult::kClose;
    }
    if (method == "GET") {
      std::string_view v;
      if (ctx->store->GetView(key, &v)) {
        Respond(out, 200, "OK", v, close, "application/octet-stream");
      } else {
        Respond(out, 404, "Not Found", "no such key\n", close);
      }
    } else if (method == "PUT" || method == "POST") {
      if (!have_length) {
        Respond(out, 411, "Length Required", "Content-Length required\n", true);
        return HttpResult::kClose;
      }
      Store::Status st = ctx->store->Set(key, body, 0, Store::SetMode::kAlways, false);
      if (st == Store::Status::kOk) {
        Respond(out, 204, "No Content", "", close);
      } else if (st == Store::Status::kTooLarge) {
        Respond(out, 413, "Payload Too Large", std::string(StatusText(st)) + "\n", close);
      } else {
        Respond(out, 507, "Insufficient Storage", std::string(StatusText(st)) + "\n", close);
      }
    } else if (method == "DELETE") {
      if (ctx->store->Del(key)) {
        Respond(out, 204, "No Content", "", close);
      } else {
        Respond(out, 404, "Not Found", "no such key\n", close);
      }
    } else {
      Respond(out, 405, "Method Not Allowed", "GET, PUT or DELETE\n", close);
    }
  } else {
    Respond(out, 404, "Not Found", "try /kv/<key> or /stats\n", close);
  }
  return close ? HttpResult::kClose : HttpResult::kDone;
}

}  // namespace shmkv
