// Calls a node's key accessor, Node::Key() or Node::Key(arg), for the hash
// tables; both return std::pair<bool, Key> (bool: the node is in use).
#pragma once

namespace shmc {
namespace detail {

struct NodeKey {
  template <class N>
  auto operator()(N* node) const {
    return node->Key();
  }
};

template <class Arg>
struct NodeKeyWithArg {
  Arg& arg;
  template <class N>
  auto operator()(N* node) const {
    return node->Key(arg);
  }
};

}  // namespace detail
}  // namespace shmc
