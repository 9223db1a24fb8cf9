// How a command answers: the RESP2 writers, and Reply, the builder every
// handler writes through. Handlers never format protocol bytes themselves:
// they say what a reply is (a map, a set, a double, a null), and Reply
// writes it in the connection's protocol, RESP2 or RESP3 (HELLO 3).
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

// A double as Redis writes it (%.17g; "inf", "-inf").
std::string DoubleReplyText(double d);

// One command's reply, appended to the connection's output.
class Reply {
 public:
  explicit Reply(std::string* out) : out_(out) {}
  // A reply nested in `outer`'s (each command EXEC runs): same output,
  // its own error flag.
  explicit Reply(Reply* outer) : out_(outer->out_), resp3_(outer->resp3_) {}
  // A reply in `like`'s protocol written to another buffer (an array
  // whose length is known only at its end).
  Reply(const Reply* like, std::string* out)
      : out_(out), resp3_(like->resp3_) {}

  // The protocol the connection speaks (2 or 3; HELLO sets it).
  void SetProtocol(int version) { resp3_ = version == 3; }
  bool resp3() const { return resp3_; }

  void Simple(std::string_view s) { ReplySimple(out_, s); }
  void Int(int64_t v) { ReplyInt(out_, v); }
  void Bulk(std::string_view s) { ReplyBulk(out_, s); }
  // A missing value ($-1), and a missing array (*-1: EXEC's "aborted", a
  // blocking pop's timeout); RESP3 has one null for both.
  void Null() { resp3_ ? Raw("_\r\n") : ReplyNull(out_); }
  void NullArray() { resp3_ ? Raw("_\r\n") : Raw("*-1\r\n"); }
  void Array(size_t n) { ReplyArray(out_, n); }
  // n field/value pairs (RESP2: an array of 2n).
  void Map(size_t n);
  // n distinct elements (RESP2: an array).
  void Set(size_t n);
  // An out-of-band message (pub/sub; RESP2: an array).
  void Push(size_t n);
  // RESP2: the bulk text.
  void Double(double d);
  // RESP2: 1 or 0 (Lua's true and false converted).
  void Bool(bool b);
  // Text for people (INFO, CLIENT LIST) in a three-letter format;
  // RESP2: a bulk string.
  void Verbatim(std::string_view text, std::string_view format = "txt");
  // A big number's digits; RESP2: a bulk string.
  void BigNumber(std::string_view digits);
  // n element/score (or field/value) pairs: flat in RESP2, each a
  // two-element array in RESP3 (ZRANGE WITHSCORES, HRANDFIELD
  // WITHVALUES): Pairs(n), then Pair() before each pair.
  void Pairs(size_t n) { Array(resp3_ ? n : 2 * n); }
  void Pair() {
    if (resp3_) Array(2);
  }
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
  bool resp3_ = false;
  bool error_ = false;
};

}  // namespace shmkv
