// How a command answers: the RESP2 writers, and Reply, the builder every
// handler writes through. Handlers never format protocol bytes themselves,
// so a second protocol version (RESP3's maps, doubles and nulls) changes
// this file, not the handlers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shmkv {

// RESP2 writers: append one reply element to *out.
void ReplySimple(std::string* out, std::string_view s);
void ReplyError(std::string* out, std::string_view msg);  // msg: "ERR ..."
void ReplyInt(std::string* out, int64_t v);
void ReplyBulk(std::string* out, std::string_view s);
void ReplyNull(std::string* out);
void ReplyArray(std::string* out, size_t n);

// One command's reply, appended to the connection's output.
class Reply {
 public:
  explicit Reply(std::string* out) : out_(out) {}
  // A reply nested in `outer`'s (each command EXEC runs): same output,
  // its own error flag.
  explicit Reply(Reply* outer) : out_(outer->out_) {}

  void Simple(std::string_view s) { ReplySimple(out_, s); }
  void Int(int64_t v) { ReplyInt(out_, v); }
  void Bulk(std::string_view s) { ReplyBulk(out_, s); }
  void Null() { ReplyNull(out_); }                     // a missing value
  void NullArray() { out_->append("*-1\r\n", 5); }     // EXEC's "aborted"
  void Array(size_t n) { ReplyArray(out_, n); }
  // An error reply ("ERR ...", "WRONGTYPE ..."): the command failed.
  void Error(std::string_view msg) {
    ReplyError(out_, msg);
    error_ = true;
  }
  // Bytes already in RESP form (a nested reply built elsewhere).
  void Raw(std::string_view bytes) { out_->append(bytes.data(), bytes.size()); }

  // Whether the command answered an error (the statistics' errors count;
  // a write command's transaction is not committed).
  bool error() const { return error_; }
  // A position to go back to: a reply begun and then replaced whole (a
  // commit that failed after its replies were written).
  size_t Mark() const { return out_->size(); }
  void Rewind(size_t mark) { out_->resize(mark); }
  // Rewinds a reply that is begun again from scratch (its view of the
  // data changed under it): what it wrote, error included, is forgotten.
  void Retry(size_t mark) {
    out_->resize(mark);
    error_ = false;
  }

 private:
  std::string* out_;
  bool error_ = false;
};

}  // namespace shmkv
