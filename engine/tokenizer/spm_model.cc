#include "engine/tokenizer/spm_model.h"

#include <queue>
#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {
namespace {

struct Symbol {
  size_t begin;  // byte range in the piece
  size_t size;   // 0 once merged into its left neighbour
  int prev;
  int next;
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
  // Max-heap on score, leftmost first on ties (llama.cpp's llm_bigram_spm::comparator).
  bool operator<(const Bigram& o) const {
    return score < o.score || (score == o.score && left > o.left);
  }
};

class Session {
 public:
  Session(const Vocab& vocab, absl::string_view piece, std::optional<int32_t> unk_id)
      : vocab_(vocab), piece_(piece), unk_id_(unk_id) {}

  void Run(std::vector<int32_t>* out) {
    for (absl::string_view ch : SplitChars(piece_)) {
      const int n = static_cast<int>(symbols_.size());
      symbols_.push_back({static_cast<size_t>(ch.data() - piece_.data()), ch.size(), n - 1, -1});
      if (n > 0) symbols_[n - 1].next = n;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);
    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      // Skip if either side has merged since the bigram was queued.
      if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      TryAddBigram(left.prev, bigram.left);
      TryAddBigram(bigram.left, left.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      Resegment(symbols_[i], out);
    }
  }

 private:
  absl::string_view Text(const Symbol& s) const { return piece_.substr(s.begin, s.size); }

  void TryAddBigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const absl::string_view text =
        piece_.substr(symbols_[left].begin, symbols_[left].size + symbols_[right].size);
    const auto id = vocab_.Find(text);
    if (!id) return;
    queue_.push({left, right, vocab_.Score(*id), text.size()});
  }

  void Resegment(const Symbol& symbol, std::vector<int32_t>* out) const {
    const absl::string_view text = Text(symbol);
    if (auto id = vocab_.Find(text)) {
      out->push_back(*id);
      return;
    }
    // Only vocabulary texts are ever merged, so a symbol that is not a token is a single
    // character outside the vocabulary (llama.cpp's rev_merge lookup never succeeds here):
    // spell it as byte tokens, else as one-byte tokens, else unknown.
    for (size_t i = 0; i < text.size(); ++i) {
      if (auto b = vocab_.ByteToken(static_cast<uint8_t>(text[i]))) {
        out->push_back(*b);
      } else if (auto single = vocab_.Find(text.substr(i, 1))) {
        out->push_back(*single);
      } else if (unk_id_) {
        out->push_back(*unk_id_);
      }
    }
  }

  const Vocab& vocab_;
  absl::string_view piece_;
  std::optional<int32_t> unk_id_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram> queue_;
};

}  // namespace

void SpmModel::Encode(const Vocab& vocab, absl::string_view piece,
                      std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  Session(vocab, piece, unk_id_).Run(out);
}

}  // namespace tessera::tokenizer
