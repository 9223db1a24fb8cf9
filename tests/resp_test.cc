// The RESP request parser on its own: a request cut into pieces at any
// byte parses as it does in one read, and a long request sent in pieces is
// resumed where the last piece stopped, not parsed again from its start.
#include "server/net/resp.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using shmkv::ParseCommand;
using shmkv::ParseResult;
using shmkv::RespCursor;
using shmkv::RespLimits;

struct Parsed {
  ParseResult result = ParseResult::kIncomplete;
  std::vector<std::string> args;
  size_t used = 0;
  std::string error;
};

Parsed Parse(std::string_view data, RespCursor* cur,
             const RespLimits& lim = RespLimits()) {
  Parsed p;
  std::vector<std::string_view> views;
  std::string store;
  p.result = ParseCommand(data.data(), data.size(), lim, cur, &views, &p.used,
                          &store, &p.error);
  for (std::string_view v : views) p.args.emplace_back(v);
  return p;
}

std::string Encode(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) {
    s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  return s;
}

TEST(Resp, EveryCutParsesAsOneRead) {
  const std::string binary("a\0b\r\nc", 6);
  const std::vector<std::string> requests = {
      Encode({"SET", "key", binary}),
      Encode({"GET", ""}),
      Encode({"MSET", "k1", std::string(300, 'v'), "k2", "w"}),
      "*0\r\n",
      "SET k \"a b\" 'c\\'d'\r\n",
      "PING\n",
  };
  for (const std::string& req : requests) {
    RespCursor whole;
    Parsed want = Parse(req, &whole);
    ASSERT_EQ(want.result, ParseResult::kOk) << req << want.error;
    ASSERT_EQ(want.used, req.size());
    for (size_t cut = 1; cut < req.size(); ++cut) {
      RespCursor cur;
      // Every prefix up to the cut, one byte more each time, as a socket
      // that delivers a byte per read would.
      for (size_t k = 1; k <= cut; ++k) {
        Parsed part = Parse(std::string_view(req).substr(0, k), &cur);
        ASSERT_EQ(part.result, ParseResult::kIncomplete) << req << " at " << k;
      }
      Parsed rest = Parse(req, &cur);
      ASSERT_EQ(rest.result, ParseResult::kOk) << req << " cut " << cut;
      EXPECT_EQ(rest.args, want.args) << req << " cut " << cut;
      EXPECT_EQ(rest.used, req.size());
      EXPECT_EQ(cur.count, -1) << "the cursor is reset for the next request";
      EXPECT_EQ(cur.pos, 0u);
    }
  }
}

TEST(Resp, PipelinedRequestsAfterAResumedOne) {
  std::string a = Encode({"SET", "k", std::string(1000, 'x')});
  std::string b = Encode({"GET", "k"});
  std::string all = a + b;
  RespCursor cur;
  EXPECT_EQ(Parse(std::string_view(all).substr(0, 500), &cur).result,
            ParseResult::kIncomplete);
  Parsed first = Parse(all, &cur);
  ASSERT_EQ(first.result, ParseResult::kOk);
  EXPECT_EQ(first.used, a.size());
  Parsed second = Parse(std::string_view(all).substr(first.used), &cur);
  ASSERT_EQ(second.result, ParseResult::kOk);
  EXPECT_EQ(second.args, (std::vector<std::string>{"GET", "k"}));
}

// A million arguments in 8 KiB pieces, as a slow client sends them: after
// each piece the cursor stands at the end of the last whole argument, and
// the next call starts there: the first argument, already parsed, is
// spoiled before each call, so a parser that went back to the start would
// stop at it with a protocol error.
TEST(Resp, MillionArgumentsInPiecesResumeWhereTheyStopped) {
  constexpr size_t kArgs = 1000000;
  std::string req = "*" + std::to_string(kArgs) + "\r\n";
  const std::string arg = "$1\r\nx\r\n";
  const size_t header = req.size();
  req.reserve(header + kArgs * arg.size());
  for (size_t i = 0; i < kArgs; ++i) req += arg;
  RespCursor cur;
  size_t fed = 0;
  Parsed p;
  while (fed < req.size()) {
    fed = std::min(req.size(), fed + 8192);
    if (fed == req.size()) {
      p = Parse(req, &cur);
      break;
    }
    bool first_done = cur.done > 0;
    if (first_done) req[header] = '?';
    p = Parse(std::string_view(req).substr(0, fed), &cur);
    req[header] = '$';
    ASSERT_EQ(p.result, ParseResult::kIncomplete);
    size_t whole = (fed - header) / arg.size();
    ASSERT_EQ(static_cast<size_t>(cur.done), whole) << fed;
    ASSERT_EQ(cur.pos, header + whole * arg.size()) << fed;
  }
  ASSERT_EQ(p.result, ParseResult::kOk);
  ASSERT_EQ(p.args.size(), kArgs);
  EXPECT_EQ(p.args.front(), "x");
  EXPECT_EQ(p.used, req.size());
}

// A large value announced and arriving slowly: the cursor remembers how
// many bytes the request needs, so a read that brings fewer is answered
// at once.
TEST(Resp, AnnouncedBodyIsWaitedFor) {
  std::string head = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n";
  std::string req = head + std::string(1000000, 'v') + "\r\n";
  RespCursor cur;
  EXPECT_EQ(Parse(std::string_view(req).substr(0, head.size() + 10), &cur).result,
            ParseResult::kIncomplete);
  EXPECT_EQ(cur.need, req.size());
  EXPECT_EQ(cur.done, 2);
  Parsed p = Parse(req, &cur);
  ASSERT_EQ(p.result, ParseResult::kOk);
  EXPECT_EQ(p.args[2].size(), 1000000u);
}

TEST(Resp, ErrorsAreFoundInPiecesToo) {
  struct Case {
    std::string req, error;
  };
  const std::vector<Case> cases = {
      {"*2\r\n$x\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n:5\r\n", "Protocol error: expected '$', got ':'"},
      {"*-5x\r\n", "Protocol error: invalid multibulk length"},
      {"*1\r\n$3\r\nabcXY", "Protocol error: bulk string not followed by CRLF"},
      {"*9999999999999999999\r\n", "Protocol error: invalid multibulk length"},
      {"*2\r\n$1\r\nx\r\n$99999999999\r\n", "Protocol error: invalid bulk length"},
      {"SET k \"a\r\n", "Protocol error: unbalanced quotes in request"},
  };
  RespLimits lim;
  lim.max_bulk = 1 << 20;
  for (const Case& c : cases) {
    RespCursor cur;
    Parsed p;
    for (size_t k = 1; k <= c.req.size(); ++k) {
      p = Parse(std::string_view(c.req).substr(0, k), &cur, lim);
      if (p.result != ParseResult::kIncomplete) break;
    }
    EXPECT_EQ(p.result, ParseResult::kError) << c.req;
    EXPECT_EQ(p.error, c.error) << c.req;
  }
}

// A length one past INT64_MAX is refused even with no bound on bulks: the
// digits' overflow is caught, not wrapped into a negative length.
TEST(Resp, LengthsPastInt64AreRefused) {
  RespLimits lim;
  lim.max_bulk = SIZE_MAX;
  RespCursor cur;
  Parsed p = Parse("*1\r\n$9223372036854775808\r\n", &cur, lim);
  EXPECT_EQ(p.result, ParseResult::kError);
  EXPECT_EQ(p.error, "Protocol error: invalid bulk length");
  RespCursor cur2;
  EXPECT_EQ(Parse("*1\r\n$9223372036854775807\r\n", &cur2, lim).result,
            ParseResult::kIncomplete);
  RespCursor cur3;
  EXPECT_EQ(Parse("*1\r\n$99999999999999999990\r\n", &cur3, lim).result,
            ParseResult::kError);
}

// A multibulk count of 0 or below is an empty command, consumed whole: a
// negative count once became the cursor's "not read yet" (-1), and the
// arguments' reserve(size_t(-1)) threw and killed the worker.
TEST(Resp, CountsOfZeroOrBelowAreEmptyCommands) {
  for (std::string head : {"*0\r\n", "*-1\r\n", "*-5\r\n"}) {
    std::string req = head + "*1\r\n$4\r\nPING\r\n";
    RespCursor cur;
    Parsed p = Parse(req, &cur);
    ASSERT_EQ(p.result, ParseResult::kOk) << head;
    EXPECT_TRUE(p.args.empty()) << head;
    EXPECT_EQ(p.used, head.size()) << head;
    RespCursor next;
    p = Parse(std::string_view(req).substr(head.size()), &next);
    ASSERT_EQ(p.result, ParseResult::kOk);
    ASSERT_EQ(p.args.size(), 1u);
    EXPECT_EQ(p.args[0], "PING");
  }
}

// Length lines are read in one pass: what may follow the digits is only
// their CRLF; a sign only where a count may be negative; at most 19
// characters, sign included; lengths split anywhere still parse.
TEST(Resp, LengthLinesAcceptOnlyDigitsThenCrlf) {
  RespLimits lim;
  lim.max_bulk = 1 << 20;
  const std::vector<std::string> bad = {
      "*1\r\n$\r\n", "*1\r\n$-1\r\n", "*1\r\n$1x\r\n", "*1\r\n$1\r\r\n",
      "*-\r\n", "*-1000000000000000000\r\n", "*1\r\n$ 1\r\n"};
  for (const std::string& req : bad) {
    RespCursor cur;
    EXPECT_EQ(Parse(req, &cur, lim).result, ParseResult::kError) << req;
  }
  RespCursor cur;
  EXPECT_EQ(Parse("*-100000000000000000\r\n", &cur, lim).result,
            ParseResult::kOk) << "18 digits and a sign: an empty command";
  const std::string req = "*2\r\n$3\r\nGET\r\n$0010\r\n0123456789\r\n";
  for (size_t cut = 0; cut <= req.size(); ++cut) {
    RespCursor c2;
    Parsed p = Parse(std::string_view(req).substr(0, cut), &c2, lim);
    if (cut < req.size()) {
      EXPECT_EQ(p.result, ParseResult::kIncomplete) << cut;
      continue;
    }
    ASSERT_EQ(p.result, ParseResult::kOk);
    ASSERT_EQ(p.args.size(), 2u);
    EXPECT_EQ(p.args[1], "0123456789");
  }
}

}  // namespace
