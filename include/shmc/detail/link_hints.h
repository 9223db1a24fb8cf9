// Read-ahead hints of ShmLinkTable chains (docs/layout/link_table.md).
//
// A value longer than one node is a chain: each node names the next, so a
// reader that follows the links waits for one memory access per node. The
// writer also gives every node a hint: the index of a later node of the
// same chain, chosen so that a reader who follows links and hints together
// learns the chain's nodes in about log2(n) rounds of parallel accesses.
//
// The chain is taken in blocks of kChainHintBlock nodes; within a block of
// m nodes, let T be the least number with 2^T - 1 >= m. The block is laid
// out as a tree of runs: the run that starts a block is T nodes long and is
// followed by the runs its nodes start, in order; a run whose first node
// is reached at round s is T - s nodes long, and its node at step j
// (reached at round s + j) hints at the first node of a run reached at
// round s + j + 1. So the nodes reached at round r double each round.
//
// Hints are never trusted: a reader only requests cache lines with them,
// then follows and checks the links as before. A hint of 0 names nothing;
// nodes written before hints existed hold 0.
#pragma once

#include <cstdint>

namespace shmc {
namespace detail {

constexpr uint32_t kChainHintBlock = 128;

struct ChainHintTable {
  // to[m][p]: the position (within a block of m nodes) that node p's hint
  // names, or 0 (position 0 starts the block and is never hinted at).
  uint8_t to[kChainHintBlock + 1][kChainHintBlock];

  ChainHintTable() : to{} {
    for (uint32_t m = 1; m <= kChainHintBlock; ++m) {
      uint32_t rounds = 0;
      while ((1u << rounds) - 1 < m) ++rounds;
      Lay(to[m], m, rounds, 0, 0);
    }
  }

 private:
  // Lays out the run that starts at `start`, reached at round `s`, and
  // the runs it starts (each of 2^(rounds - round) - 1 nodes).
  static void Lay(uint8_t* hint, uint32_t m, uint32_t rounds, uint32_t start,
                  uint32_t s) {
    uint32_t run = rounds - s;
    uint32_t child = start + run;
    for (uint32_t j = 0; j < run && start + j < m; ++j) {
      uint32_t round = s + j + 1;
      if (round >= rounds || child >= m) continue;
      hint[start + j] = static_cast<uint8_t>(child);
      Lay(hint, m, rounds, child, round);
      child += (1u << (rounds - round)) - 1;
    }
  }
};

inline const ChainHintTable& ChainHints() {
  static const ChainHintTable table;
  return table;
}

}  // namespace detail
}  // namespace shmc
