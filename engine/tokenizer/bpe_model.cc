#include "engine/tokenizer/bpe_model.h"

#include <queue>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {
namespace {

struct Symbol {
  int32_t id;
  int prev;
  int next;
  bool alive;
};

struct Candidate {
  int32_t rank;
  int pos;  // index of the left symbol
  int32_t new_id;
  // Min-heap on (rank, pos): std::priority_queue pops the "largest".
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(
    const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
    BpeOptions options, bool strict) {
  auto model = absl::WrapUnique(new BpeModel());
  model->options_ = options;
  model->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ia = vocab.Find(a);
    const auto ib = vocab.Find(b);
    const auto ir = vocab.Find(absl::StrCat(a, b));
    if (!ia || !ib || !ir) {
      if (strict) {
        return absl::InvalidArgumentError(absl::StrCat("BPE merge ", rank, " ('", a, "' '", b,
                                                       "') uses a token not in the vocabulary"));
      }
      continue;
    }
    // The first (lowest) rank of a pair wins, as in a rank lookup table.
    model->merges_.try_emplace(Key(*ia, *ib), Merge{static_cast<int32_t>(rank), *ir});
  }
  return model;
}

void BpeModel::Encode(const Vocab& vocab, absl::string_view piece,
                      std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    if (auto id = vocab.Find(piece)) {
      out->push_back(*id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  auto push = [&](int32_t id) {
    const int n = static_cast<int>(symbols.size());
    symbols.push_back({id, n - 1, -1, true});
    if (n > 0) symbols[n - 1].next = n;
  };
  bool prev_unk = false;
  for (absl::string_view ch : SplitChars(piece)) {
    if (auto id = vocab.Find(ch)) {
      push(*id);
      prev_unk = false;
      continue;
    }
    if (options_.byte_fallback) {
      std::vector<int32_t> bytes;
      for (char c : ch) {
        auto b = vocab.ByteToken(static_cast<uint8_t>(c));
        if (!b) break;
        bytes.push_back(*b);
      }
      if (bytes.size() == ch.size()) {
        for (int32_t b : bytes) push(b);
        prev_unk = false;
        continue;
      }
    }
    if (options_.unk_id) {
      if (!(options_.fuse_unk && prev_unk)) push(*options_.unk_id);
      prev_unk = true;
    }
    // No byte fallback and no unk token: tokenizers drops the character; so do we.
  }

  std::priority_queue<Candidate> queue;
  auto consider = [&](int left) {
    if (left < 0) return;
    const int right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(Key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Stale entry: one side has merged since this candidate was queued.
    auto it = merges_.find(Key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) out->push_back(symbols[i].id);
}

}  // namespace tessera::tokenizer
